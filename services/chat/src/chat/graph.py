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
import functools
import re
from collections.abc import Mapping
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from chat import answer as compose
from chat.clinical import ClinicalState, asks_about_age, extract
from chat.definitions import asked_definitions, asked_term, asked_terms, asks_timeframe
from chat.grading import FLOOR, grade
from chat.guardrails import (
    InputKind,
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
from chat.premise import (
    check,
    claims,
    describe,
    for_patient,
    is_injection,
    named_tests,
    universal_contradicted,
)
from chat.query import (
    PROCESS_SECTIONS,
    asks_about_process,
    build,
    is_follow_up,
    quote_term,
    rewrite_from_state,
)
from chat.redaction import RedactorUnavailable, redact
from chat.results import results_lead
from chat.scope import CONTEXT_THRESHOLD, ScopeClassifier
from chat.selection import ASKED_WITH_MET, SCORE_MARGIN, Selection, age_ok, select
from chat.topic import next_topic
from ng12_common.citations import guideline_ref, hits_to_citations
from ng12_common.criteria import evaluate_all, parse_criteria, referenced_concepts
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
from ng12_common.retrieval_client import RetrievalClient, RetrievalError, RetrievalUnavailable
from ng12_common.workflow import routed

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
#: A follow-up that adds to what the patient has ("also", "as well", "too", "in addition").
_ADDS = re.compile(r"\b(also|as well|too|in addition|additionally|on top)\b", re.IGNORECASE)
NEAREST_MIN_SCORE = 0.38  # a refusal offers NG12's nearest recommendation only above this (grading's weak)


class ChatState(TypedDict, total=False):
    request: ChatRequest
    redacted_message: str  # the message without personal data: redacted once, in load_history
    text: str  # what is answered: the message, or a mixed request's in-scope part
    declined: list[tuple[str, str]]  # (part, kind) of a mixed request, declined by name
    scope_kind: str | None  # the out-of-scope kind (rules or classifier)
    in_scope: bool  # the classifier (or the conversation, for a follow-up) says the question is in scope
    definition: Any  # the guideline's definition passage of a term asked about
    first: list[str]  # rec ids presented first (a process question's 1.14-1.16 recommendations)
    term: str | None
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


def _concepts(criteria: Any) -> set[str]:
    return {c for concepts in referenced_concepts(parse_criteria(criteria)).values() for c in concepts}


def _with_written_out(turn: ClinicalState, text: str, normalized: str, knowledge: Knowledge) -> ClinicalState:
    """The symptoms and sites of the message as retrieval's normaliser wrote its GP shorthand out
    ("LN + fevers" -> "lymph node + fevers"), added to what the message as typed names. Only when
    the normaliser changed the text in place (appended lexicon wording the matcher finds anyway)."""
    if normalized.startswith(" ".join(text.lower().split())):
        return turn
    extra = extract(normalized, knowledge.lexicon, knowledge.sites)
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
    scope: ScopeClassifier | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:

    #: NG12's own passages looked up by a fixed query (definitions, notes), per index version:
    #: one Search the first time, none after.
    glossary: dict[tuple[str, str, tuple[str, ...]], Citation | None] = {}

    async def guideline_passage(
        version: str, query: str, section_suffix: str = "", contains: str = "", sections: tuple[str, ...] = ()
    ) -> Citation | None:
        key = (version, query, sections)
        if key not in glossary:
            try:
                found = await retrieval.search(
                    query, top_k=5, mode="chat", doc_types=["guideline_text"], sections=sections
                )
            except RetrievalError:
                return None
            hit = next(
                (
                    h
                    for h in found.hits
                    if h.section.lower().endswith(section_suffix.lower())
                    and contains.lower() in h.text.lower()
                ),
                None,
            )
            glossary[key] = hits_to_citations([hit])[0] if hit is not None else None
        return glossary[key]

    async def definition_of(version: str, term: str) -> Citation | None:
        return await guideline_passage(version, term, section_suffix=f"> {term}")

    async def context(state: ChatState, sel: Selection, text: str) -> tuple[str, list[Citation]]:
        """What the answer needs from NG12's terms and notes, beyond the recommendations: the
        definition of the timeframe a timing question asks about ("how fast?": Immediate), and for
        a patient under 25 the age groups of the recommendations presented (children, young
        people) with, for a young person, NG12's note that either pathway may be used."""
        version = state["guideline"].index_version if "guideline" in state else ""
        recs = [r for r, _ in sel.recs]
        passages: list[Citation] = []
        sentence: str | None = None
        if recs and asks_timeframe(text) and state.get("definition") is None:
            named = asked_terms(text)
            terms = named or [
                compose.ACTION_TERMS[r.action] for r in recs[:2] if r.action in compose.ACTION_TERMS
            ]
            for term in dict.fromkeys(terms):
                found = await definition_of(version, term)
                if found is not None:
                    passages.append(found)
        age = _patient_age(state)
        if age is not None and age < 25 and recs:
            sentence = compose.age_group_lead(age, recs)
            if sentence is not None:
                groups = {r.population.get("age_group") for r in recs}
                terms = ["Children"] if age < 16 or "children" in groups else []
                terms += ["Young people"] if 16 <= age < 25 else []
                terms += ["Children and young people"] if "children_and_young_people" in groups else []
                for term in terms:
                    found = await definition_of(version, term)
                    if found is not None:
                        passages.append(found)
                # the adults' recommendation may be a near miss on age (18 and over), not presented
                shown = [*recs, *(m.rec for m in sel.near_misses)]
                both = {r.population.get("age_group") for r in shown}
                if 16 <= age < 25 and "adults" in both and "children_and_young_people" in both:
                    section = next(r.section for r in shown if r.population.get("age_group") == "adults")
                    note = await guideline_passage(
                        version,
                        "young people may be referred using either pathway",
                        contains="either pathway",
                        sections=(section,),
                    )
                    if note is not None:
                        passages.append(note)
        return compose.context_lead(sentence, passages), passages

    def _same_patient(state: ChatState) -> bool:
        """A follow-up, or a message that describes no patient of its own ("PSA back at 2.9"):
        the session's patient."""
        turn = state["turn_state"]
        return state["query"].strategy != "direct" or (turn.age is None and not turn.names_clinical_terms)

    def _patient_tests(state: ChatState) -> dict[str, float]:
        turn = state["turn_state"]
        if _same_patient(state):
            return {**state["meta"].state.tests, **turn.tests}
        return dict(turn.tests)

    def _patient_age(state: ChatState) -> int | None:
        turn = state["turn_state"]
        if turn.age is None and _same_patient(state):
            return state["meta"].state.age
        return turn.age

    async def load_history(state: ChatState) -> dict[str, Any]:
        sid = state["request"].session_id
        try:
            if rewriter is not None:  # the LLM rewrite reads the newest turns
                recent, meta = await history.load(sid, REWRITE_HISTORY_TURNS)
                count = len(recent)
            else:
                recent, (count, meta) = [], await history.load_meta(sid)
            redacted = await redact(state["request"].message)
        except (HistoryUnavailable, RedactorUnavailable) as exc:
            return {"error": exc}
        return {"history": recent, "has_history": count > 0, "meta": meta, "redacted_message": redacted}

    async def rewrite(state: ChatState, fallback_state: ClinicalState) -> ChatQuery:
        """Tier B: the LLM's validated rewrite when one is configured, else from clinical state."""
        message = " ".join(state["text"].split())
        # the model is a cloud service: it sees the message without personal data, as history stores it
        text = None
        if rewriter is not None:
            text = await rewriter.rewrite(await _redacted(state, message), state["history"])
        return ChatQuery(strategy="rewrite", text=text or rewrite_from_state(message, fallback_state))

    def _clinical(text: str) -> bool:
        known = knowledge_cache.current
        return known is not None and extract(text, known.lexicon, known.sites).names_clinical_terms

    async def input_guardrail(state: ChatState) -> dict[str, Any]:
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
            mixed = await split_request(message, scope.classify if scope is not None else None, _clinical)
            if mixed is not None:  # answer the in-scope part, decline the rest by name
                return update | {"kind": "proceed", "text": mixed.text, "declined": mixed.declined}
        if kind == "medical_out_of_scope":
            return update | {"kind": kind, "scope_kind": rule_scope(message)}
        if kind != "proceed" or (state["has_history"] and is_follow_up(message)):
            return update | {"kind": kind, "in_scope": kind == "proceed"}  # a follow-up: the conversation's
        decision = await scope.classify(message) if scope is not None else None
        if decision is None or decision.in_scope:
            return update | {"kind": kind, "in_scope": decision is not None}
        if decision.in_scope_probability >= CONTEXT_THRESHOLD and state["has_history"]:
            # a conversation's next question is refused only when the classifier is sure
            return update | {"kind": kind, "in_scope": True}
        known = knowledge_cache.current
        turn = extract(message, known.lexicon, known.sites) if known is not None else ClinicalState()
        if decision.kind == "non_medical" and turn.names_clinical_terms:
            return update | {"kind": kind, "turn_state": turn}  # a symptom or cancer site is not non-medical
        return update | {"kind": "medical_out_of_scope", "scope_kind": decision.kind, "turn_state": turn}

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
        query = build(state["text"], state["has_history"], meta.topic, meta.state)
        if query.strategy == "rewrite":
            query = await rewrite(state, meta.state)
        return {"query": query, "rewritten": query.strategy == "rewrite"}

    async def retrieve(state: ChatState) -> dict[str, Any]:
        request, query, text = state["request"], state["query"], state["text"]
        k = max(SEARCH_K, request.top_k)
        known = knowledge_cache.current
        turn = state.get("turn_state")  # a retry after no evidence has it already
        if turn is None and known is not None:
            turn = extract(text, known.lexicon, known.sites)
        term = state.get("term") if "term" in state else asked_term(text)
        define = term is not None and "definition" not in state  # look up the guideline's definition
        searches = [retrieval.search(query.text, top_k=k, mode="chat")]
        process = asks_about_process(text)
        alone = query.strategy != "direct" and (process or (turn is not None and turn.names_clinical_terms))
        if alone:
            # a follow-up's own clinical (or process) words may find what the topic's do not: both
            searches.append(retrieval.search(text, top_k=k, mode="chat"))
        if process:  # NG12's sections on the referral process, for the message as typed
            searches.append(retrieval.search(text, top_k=k, mode="chat", sections=PROCESS_SEARCHED))
        if define:
            searches.append(retrieval.search(str(term), top_k=5, mode="chat", doc_types=["guideline_text"]))
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
        knowledge = await knowledge_cache.get(found.index_version)
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
                first = first[: ASKED_WITH_MET if clinical else request.top_k]
        update["first"] = first
        if knowledge is None:
            turn = ClinicalState()
        elif knowledge is not known or turn is None:  # first turn, or a new index version
            turn = extract(text, knowledge.lexicon, knowledge.sites)
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

    async def guardrail_check(state: ChatState) -> dict[str, Any]:
        evidence = grade(state["scores"])
        if post_retrieval_out_of_scope(state["text"], state["query"].text):
            return {"evidence": "out_of_scope", "scope_kind": rule_scope(state["query"].text)}
        if state.get("definition") is not None and evidence in ("none", "weak"):
            return {"evidence": "sufficient"}  # the guideline defines the term asked about
        if evidence == "none" and not state.get("rewritten"):
            query = await rewrite(state, state["meta"].state.merged(state["turn_state"]))
            return {"evidence": "retry", "rewritten": True, "query": query}
        if evidence == "none" and state.get("in_scope"):
            # a question the classifier placed in scope, with a recommendation above the floor: the
            # closest recommendations, hedged, rather than no answer
            if any(h.canonical and h.score >= FLOOR for h in state["hits"]):
                return {"evidence": "weak"}
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
            update: dict[str, Any] = {"age": merged.age, "sex": merged.sex, "tests": merged.tests}
            # "what if they were 80?": same patient, other age; "and if he has also lost weight?":
            # the same patient's symptoms and this one
            if not turn.names_clinical_terms or _ADDS.search(state["text"]):
                negated = [
                    n for n in merged.negated if n not in turn.symptoms
                ]  # "no weight loss", then "also lost weight"
                update |= {"symptoms": merged.symptoms, "modifiers": merged.modifiers}
                update |= {"negated": negated, "cancer_sites": merged.cancer_sites}
            turn = turn.model_copy(update=update)
        # a process recommendation chosen by its wording, not found by search, leads at the score of
        # the process recommendations found with it
        wanted = [rid for rid in state.get("first", []) if rid in candidates or rid in known]
        lead = max((candidates[rid][1] for rid in wanted if rid in candidates), default=0.0)
        first = [candidates[rid] if rid in candidates else (known[rid], lead) for rid in wanted]
        return select(
            list(candidates.values()), knowledge, turn, state["request"].top_k, state["text"], first
        )

    def _nearest(state: ChatState, n: int = 2) -> list[Citation]:
        """The best-scoring recommendations search found for the question (at most n)."""
        ranked = sorted(((r, s) for r, s in _scored_recs(state)), key=lambda rs: -rs[1])
        return [compose.rec_citation(r, s) for r, s in ranked[:n]]

    def _scored_recs(state: ChatState) -> list[tuple[Any, float]]:
        knowledge = state.get("knowledge")
        known = knowledge.recs if knowledge else {}
        best: dict[str, tuple[Any, float]] = {}
        for hit in state.get("hits", []):
            for rec in hit.canonical:
                if rec.id not in best or hit.score > best[rec.id][1]:
                    best[rec.id] = (known.get(rec.id) or rec_from_pb(rec), hit.score)
        return list(best.values())

    def _cited(state: ChatState, result: dict[str, Any]) -> dict[str, Any]:
        """No answer goes out without a citation: an answer or a contradicted premise that cites
        nothing says what NG12 does not say and cites the nearest recommendations found, or, when
        search found none, is a refusal."""
        if result.get("citations") or result.get("grounding") not in ("sufficient", "weak", "contradicted"):
            return result
        nearest = _nearest(state)
        if not nearest:
            return {"answer": compose.refuse(), "grounding": "none", "citations": []}
        if result["grounding"] == "contradicted":
            found = claims(state["text"])
            claimed = describe(found) if found else "that"
            return {
                "answer": compose.false_premise(claimed, nearest),
                "grounding": "contradicted",
                "citations": nearest,
            }
        return {"answer": compose.not_said(nearest), "grounding": "weak", "citations": nearest}

    async def _answer(state: ChatState, hedged: bool) -> dict[str, Any]:
        result = _cited(state, await _answer_text(state, hedged))
        if state.get("declined"):  # a mixed request: the rest declined by name, first
            result["answer"] = compose.declined(state["declined"]) + result["answer"]
        return result

    def _retrieved_recs(state: ChatState) -> list[Any]:
        knowledge = state.get("knowledge")
        known = knowledge.recs if knowledge else {}
        out: dict[str, Any] = {}
        for hit in state["hits"]:
            for rec in hit.canonical:
                out.setdefault(rec.id, known.get(rec.id) or rec_from_pb(rec))
        return list(out.values())

    async def _answer_text(state: ChatState, hedged: bool) -> dict[str, Any]:
        request, text = state["request"], state["text"]
        sel = _selection(state)
        citations = [compose.rec_citation(rec, score) for rec, score in sel.recs]
        found_claims = claims(text)
        if found_claims:  # what the question says NG12 says, checked against NG12's text
            knowledge = state.get("knowledge")
            every = list(knowledge.recs.values()) if knowledge else []
            retrieved = list({r.id: r for r in [*(r for r, _ in sel.recs), *_retrieved_recs(state)]}.values())
            wanted = set(state["turn_state"].symptoms)
            on_symptoms = [
                r for r in retrieved if wanted and r.criteria is not None and wanted & _concepts(r.criteria)
            ]
            for_symptoms = for_patient(on_symptoms, state["turn_state"].age)  # the patient's age group
            contradicted, quoted = check(found_claims, retrieved, every, for_symptoms, wanted)
            if not contradicted and knowledge is not None:
                probe = state["turn_state"]
                modifiers = {s: ["unexplained", "persistent"] for s in probe.symptoms}
                eval_context = knowledge.context

                ids = [r.id for r in for_symptoms]

                @functools.cache
                def met_at(age: int) -> frozenset[str]:
                    """The recommendations on the symptoms this patient meets at `age` (each age
                    evaluated once, for all of them)."""
                    facts = probe.model_copy(update={"age": age, "modifiers": modifiers}).to_facts()
                    found = evaluate_all(facts, eval_context, only=ids)
                    return frozenset(rid for rid, result in found.items() if result.met)

                universal = universal_contradicted(found_claims, for_symptoms, met_at, wanted)
                if universal is not None:
                    contradicted, quoted = [universal], for_symptoms
            if contradicted:
                quotes = [compose.rec_citation(r) for r in quoted[:3]]
                compared, _ = results_lead(_patient_tests(state), _patient_age(state), every)
                return {
                    "answer": compose.false_premise(describe(contradicted), quotes, compared),
                    "grounding": "contradicted",
                    "citations": quotes,
                }
        definition = state.get("definition")
        lead = ""
        if definition is not None:
            passage = hits_to_citations([definition])[0]
            lead = compose.definition(state.get("term") or "", passage) + "\n\n"
            # a question about several terms ("urgent and very urgent?"): each defined, in turn
            version = state["guideline"].index_version if "guideline" in state else ""
            more: list[Citation] = [passage]
            for other in asked_definitions(text)[1:]:
                found = await definition_of(version, other)
                if found is not None and found.excerpt not in {c.excerpt for c in more}:
                    lead += compose.definition(other, found) + "\n\n"
                    more.append(found)
            passage_list = more
            if not state["turn_state"].names_clinical_terms and state.get("term") != "safety netting":
                return {
                    "answer": compose.with_disclaimer(lead),
                    "grounding": "sufficient",
                    "citations": passage_list,
                }
            citations = [*passage_list, *citations]
        if not sel.recs:  # only guideline prose matched: quote the best passages
            prose = hits_to_citations(state["hits"])[: min(2, request.top_k)]
            if definition is not None:
                return {
                    "answer": compose.with_disclaimer(lead),
                    "grounding": "sufficient",
                    "citations": citations,
                }
            if not prose:
                return {"answer": compose.refuse(), "grounding": "none", "citations": []}
            body = compose.passages(prose)
            return {"answer": compose.qualify(body), "grounding": "weak", "citations": prose}
        citations += [compose.rec_citation(m.rec) for m in sel.near_misses[:2]]
        extra, passages = await context(state, sel, text)
        knowledge = state.get("knowledge")
        compared, compared_recs = results_lead(
            _patient_tests(state), _patient_age(state), knowledge.recs.values() if knowledge else []
        )
        if compared:  # the patient's results against NG12's thresholds
            extra = f"{compared}\n\n{extra}"
            have = {c.recommendation_id for c in citations}
            citations += [compose.rec_citation(r) for r in compared_recs if r.id not in have]
        lead += extra
        citations += passages
        concept_match = _names_criteria_concept(sel, state["turn_state"])
        age = sel.near_misses[0].age if sel.near_misses else state["turn_state"].age
        # an age question the presented recommendations' age criteria answer ("what about a 45
        # year old?": the PSA band for 45 in 1.6.3) is answered by NG12's own structure
        recs = [r for r, _ in sel.recs]
        age_answer = asks_about_age(text) and compose.age_thresholds(recs, age) is not None
        supported = sel.met or concept_match or definition is not None or age_answer
        grounding: Grounding = "sufficient" if (not hedged or supported) else "weak"
        body = compose.extractive(
            sel, age, quote_term(text), asks_about_age(text), state["turn_state"].symptoms
        )
        if writer is not None:
            written = await writer.write(await _redacted(state, text), sel, body)
            if written is not None:
                body = written
        body = lead + body
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
        """A refusal naming what NG12 does cover, with the nearest recommendation NG12 has on the
        symptom or site the message names (one Search, reusing the classifier's embedding)."""
        message = state["request"].message
        known = knowledge_cache.current
        turn = state.get("turn_state")
        if turn is None and known is not None:  # refused before retrieval: still note the patient it
            # describes, for a follow-up within scope ("when should I refer them?")
            turn = extract(message, known.lexicon, known.sites)
        nearest: list[Citation] = []
        if turn is not None and turn.names_clinical_terms and "hits" not in state:
            # for a document request, the patient it describes, not the request ("draft the letter")
            about = described_patient(message) if state.get("scope_kind") == "task_request" else message
            try:
                found = await retrieval.search(about, top_k=3, mode="chat")
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
            await history.append_pair(request.session_id, user, assistant, new_meta)
        except (HistoryUnavailable, RedactorUnavailable) as exc:
            return {"error": exc}
        if "guideline" not in state:  # no search this turn: the version loaded last (or at start-up)
            known = knowledge_cache.current
            return {"topic": topic, "guideline": known.guideline if known else GuidelineRef()}
        return {"topic": topic}

    async def handle_error(state: ChatState) -> dict[str, Any]:
        error = state.get("error")
        try:
            detail = await redact(str(error))
        except RedactorUnavailable:  # the redactor itself failed: log no text at all
            detail = ""
        log.warning("chat_failed", error_type=type(error).__name__, error=detail)
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
        use_scope_classifier: bool = True,
    ) -> None:
        self._knowledge = KnowledgeCache(retrieval)
        self._scope = ScopeClassifier(retrieval) if use_scope_classifier else None
        self._fit: asyncio.Task[bool] | None = None
        self._graph = build_graph(history, retrieval, self._knowledge, writer, rewriter, self._scope)

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


async def _redacted(state: ChatState, text: str) -> str:
    """`text` without personal data: the message redacted once in load_history when it is the
    message (whitespace aside), else redacted now (a mixed request's part, a rewritten query)."""
    if " ".join(text.split()) == " ".join(state["request"].message.split()):
        return state["redacted_message"]
    return await redact(text)


async def _redacted_query(state: ChatState) -> ChatQuery | None:
    """The search query as stored in the history: its text can be the message itself, so it is
    redacted like the user's turn."""
    query = state.get("query")
    return None if query is None else query.model_copy(update={"text": await _redacted(state, query.text)})
