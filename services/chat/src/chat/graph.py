"""The chat workflow as a LangGraph StateGraph.

    load_history -> input_guardrail -> build_query -> retrieve -> guardrail_check
        -> summarize_query -> generate | qualify | refuse | out_of_scope -> save_history -> END
    input_guardrail short-cuts (no retrieval): smalltalk_meta | emergency | out_of_scope | refuse
    guardrail_check with no evidence and a non-rewrite query: rewrite once -> retrieve
    (any failing step) -> handle_error -> END

Without an LLM the answer is extractive (chat.answer); with Gemini configured, chat.llm writes
it from the same selected recommendations and its quotes are validated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from chat import answer as compose
from chat.clinical import ClinicalState, asks_about_age, extract
from chat.grading import grade
from chat.guardrails import (
    InputKind,
    asks_other_guideline,
    classify_input,
    is_self_harm,
    post_retrieval_out_of_scope,
)
from chat.history import HistoryStore, HistoryUnavailable, SessionMeta, now_rfc3339
from chat.knowledge import Knowledge, KnowledgeCache, rec_from_pb
from chat.llm import REWRITE_HISTORY_TURNS, AnswerWriter, QueryRewriter
from chat.premise import claimed_details, is_injection, unsupported
from chat.query import build, quote_term, rewrite_from_state
from chat.redaction import redact
from chat.selection import Selection, select
from chat.topic import next_topic
from ng12_common.citations import guideline_ref, hits_to_citations
from ng12_common.criteria import parse_criteria, referenced_concepts
from ng12_common.logs import get_logger
from ng12_common.models import (
    ChatQuery,
    ChatRequest,
    ChatResponse,
    ChatTurn,
    Citation,
    Grounding,
    GuidelineRef,
)
from ng12_common.retrieval_client import RetrievalClient, RetrievalError
from ng12_common.workflow import routed

log = get_logger("chat.graph")
SEARCH_K = 10  # hits fetched per search; the answer keeps at most request.top_k recommendations


class ChatState(TypedDict, total=False):
    request: ChatRequest
    asked_at: str
    history: list[ChatTurn]  # the newest turns (at most REWRITE_HISTORY_TURNS; only for the LLM)
    has_history: bool
    meta: SessionMeta
    kind: InputKind | str
    query: ChatQuery
    rewritten: bool
    hits: list[Any]
    scores: list[float]
    knowledge: Knowledge | None
    turn_state: ClinicalState
    evidence: str
    citations: list[Citation]
    guideline: GuidelineRef
    answer: str
    grounding: Grounding
    topic: str | None
    clinical_summary: dict[str, Any] | None
    error: Exception | None


def _names_criteria_concept(sel: Selection, turn: ClinicalState) -> bool:
    """A symptom the question names is a criterion of a presented recommendation."""
    wanted = set(turn.symptoms)
    for rec, _score in sel.recs:
        if wanted and rec.criteria is not None:
            named = {
                c for concepts in referenced_concepts(parse_criteria(rec.criteria)).values() for c in concepts
            }
            if wanted & named:
                return True
    return False


def _on_error(next_node: str) -> Any:
    def decide(state: Mapping[str, Any]) -> str:
        return "handle_error" if state.get("error") else next_node

    return decide


def build_graph(
    history: HistoryStore,
    retrieval: RetrievalClient,
    knowledge_cache: KnowledgeCache,
    writer: AnswerWriter | None = None,
    rewriter: QueryRewriter | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:

    async def load_history(state: ChatState) -> dict[str, Any]:
        sid = state["request"].session_id
        try:
            if rewriter is not None:  # the LLM rewrite reads the newest turns
                recent, meta = await history.load(sid, REWRITE_HISTORY_TURNS)
                count = len(recent)
            else:
                recent, (count, meta) = [], await history.load_meta(sid)
        except HistoryUnavailable as exc:
            return {"error": exc}
        return {"history": recent, "has_history": count > 0, "meta": meta}

    async def rewrite(state: ChatState, fallback_state: ClinicalState) -> ChatQuery:
        """Tier B: the LLM's validated rewrite when one is configured, else from clinical state."""
        message = " ".join(state["request"].message.split())
        # the model is a cloud service: it sees the message without personal data, as history stores it
        text = await rewriter.rewrite(redact(message), state["history"]) if rewriter is not None else None
        return ChatQuery(strategy="rewrite", text=text or rewrite_from_state(message, fallback_state))

    async def input_guardrail(state: ChatState) -> dict[str, Any]:
        message = state["request"].message
        kind: str = "injection" if is_injection(message) else classify_input(message)
        return {"kind": kind, "citations": [], "query": ChatQuery(strategy="none", text="")}

    def after_input(state: Mapping[str, Any]) -> str:
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

    async def build_query(state: ChatState) -> dict[str, Any]:
        meta = state["meta"]
        query = build(state["request"].message, state["has_history"], meta.topic, meta.state)
        if query.strategy == "rewrite":
            query = await rewrite(state, meta.state)
        return {"query": query, "rewritten": query.strategy == "rewrite"}

    async def retrieve(state: ChatState) -> dict[str, Any]:
        request, query = state["request"], state["query"]
        k = max(SEARCH_K, request.top_k)
        known = knowledge_cache.current
        turn = state.get("turn_state")  # a retry after no evidence has it already
        if turn is None and known is not None:
            turn = extract(request.message, known.lexicon, known.sites)
        try:
            if query.strategy == "direct" or (turn is not None and not turn.names_clinical_terms):
                found = await retrieval.search(query.text, top_k=k, mode="chat")
                hits = list(found.hits)
            else:  # a follow-up's own clinical words may find what the topic's do not: both at once
                found, own = await asyncio.gather(
                    retrieval.search(query.text, top_k=k, mode="chat"),
                    retrieval.search(request.message, top_k=k, mode="chat"),
                )
                hits = [*found.hits, *own.hits]
        except RetrievalError as exc:
            return {"error": exc}
        knowledge = await knowledge_cache.get(found.index_version)
        if knowledge is None:
            turn = ClinicalState()
        elif knowledge is not known or turn is None:  # first turn, or a new index version
            turn = extract(request.message, knowledge.lexicon, knowledge.sites)
        ref = guideline_ref(found.guideline, found.index_version)
        return {
            "hits": hits,
            "scores": [h.score for h in hits],
            "knowledge": knowledge,
            "turn_state": turn,
            "guideline": ref,
        }

    async def guardrail_check(state: ChatState) -> dict[str, Any]:
        evidence = grade(state["scores"])
        if post_retrieval_out_of_scope(state["request"].message, state["query"].text):
            return {"evidence": "out_of_scope"}
        if evidence == "none" and not state.get("rewritten"):
            query = await rewrite(state, state["meta"].state.merged(state["turn_state"]))
            return {"evidence": "retry", "rewritten": True, "query": query}
        return {"evidence": evidence}

    def after_check(state: Mapping[str, Any]) -> str:
        return "retrieve" if state["evidence"] == "retry" else "summarize_query"

    async def summarize_query(state: ChatState) -> dict[str, Any]:
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
        return {
            "sufficient": "generate",
            "weak": "qualify",
            "none": "refuse",
            "out_of_scope": "out_of_scope",
        }[state["evidence"]]

    def _selection(state: ChatState) -> Selection:
        candidates: dict[str, tuple[Any, float]] = {}
        knowledge = state.get("knowledge")
        known = knowledge.recs if knowledge else {}
        for hit in state["hits"]:
            for rec in hit.canonical:
                if rec.id not in candidates or hit.score > candidates[rec.id][1]:
                    candidates[rec.id] = (known.get(rec.id) or rec_from_pb(rec), hit.score)
        turn = state["turn_state"]
        if state["query"].strategy != "direct":  # a follow-up: the session's patient
            merged = state["meta"].state.merged(turn)
            update: dict[str, Any] = {"age": merged.age, "sex": merged.sex}
            if not turn.names_clinical_terms:  # "what if they were 80?": same patient, other age
                update |= {"symptoms": merged.symptoms, "modifiers": merged.modifiers}
                update |= {"negated": merged.negated, "cancer_sites": merged.cancer_sites}
            turn = turn.model_copy(update=update)
        return select(list(candidates.values()), knowledge, turn, state["request"].top_k)

    async def _answer(state: ChatState, hedged: bool) -> dict[str, Any]:
        request = state["request"]
        sel = _selection(state)
        citations = [compose.rec_citation(rec, score) for rec, score in sel.recs]
        details = claimed_details(request.message)
        missing = unsupported(details, [r.text for r, _ in sel.recs]) if details else []
        if missing:
            correction = "\n".join(f'> "{c.excerpt.strip()}" {compose.cite_tag(c)}' for c in citations[:2])
            return {
                "answer": compose.false_premise(missing, correction or None),
                "grounding": "none",
                "citations": citations[:2],
            }
        if not citations:  # only guideline prose matched: quote the best passages
            citations = hits_to_citations(state["hits"])[: min(2, request.top_k)]
            if not citations:
                return {"answer": compose.refuse(), "grounding": "none", "citations": []}
            body = compose.passages(citations)
            return {"answer": compose.qualify(body), "grounding": "weak", "citations": citations}
        citations += [compose.rec_citation(m.rec) for m in sel.near_misses[:2]]
        concept_match = _names_criteria_concept(sel, state["turn_state"])
        grounding: Grounding = "sufficient" if (not hedged or sel.met or concept_match) else "weak"
        age = sel.near_misses[0].age if sel.near_misses else state["turn_state"].age
        body = compose.extractive(sel, age, quote_term(request.message), asks_about_age(request.message))
        if writer is not None:
            written = await writer.write(redact(request.message), sel, body)
            if written is not None:
                body = written
        return {
            "answer": compose.qualify(body) if grounding == "weak" else body,
            "grounding": grounding,
            "citations": citations,
        }

    async def generate(state: ChatState) -> dict[str, Any]:
        return await _answer(state, hedged=False)

    async def qualify(state: ChatState) -> dict[str, Any]:
        return await _answer(state, hedged=True)

    async def refuse(state: ChatState) -> dict[str, Any]:
        text = compose.injection() if state.get("kind") == "injection" else compose.refuse()
        return {"answer": text, "grounding": "none", "citations": []}

    async def out_of_scope(state: ChatState) -> dict[str, Any]:
        message = state["request"].message
        update: dict[str, Any] = {
            "answer": compose.out_of_scope(asks_other_guideline(message)),
            "grounding": "out_of_scope",
            "citations": [],
        }
        known = knowledge_cache.current
        if "turn_state" not in state and known is not None:  # refused before retrieval: still note
            # the patient it describes, for a follow-up within scope ("when should I refer them?")
            update["turn_state"] = extract(message, known.lexicon, known.sites)
        return update

    async def smalltalk_meta(state: ChatState) -> dict[str, Any]:
        kind = state["kind"]
        text = compose.meta() if kind == "meta" else compose.smalltalk()
        return {"answer": text, "grounding": "meta" if kind == "meta" else "smalltalk", "citations": []}

    async def emergency(state: ChatState) -> dict[str, Any]:
        self_harm = is_self_harm(state["request"].message)
        return {"answer": compose.emergency(self_harm), "grounding": "emergency", "citations": []}

    async def save_history(state: ChatState) -> dict[str, Any]:
        request, meta = state["request"], state["meta"]
        grounding = state["grounding"]
        turn = state.get("turn_state") or ClinicalState()
        topic = next_topic(meta.topic, grounding, state["citations"], turn, state.get("knowledge"))
        # the clinical state takes in what every turn said about the patient (the topic only what
        # grounded answers cited): "the prognosis of a 60-year-old with haemoptysis?" is out of
        # scope, but "when should I refer them?" then still knows the patient
        new_meta = SessionMeta(topic=topic, state=meta.state.merged(turn))
        user = ChatTurn(role="user", content=redact(request.message), at=state["asked_at"])
        assistant = ChatTurn(
            role="assistant",
            content=redact(state["answer"]) if not state["citations"] else state["answer"],
            citations=state["citations"],
            grounding=grounding,
            at=now_rfc3339(),
        )
        try:
            await history.append_pair(request.session_id, user, assistant, new_meta)
        except HistoryUnavailable as exc:
            return {"error": exc}
        if "guideline" not in state:  # no search this turn: the version loaded last (or at start-up)
            known = knowledge_cache.current
            return {"topic": topic, "guideline": known.guideline if known else GuidelineRef()}
        return {"topic": topic}

    async def handle_error(state: ChatState) -> dict[str, Any]:
        error = state.get("error")
        log.warning("chat_failed", error_type=type(error).__name__, error=redact(str(error)))
        return {}

    graph = StateGraph(ChatState)
    nodes = {
        "load_history": load_history,
        "input_guardrail": input_guardrail,
        "build_query": build_query,
        "retrieve": retrieve,
        "guardrail_check": guardrail_check,
        "summarize_query": summarize_query,
        "generate": generate,
        "qualify": qualify,
        "refuse": refuse,
        "out_of_scope": out_of_scope,
        "smalltalk_meta": smalltalk_meta,
        "emergency": emergency,
        "save_history": save_history,
        "handle_error": handle_error,
    }
    routes: dict[str, tuple[Any, tuple[str, ...]]] = {
        "load_history": (_on_error("input_guardrail"), ("input_guardrail", "handle_error")),
        "input_guardrail": (
            after_input,
            ("build_query", "smalltalk_meta", "emergency", "out_of_scope", "refuse", "handle_error"),
        ),
        "retrieve": (_on_error("guardrail_check"), ("guardrail_check", "handle_error")),
        "guardrail_check": (after_check, ("retrieve", "summarize_query")),
        "summarize_query": (route, ("generate", "qualify", "refuse", "out_of_scope")),
        "save_history": (_on_error(END), (END, "handle_error")),
    }
    for name, node in nodes.items():
        if name in routes:
            decide, destinations = routes[name]
            graph.add_node(name, routed(node, decide), destinations=destinations)
        else:
            graph.add_node(name, node)  # type: ignore[call-overload]
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
    ) -> None:
        self._knowledge = KnowledgeCache(retrieval)
        self._graph = build_graph(history, retrieval, self._knowledge, writer, rewriter)

    async def warm(self) -> bool:
        """Load the served version's knowledge ahead of the first question (start-up), so that
        even a first turn that does not search (a greeting) names the guideline version.
        Best effort: False when retrieval cannot answer yet (the first search loads it)."""
        return await self._knowledge.get() is not None

    async def run(self, request: ChatRequest) -> ChatResponse:
        final: dict[str, Any] = await self._graph.ainvoke({"request": request, "asked_at": now_rfc3339()})
        error = final.get("error")
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
