"""The chat workflow as a LangGraph StateGraph.

    load_history -> input_guardrail -> build_query -> retrieve -> guardrail_check
        -> summarize_query -> generate | qualify | refuse | out_of_scope -> save_history -> END
    input_guardrail short-cuts (no retrieval): smalltalk_meta | emergency | out_of_scope | refuse
    guardrail_check with no evidence and a non-rewrite query: rewrite once -> retrieve
    (any failing step) -> handle_error -> END

Every node is a module-level function of the state and, when it needs them, of `ChatDeps` (the
history store, retrieval, the knowledge cache, the optional LLM writer and rewriter, the scope
classifier, the glossary cache), bound into the graph with functools.partial: no closures.
generate and qualify are chat.respond's: without an LLM the answer is extractive (chat.answer);
with Gemini configured, chat.llm writes it from the same selected recommendations and its quotes
are validated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from chat import answer as compose
from chat.clinical import ClinicalState
from chat.definitions import asked_term
from chat.grading import FLOOR, grade
from chat.guardrails import (
    asks_other_guideline,
    classify_input,
    described_patient,
    is_self_harm,
    post_retrieval_out_of_scope,
    rule_scope,
)
from chat.history import HistoryStore, HistoryUnavailable, SessionMeta, now_rfc3339
from chat.knowledge import Knowledge, KnowledgeCache, rec_from_pb
from chat.llm import REWRITE_HISTORY_TURNS, AnswerWriter, QueryRewriter
from chat.mixed import split_request
from chat.premise import asserts_guideline, is_injection, named_tests
from chat.process_topics import answering
from chat.query import PROCESS_SECTIONS, asks_about_process, build, is_follow_up, rewrite_from_state
from chat.redaction import RedactorUnavailable, redact
from chat.respond import generate, qualify
from chat.scope import CONTEXT_THRESHOLD, ScopeClassifier
from chat.selection import ASKED_WITH_MET, SCORE_MARGIN, age_ok
from chat.state import ChatDeps, ChatState, redacted_text
from chat.topic import next_topic
from ng12_common.citations import guideline_ref
from ng12_common.logs import get_logger
from ng12_common.models import ChatQuery, ChatRequest, ChatResponse, ChatTurn, Citation, GuidelineRef
from ng12_common.retrieval_client import RetrievalClient, RetrievalError, RetrievalUnavailable
from ng12_common.workflow import routed, unless_error

log = get_logger("chat.graph")
#: The 503 `retrieval_unavailable` answer when retrieval is down or past its deadline: chat answers
#: only from guideline text it has just found, so without a search it answers nothing.
SEARCH_UNAVAILABLE = "Chat cannot search the NG12 guideline right now, so it cannot answer. "
SEARCH_K = 10  # hits fetched per search; the answer keeps at most request.top_k recommendations
#: A process question's recommendations (1.14-1.16) are treated as the answer's other candidates
#: and a named test's recommendations are (chat.selection): they come first when the best of them
#: scores within SCORE_MARGIN of the best hit for the message as typed (as relevant as anything an
#: answer keeps), those within SCORE_MARGIN of that best lead, and when the question also names a
#: symptom, site or test at most ASKED_WITH_MET of them lead, so what the patient meets follows.
#: Searched for a process question: the process sections and 1.13 (non-site-specific symptoms,
#: whose 1.13.1 is on the parents' and carers' concern).
PROCESS_SEARCHED = (*PROCESS_SECTIONS, "1.13")
PROCESS_PREFIXES = tuple(f"{section}." for section in PROCESS_SEARCHED)
#: The wording overlap (`Knowledge.overlap`, rarity-weighted shared stems) at which a process
#: recommendation search did not return joins a process question's answer (and it must beat every
#: one search returned by a clear margin); on the development questions the wording an answer names
#: scores 7-11, the others found at most about 6.
WORDING_LEADS = 7.0
NEAREST_MIN_SCORE = 0.38  # a refusal offers NG12's nearest recommendation only above this (grading's weak)


def _with_written_out(turn: ClinicalState, text: str, normalized: str, knowledge: Knowledge) -> ClinicalState:
    """The symptoms and sites of the message as retrieval's normaliser wrote its GP shorthand out
    ("LN + fevers" -> "lymph node + fevers"), added to what the message as typed names. Only when
    the normaliser changed the text in place (appended lexicon wording the matcher finds anyway)."""
    if normalized.startswith(" ".join(text.lower().split())):
        return turn
    extra = knowledge.read(normalized)
    symptoms = [*turn.symptoms, *(c for c in extra.symptoms if c not in turn.symptoms)]
    sites = [*turn.cancer_sites, *(c for c in extra.cancer_sites if c not in turn.cancer_sites)]
    if symptoms == turn.symptoms and sites == turn.cancer_sites:
        return turn
    modifiers = {**extra.modifiers, **turn.modifiers}
    return turn.model_copy(update={"symptoms": symptoms, "cancer_sites": sites, "modifiers": modifiers})


def _process_first(text: str, on_process: list[Any], knowledge: Knowledge | None, top: float) -> list[str]:
    """A process question's recommendations, in the order they answer it: search's first, and
    those within SCORE_MARGIN of the best score; ordered by the question's wording they share
    (weighted by rarity in NG12), then search's order. Near-equal scores within 1.14 ("what
    information should I give ...?") are told apart by the words: 1.14.5's "information given to
    people ... referred to"."""
    pool = [h for i, h in enumerate(on_process) if i == 0 or h.score >= top - SCORE_MARGIN]
    ids = list(dict.fromkeys(h.canonical[0].id for h in pool))
    if knowledge is None:
        return ids
    shared = {
        rid: knowledge.overlap(text, knowledge.recs[rid]) if rid in knowledge.recs else 0.0 for rid in ids
    }
    # a process recommendation that shares more of the question's rare words than any search found
    # ("ringing the specialist" when unsure: 1.16.2's "uncertainty ... telephone") joins them: these
    # sections are short and alike, and the embedding can miss the one the wording names
    best = max(shared.values(), default=0.0)
    for rid, rec in knowledge.recs.items():
        if rid not in shared and rid.startswith(PROCESS_PREFIXES):
            found = knowledge.overlap(text, rec)
            if found >= max(WORDING_LEADS, best + 1.0):
                shared[rid] = found
                ids.append(rid)
    order = {rid: i for i, rid in enumerate(ids)}
    return sorted(ids, key=lambda rid: (-round(shared[rid], 1), order[rid]))


async def load_history(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """The session's meta (and newest turns, for the LLM rewrite); the message redacted once."""
    sid = state["request"].session_id
    try:
        if deps.rewriter is not None:  # the LLM rewrite reads the newest turns
            recent, meta = await deps.history.load(sid, REWRITE_HISTORY_TURNS)
            count = len(recent)
        else:
            recent, (count, meta) = [], await deps.history.load_meta(sid)
        redacted = await redact(state["request"].message)
    except (HistoryUnavailable, RedactorUnavailable) as exc:
        return {"error": exc}
    return {"history": recent, "has_history": count > 0, "meta": meta, "redacted_message": redacted}


async def rewrite(state: ChatState, deps: ChatDeps, fallback_state: ClinicalState) -> ChatQuery:
    """Tier B: the LLM's validated rewrite when one is configured, else from clinical state."""
    message = " ".join(state["text"].split())
    # the model is a cloud service: it sees the message without personal data, as history stores it
    text = None
    if deps.rewriter is not None:
        text = await deps.rewriter.rewrite(await redacted_text(state, message), state["history"])
    return ChatQuery(strategy="rewrite", text=text or rewrite_from_state(message, fallback_state))


def _clinical(deps: ChatDeps, text: str) -> bool:
    """The text names a symptom or cancer site (by the knowledge loaded last)."""
    known = deps.knowledge_cache.current
    return known is not None and known.read(text).names_clinical_terms


def _about_conversation(message: str) -> bool:
    """A message in a conversation that is about it, not classified: a follow-up, or a question
    about the referral process for the patient discussed ("what do I tell the parents?"), which
    NG12's sections on information, support and safety netting answer (1.14-1.16; the scope rules
    above still decline a document, logistics or treatment asked this way)."""
    return is_follow_up(message) or asks_about_process(message)


async def input_guardrail(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """Rules first (injection, emergency, smalltalk, meta, requests a pattern names without
    doubt, mixed requests), then the scope classifier for a new question."""
    message = state["request"].message
    update: dict[str, Any] = {
        "citations": [],
        "query": ChatQuery(strategy="none", text=""),
        "text": message,
        "declined": [],
        "scope_kind": None,
    }
    if is_injection(message):
        return update | {"kind": "injection"}
    kind: str = classify_input(message)
    if kind in ("medical_out_of_scope", "proceed"):
        classify = deps.scope.classify if deps.scope is not None else None
        mixed = await split_request(message, classify, partial(_clinical, deps))
        if mixed is not None:  # answer the in-scope part, decline the rest by name
            return update | {"kind": "proceed", "text": mixed.text, "declined": mixed.declined}
    if kind == "medical_out_of_scope":
        return update | {"kind": kind, "scope_kind": rule_scope(message)}
    if kind != "proceed" or (state["has_history"] and _about_conversation(message)):
        return update | {"kind": kind, "in_scope": kind == "proceed"}  # a follow-up: the conversation's
    decision = await deps.scope.classify(message) if deps.scope is not None else None
    if decision is None or decision.in_scope:
        return update | {"kind": kind, "in_scope": decision is not None}
    if decision.in_scope_probability >= CONTEXT_THRESHOLD and state["has_history"]:
        # a conversation's next question is refused only when the classifier is sure
        return update | {"kind": kind, "in_scope": True}
    known = deps.knowledge_cache.current
    turn = known.read(message) if known is not None else ClinicalState()
    if decision.kind == "non_medical" and turn.names_clinical_terms:
        return update | {"kind": kind, "turn_state": turn}  # a symptom or cancer site is not non-medical
    return update | {"kind": "medical_out_of_scope", "scope_kind": decision.kind, "turn_state": turn}


def after_input(state: Mapping[str, Any]) -> str:
    """input_guardrail's successor: the node for the input's kind (handle_error on an error)."""
    if state.get("error"):
        return "handle_error"
    return {
        "proceed": "build_query",
        "smalltalk": "smalltalk_meta",
        "meta": "smalltalk_meta",
        "emergency": "emergency",
        "medical_out_of_scope": "out_of_scope",
        "injection": "refuse",
    }[str(state["kind"])]


async def build_query(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """The search query: the message as typed; a follow-up's with its topic, else rewritten (tier B)."""
    meta = state["meta"]
    known = deps.knowledge_cache.current
    text = state["text"]
    # a claim about NG12 that names nothing of its own ("hmm, I thought you needed 5 or more to
    # 2ww?") is about the conversation's patient: a follow-up
    follows = (
        state["has_history"]
        and known is not None
        and asserts_guideline(text)
        and known.read(text).is_empty()
        and not named_tests(text)
    )
    query = build(text, state["has_history"], meta.topic, meta.state, follows=follows)
    if query.strategy == "rewrite":
        query = await rewrite(state, deps, meta.state)
    return {"query": query, "rewritten": query.strategy == "rewrite"}


async def retrieve(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """The searches' hits and scores, the knowledge of the version that answered, the patient described."""
    request, query, text = state["request"], state["query"], state["text"]
    k = max(SEARCH_K, request.top_k)
    known = deps.knowledge_cache.current
    turn = state.get("turn_state")  # a retry after no evidence has it already
    if turn is None and known is not None:
        turn = known.read(text)
    term = state.get("term") if "term" in state else asked_term(text)
    define = term is not None and "definition" not in state  # look up the guideline's definition
    searches = [deps.retrieval.search(query.text, top_k=k, mode="chat")]
    process = asks_about_process(text)
    alone = query.strategy != "direct" and (process or (turn is not None and turn.names_clinical_terms))
    if alone:
        # a follow-up's own clinical (or process) words may find what the topic's do not: both
        searches.append(deps.retrieval.search(text, top_k=k, mode="chat"))
    if process:  # NG12's sections on the referral process, for the message as typed
        searches.append(deps.retrieval.search(text, top_k=k, mode="chat", sections=PROCESS_SEARCHED))
    if define:
        searches.append(deps.retrieval.search(str(term), top_k=5, mode="chat", doc_types=["guideline_text"]))
    try:
        results = list(await asyncio.gather(*searches))
    except RetrievalError as exc:
        return {"error": exc}
    update: dict[str, Any] = {"term": term}
    if define:
        suffix = f"> {str(term).lower()}"
        update["definition"] = next(
            (h for h in results.pop().hits if h.section.lower().endswith(suffix)), None
        )
    found = results[0]
    hits = [h for r in results for h in r.hits]
    knowledge = await deps.knowledge_cache.get(found.index_version)
    first: list[str] = []
    if process:
        on_process = [h for h in results[-1].hits if h.canonical]  # in search's order
        as_typed = results[-2].hits
        best = max((h.score for h in as_typed), default=0.0)
        top = max((h.score for h in on_process), default=0.0)
        # the process recommendations lead when they match the question about as well as any
        # other; all of them for a question naming no symptom, site or test, else at most 3
        clinical = bool(named_tests(text)) or (turn is not None and turn.names_clinical_terms)
        if on_process and top >= best - SCORE_MARGIN:
            first = _process_first(text, on_process, knowledge, top)
        # what the question asks about the process (each topic it asks: chat.process_topics) leads
        topics = answering(text, knowledge.recs, request.top_k) if knowledge is not None else []
        first = list(dict.fromkeys([*topics, *first]))
        first = first[: max(len(topics), ASKED_WITH_MET) if clinical else request.top_k]
    update["first"] = first
    if knowledge is None:
        turn = ClinicalState()
    elif knowledge is not known or turn is None:  # first turn, or a new index version
        turn = knowledge.read(text)
    if knowledge is not None and query.strategy == "direct" and turn is not None:
        turn = _with_written_out(turn, text, found.normalized_query, knowledge)
    ref = guideline_ref(found.guideline, found.index_version)
    return update | {
        "hits": hits,
        # graded on every passage found, supporting ones included: search collapses a
        # recommendation's passages into one hit, and the grading's thresholds count passages
        "scores": [h.score for h in hits] + [p.score for h in hits for p in h.supporting],
        "knowledge": knowledge,
        "turn_state": turn,
        "guideline": ref,
    }


async def guardrail_check(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """The evidence's grade: out of scope, sufficient, weak, none, or retry (rewritten once)."""
    evidence = grade(state["scores"])
    if post_retrieval_out_of_scope(state["text"], state["query"].text):
        return {"evidence": "out_of_scope", "scope_kind": rule_scope(state["query"].text)}
    if state.get("definition") is not None and evidence in ("none", "weak"):
        return {"evidence": "sufficient"}  # the guideline defines the term asked about
    if evidence == "none" and not state.get("rewritten"):
        query = await rewrite(state, deps, state["meta"].state.merged(state["turn_state"]))
        return {"evidence": "retry", "rewritten": True, "query": query}
    if evidence == "none" and state.get("in_scope"):
        # a question the classifier placed in scope, with a recommendation above the floor: the
        # closest recommendations, hedged, rather than no answer
        if any(h.canonical and h.score >= FLOOR for h in state["hits"]):
            return {"evidence": "weak"}
    return {"evidence": evidence}


def after_check(state: Mapping[str, Any]) -> str:
    """guardrail_check's successor: retrieve again on a retry, else summarize_query."""
    return "retrieve" if state["evidence"] == "retry" else "summarize_query"


async def summarize_query(state: ChatState) -> dict[str, Any]:
    """The clinical summary of this message's patient (what it names, nothing empty)."""
    turn = state["turn_state"]
    summary = {
        "age": turn.age,
        "sex": turn.sex,
        "symptoms": [s.replace("_", " ") for s in turn.symptoms],
        "duration_days": turn.duration_days,
        "cancer_sites": turn.cancer_sites,
    }
    return {"clinical_summary": {k: v for k, v in summary.items() if v not in (None, [])}}


def route(state: Mapping[str, Any]) -> str:
    """summarize_query's successor: the answering node for the evidence's grade."""
    return {
        "sufficient": "generate",
        "weak": "qualify",
        "none": "refuse",
        "out_of_scope": "out_of_scope",
    }[state["evidence"]]


async def refuse(state: ChatState) -> dict[str, Any]:
    """A refusal (an injection attempt named as such)."""
    text = compose.injection() if state.get("kind") == "injection" else compose.refuse()
    return {"answer": text, "grounding": "none", "citations": []}


async def out_of_scope(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """A refusal naming what NG12 does cover, with the nearest recommendation NG12 has on the
    symptom or site the message names (one Search, reusing the classifier's embedding)."""
    message = state["request"].message
    known = deps.knowledge_cache.current
    turn = state.get("turn_state")
    if turn is None and known is not None:  # refused before retrieval: still note the patient it
        # describes, for a follow-up within scope ("when should I refer them?")
        turn = known.read(message)
    nearest: list[Citation] = []
    if turn is not None and turn.names_clinical_terms and "hits" not in state:
        # for a document request, the patient it describes, not the request ("draft the letter")
        about = described_patient(message) if state.get("scope_kind") == "task_request" else message
        try:
            found = await deps.retrieval.search(about, top_k=3, mode="chat")
        except RetrievalError:
            found = None
        if found is not None:
            near = [h for h in found.hits if h.canonical and h.score >= NEAREST_MIN_SCORE]
            # the nearest for the patient's age when one is given ("my 67yo with PMB": 1.5.10,
            # aged 55 and over, not 1.5.11, under 55), else the nearest
            fits = [
                h
                for h in near
                if turn.age is None
                or known is None
                or h.canonical[0].id not in known.recs
                or age_ok(known.recs[h.canonical[0].id], turn.age)
            ]
            best = (fits or near or [None])[0]
            if best is not None:
                rec = best.canonical[0]
                nearest = [
                    compose.rec_citation(
                        known.recs.get(rec.id, rec_from_pb(rec)) if known else rec_from_pb(rec)
                    )
                ]
    update: dict[str, Any] = {
        "answer": compose.out_of_scope(asks_other_guideline(message), state.get("scope_kind"), nearest),
        "grounding": "out_of_scope",
        "citations": nearest,
    }
    if turn is not None:
        update["turn_state"] = turn
    return update


async def smalltalk_meta(state: ChatState) -> dict[str, Any]:
    """The reply to smalltalk or to a question about the assistant itself."""
    kind = state["kind"]
    text = compose.meta() if kind == "meta" else compose.smalltalk()
    return {"answer": text, "grounding": "meta" if kind == "meta" else "smalltalk", "citations": []}


async def emergency(state: ChatState) -> dict[str, Any]:
    """Emergency signposting (999, A&E, NHS 111; Samaritans for self-harm)."""
    self_harm = is_self_harm(state["request"].message)
    return {"answer": compose.emergency(self_harm), "grounding": "emergency", "citations": []}


async def save_history(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """The turn appended to the session's history, with its topic and the patient's clinical state."""
    request, meta = state["request"], state["meta"]
    grounding = state["grounding"]
    turn = state.get("turn_state") or ClinicalState()
    topic = next_topic(meta.topic, grounding, state["citations"], turn, state.get("knowledge"))
    # the clinical state takes in what every turn said about the patient (the topic only what
    # grounded answers cited): "the prognosis of a 60-year-old with haemoptysis?" is out of
    # scope, but "when should I refer them?" then still knows the patient
    new_meta = SessionMeta(topic=topic, state=meta.state.merged(turn))
    try:
        user = ChatTurn(role="user", content=state["redacted_message"], at=state["asked_at"])
        assistant = ChatTurn(
            role="assistant",
            content=await redact(state["answer"]) if not state["citations"] else state["answer"],
            citations=state["citations"],
            grounding=grounding,
            at=now_rfc3339(),
            query=await _redacted_query(state),
            clinical_summary=state.get("clinical_summary"),
        )
        await deps.history.append_pair(request.session_id, user, assistant, new_meta)
    except (HistoryUnavailable, RedactorUnavailable) as exc:
        return {"error": exc}
    if "guideline" not in state:  # no search this turn: the version loaded last (or at start-up)
        known = deps.knowledge_cache.current
        return {"topic": topic, "guideline": known.guideline if known else GuidelineRef()}
    return {"topic": topic}


async def handle_error(state: ChatState) -> dict[str, Any]:
    """The failure logged (its text redacted); ChatRunner raises it."""
    error = state.get("error")
    try:
        detail = await redact(str(error))
    except RedactorUnavailable:  # the redactor itself failed: log no text at all
        detail = ""
    log.warning("chat_failed", error_type=type(error).__name__, error=detail)
    return {}


#: A node as the graph runs it: the state in, its update out (dependencies bound).
Step = Callable[[ChatState], Awaitable[dict[str, Any]]]


def build_graph(deps: ChatDeps) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled chat graph, its nodes bound to `deps`."""
    graph = StateGraph(ChatState)
    nodes: dict[str, Step] = {
        "load_history": partial(load_history, deps=deps),
        "input_guardrail": partial(input_guardrail, deps=deps),
        "build_query": partial(build_query, deps=deps),
        "retrieve": partial(retrieve, deps=deps),
        "guardrail_check": partial(guardrail_check, deps=deps),
        "summarize_query": summarize_query,
        "generate": partial(generate, deps=deps),
        "qualify": partial(qualify, deps=deps),
        "refuse": refuse,
        "out_of_scope": partial(out_of_scope, deps=deps),
        "smalltalk_meta": smalltalk_meta,
        "emergency": emergency,
        "save_history": partial(save_history, deps=deps),
        "handle_error": handle_error,
    }
    routes: dict[str, tuple[Any, tuple[str, ...]]] = {
        "load_history": (unless_error("input_guardrail"), ("input_guardrail", "handle_error")),
        "input_guardrail": (
            after_input,
            ("build_query", "smalltalk_meta", "emergency", "out_of_scope", "refuse", "handle_error"),
        ),
        "retrieve": (unless_error("guardrail_check"), ("guardrail_check", "handle_error")),
        "guardrail_check": (after_check, ("retrieve", "summarize_query")),
        "summarize_query": (route, ("generate", "qualify", "refuse", "out_of_scope")),
        "save_history": (unless_error(END), (END, "handle_error")),
    }
    for name, node in nodes.items():
        if name in routes:
            decide, destinations = routes[name]
            graph.add_node(name, routed(node, decide), destinations=destinations)
        else:
            graph.add_node(name, node)  # type: ignore[call-overload,arg-type]
    graph.add_edge(START, "load_history")
    graph.add_edge("build_query", "retrieve")
    for name in ("generate", "qualify", "refuse", "out_of_scope", "smalltalk_meta", "emergency"):
        graph.add_edge(name, "save_history")
    graph.add_edge("handle_error", END)
    return graph.compile()


class ChatRunner:
    """Runs the graph for one message and turns its final state into a response (or raises)."""

    def __init__(
        self,
        history: HistoryStore,
        retrieval: RetrievalClient,
        writer: AnswerWriter | None = None,
        rewriter: QueryRewriter | None = None,
        use_scope_classifier: bool = True,
    ) -> None:
        self._knowledge = KnowledgeCache(retrieval)
        self._scope = ScopeClassifier(retrieval) if use_scope_classifier else None
        self._fit: asyncio.Task[bool] | None = None
        deps = ChatDeps(history, retrieval, self._knowledge, writer, rewriter, self._scope)
        self._graph = build_graph(deps)

    async def warm(self) -> bool:
        """Load the served version's knowledge ahead of the first question (start-up), so that
        even a first turn that does not search (a greeting) names the guideline version.
        Best effort: False when retrieval cannot answer yet (the first search loads it). Starts
        fitting the scope classifier in the background (its training set embedded once)."""
        if await self._knowledge.get() is None:
            return False
        if self._scope is not None and not self._scope.ready and (self._fit is None or self._fit.done()):
            self._fit = asyncio.create_task(self._scope.load())
        return True

    @property
    def scope_ready(self) -> bool:
        """The scope classifier is fitted (or not used)."""
        return self._scope is None or self._scope.ready

    async def run(self, request: ChatRequest) -> ChatResponse:
        final: dict[str, Any] = await self._graph.ainvoke({"request": request, "asked_at": now_rfc3339()})
        error = final.get("error")
        if isinstance(error, RetrievalUnavailable):  # down or past its deadline: say what it means
            raise RetrievalUnavailable(SEARCH_UNAVAILABLE + error.message, error.grpc_code)
        if error is not None:
            raise error
        return ChatResponse(
            session_id=request.session_id,
            answer=final["answer"],
            grounding=final["grounding"],
            citations=final["citations"],
            query=final["query"],
            topic=final.get("topic"),
            guideline=final.get("guideline") or GuidelineRef(),
            clinical_summary=final.get("clinical_summary"),
        )


async def _redacted_query(state: ChatState) -> ChatQuery | None:
    """The search query as stored in the history: its text can be the message itself, so it is
    redacted like the user's turn."""
    query = state.get("query")
    if query is None:
        return None
    return query.model_copy(update={"text": await redacted_text(state, query.text)})
