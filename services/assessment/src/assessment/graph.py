"""The assessment workflow as a LangGraph StateGraph.

    fetch_patient -> retrieve_guidelines -> assess_risk -> END
          \\________________\\________________\\-> handle_error -> END   (on error)

- fetch_patient: the record in the body, or the patient store (through Gemini's
  `get_patient_data` tool call when an LLM is configured; a direct lookup otherwise or when that
  fails).
- retrieve_guidelines: retrieval Search in assessment mode (conditions + findings, patient profile)
  for supporting passages, and the guideline knowledge (criteria, lexicon) of the index version
  that answered, cached per version.
- assess_risk: the record read clause by clause (`read_patient`: ng12_common.reading, tiers 1-2,
  ConText, test results; tier 3, semantic similarity, through retrieval's Embed RPC), then the
  deterministic engine decides; an LLM, when configured, only writes `reasoning`. Reading is a
  function of this step, not a graph node of its own: a LangGraph step costs ~0.6 ms of CPU per
  request (measured), more than reading the record does.
- handle_error: every failure becomes a typed error (404, 503), never an unhandled 500.

Degraded mode: when retrieval is unavailable (down, or past its deadline) and this process has
the knowledge of an index version cached (loaded at start-up or by an earlier assessment), the
engine still answers, rules-only from that knowledge: no searched passages, no semantic tier,
`degraded: true` with the reason. Without cached knowledge it is a 503 as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from assessment.engine import EngineOutcome, assess
from assessment.errors import AssessmentUnavailable, PatientNotFound
from assessment.knowledge import GuidelineKnowledge, KnowledgeCache, KnowledgeUnavailable
from assessment.llm import GeminiSteps, LlmFailed
from assessment.metrics import DEGRADED, LLM_CALLS
from assessment.narrative import llm_payload, rules_reasoning
from assessment.patients import PatientStore
from assessment.profile import search_profile, symptom_query
from ng12_common.citations import guideline_ref, hits_to_citations, recommendation_citation
from ng12_common.logs import get_logger
from ng12_common.models import (
    Assessment,
    AssessmentResponse,
    Citation,
    GuidelineRef,
    Patient,
    PatientRecord,
    ReviewItem,
)
from ng12_common.reading.record import RecordReading, apply_semantic, read_record
from ng12_common.retrieval_client import RetrievalClient, RetrievalError, RetrievalUnavailable
from ng12_common.served_recommendations import ServedRecommendation
from ng12_common.workflow import routed, unless_error

log = get_logger("assessment.graph")

SEARCH_TOP_K = 8
KNOWLEDGE_NEEDED = (
    "The assessment engine needs the NG12 guideline knowledge (recommendations, criteria and lexicon) "
    "from the retrieval service and cannot assess without it. "
)


class AssessmentState(TypedDict, total=False):
    patient_id: str | None
    record: PatientRecord | None
    patient: Patient | PatientRecord
    citations: list[Citation]
    guideline: GuidelineRef
    knowledge: GuidelineKnowledge
    assessment: Assessment
    degraded_reason: str | None
    error: Exception | None


def rec_citation(rec: ServedRecommendation) -> Citation:
    return recommendation_citation(rec)


def build_citations(outcome: EngineOutcome, retrieved: list[Citation]) -> list[Citation]:
    """Matched recommendations first, then safety netting (when nothing is met), then supporting
    retrieved passages; a retrieved recommendation whose criteria the engine found unmet is left
    out so that no citation presents it as applicable."""
    out = [rec_citation(r) for r in [*outcome.matched_recs, *outcome.safety_netting]]
    seen = {c.chunk_id for c in out}
    for c in retrieved:
        if c.chunk_id in seen or (c.recommendation_id and c.recommendation_id in outcome.unmet_ids):
            continue
        seen.add(c.chunk_id)
        out.append(c)
    return out


def _unavailable(exc: Exception) -> AssessmentUnavailable:
    if isinstance(exc, RetrievalError):
        return AssessmentUnavailable(exc.code, KNOWLEDGE_NEEDED + exc.message, status=exc.status)
    return AssessmentUnavailable("guideline_knowledge_unavailable", KNOWLEDGE_NEEDED + str(exc))


@dataclass(frozen=True)
class AssessmentDeps:
    """What the nodes need, passed explicitly (no closures)."""

    store: PatientStore
    retrieval: RetrievalClient
    knowledge: KnowledgeCache
    llm: GeminiSteps | None = None


async def fetch_patient(state: AssessmentState, deps: AssessmentDeps) -> dict[str, Any]:
    """The record in the body, or the stored patient (through the LLM's tool call when configured)."""
    record = state.get("record")
    if record is not None:  # a stored patient's id and name, if sent back, are not the engine's
        return {"patient": PatientRecord.model_validate(record.model_dump(exclude={"patient_id", "name"}))}
    patient_id = state.get("patient_id") or ""
    lookup_id = patient_id
    if deps.llm is not None:
        try:
            asked = await deps.llm.fetch_patient_id(patient_id)
            if asked != patient_id:
                raise LlmFailed(f"the tool call asked for {asked!r}, not {patient_id!r}")
            lookup_id = asked
            log.info("patient_fetched_by_tool", patient_id=patient_id)
            LLM_CALLS.labels(step="patient_tool", outcome="used").inc()
        except LlmFailed as exc:
            log.warning("patient_tool_fallback", error=str(exc))
            LLM_CALLS.labels(step="patient_tool", outcome="error").inc()
    patient = deps.store.get(lookup_id)
    if patient is None:
        return {"error": PatientNotFound(patient_id)}
    return {"patient": patient}


async def retrieve_guidelines(state: AssessmentState, deps: AssessmentDeps) -> dict[str, Any]:
    """Supporting passages (assessment-mode Search) and the knowledge of the version that answered."""
    patient = state["patient"]
    query = symptom_query(patient)
    try:
        if query:
            found = await deps.retrieval.search(
                query, top_k=SEARCH_TOP_K, mode="assessment", patient=search_profile(patient)
            )
            citations = hits_to_citations(found.hits)
            version, guideline = found.index_version, guideline_ref(found.guideline, found.index_version)
        else:  # nothing to search for; the engine still needs the knowledge of the active index
            active = await deps.retrieval.active_index()
            citations, version = [], active.version
            guideline = guideline_ref(active.guideline, active.version)
        known = await deps.knowledge.get(version)
    except RetrievalUnavailable as exc:
        cached = deps.knowledge.current
        if cached is None:
            return {"error": _unavailable(exc)}
        DEGRADED.inc()
        reason = (
            f"The retrieval service was unavailable ({exc.grpc_code.name if exc.grpc_code else 'error'}): "
            f"rules-only assessment from the cached NG12 knowledge of index {cached.index_version}; "
            "supporting passages were not searched and free text that needs semantic reading was not read."
        )
        log.warning("assessment_degraded", index_version=cached.index_version, error=exc.message)
        return {
            # no retrieved passages; build_citations still cites the matched and safety-netting
            # recommendations from the cached canonical knowledge
            "citations": [],
            "guideline": cached.guideline,
            "knowledge": cached,
            "degraded_reason": reason,
        }
    except (RetrievalError, KnowledgeUnavailable) as exc:
        return {"error": _unavailable(exc)}
    return {"citations": citations, "guideline": guideline, "knowledge": known}


async def read_patient(
    patient: Patient | PatientRecord, known: GuidelineKnowledge, semantic: bool = True
) -> RecordReading:
    """The record read clause by clause: tiers 1-2 locally, tier 3 through retrieval's Embed
    (not when `semantic` is off: degraded mode, retrieval unavailable)."""
    reading = read_record(patient, known.lexicon)
    if semantic and reading.pending and known.semantic is not None:
        try:
            decisions = await known.semantic.decide([p.clause for p in reading.pending])
        except (RetrievalError, ValueError) as exc:  # the clauses stay unread: the answer says incomplete
            log.warning("semantic_tier_failed", error=str(exc))
        else:
            apply_semantic(reading, decisions, known.lexicon)
    return reading


async def assess_risk(state: AssessmentState, deps: AssessmentDeps) -> dict[str, Any]:
    """The deterministic engine decides; an LLM, when configured, only writes `reasoning`."""
    record = state["patient"]
    known = state["knowledge"]
    reading = await read_patient(record, known, semantic=not state.get("degraded_reason"))
    try:
        outcome = assess(record, known, reading=reading)
    except Exception as exc:  # a defect must still answer with a typed error
        log.exception("engine_failed", error=repr(exc))
        return {
            "error": AssessmentUnavailable(
                "assessment_engine_error", f"The criteria engine failed on this record: {exc}"
            )
        }
    reasoning = rules_reasoning(outcome, known.index_version)
    engine = "rules"
    review = list(outcome.needs_review)
    if deps.llm is not None:
        try:
            payload = await asyncio.to_thread(llm_payload, record, outcome)  # redaction is CPU work
            narrative = await deps.llm.narrate(payload)
            unsupported = sorted(set(narrative.cited_recommendation_ids) - set(outcome.matched_ids))
            if unsupported:  # grounded or silent: the rules-only reasoning is published instead
                LLM_CALLS.labels(step="narrative", outcome="invalid").inc()
                log.warning("narrative_unsupported_claim", recommendation_ids=unsupported)
            for rid in unsupported:
                review.append(
                    ReviewItem(
                        kind="llm_unsupported_claim",
                        recommendation_id=rid,
                        detail=f"the model's narrative cited {rid}, which the criteria engine did not "
                        "match; the narrative was not used (the reasoning shown is the rules-only one)",
                    )
                )
            if not unsupported:
                reasoning, engine = narrative.reasoning, "rules+llm"
                LLM_CALLS.labels(step="narrative", outcome="used").inc()
        except LlmFailed as exc:
            log.warning("narrative_fallback", error=str(exc))
            LLM_CALLS.labels(step="narrative", outcome="error").inc()
    assessment = Assessment(
        top_action=outcome.top_action,  # type: ignore[arg-type]
        complete=outcome.complete,
        risk_level=outcome.risk_level,
        cancer_types=outcome.cancer_types,
        recommended_action=outcome.recommended_action,
        reasoning=reasoning,
        matched_recommendations=outcome.matched,
        near_misses=outcome.near_misses,
        safety_netting=[r.text for r in outcome.safety_netting],
        assumptions=outcome.assumptions,
        unrecognised=outcome.unrecognised,
        findings=outcome.findings,
        test_interpretations=outcome.test_interpretations,
        unused_test_results=outcome.unused_test_results,
        needs_review=review,
        engine=engine,
    )
    return {"assessment": assessment, "citations": build_citations(outcome, state.get("citations", []))}


async def handle_error(state: AssessmentState) -> dict[str, Any]:
    error = state.get("error")
    log.warning("assessment_failed", error_type=type(error).__name__, error=str(error))
    return {}


Node = Callable[[AssessmentState, AssessmentDeps], Awaitable[dict[str, Any]]]
STEPS: tuple[tuple[str, Node, str], ...] = (
    ("fetch_patient", fetch_patient, "retrieve_guidelines"),
    ("retrieve_guidelines", retrieve_guidelines, "assess_risk"),
    ("assess_risk", assess_risk, END),
)


def build_graph(deps: AssessmentDeps) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(AssessmentState)
    for name, node, next_node in STEPS:
        bound = partial(node, deps=deps)  # type: ignore[call-arg]
        graph.add_node(name, routed(bound, unless_error(next_node)), destinations=(next_node, "handle_error"))
    graph.add_node("handle_error", handle_error)
    graph.add_edge(START, "fetch_patient")
    graph.add_edge("handle_error", END)
    return graph.compile()


class AssessmentRunner:
    """Runs the graph for one request and turns its final state into a response (or raises)."""

    def __init__(
        self,
        store: PatientStore,
        retrieval: RetrievalClient,
        llm: GeminiSteps | None = None,
        knowledge: KnowledgeCache | None = None,
    ) -> None:
        self.knowledge = knowledge or KnowledgeCache(retrieval)
        self._graph = build_graph(AssessmentDeps(store, retrieval, self.knowledge, llm))

    async def run(
        self, patient_id: str | None = None, record: PatientRecord | None = None
    ) -> AssessmentResponse:
        final: dict[str, Any] = await self._graph.ainvoke({"patient_id": patient_id, "record": record})
        error = final.get("error")
        if error is not None:
            raise error
        return AssessmentResponse(
            patient=final["patient"],
            assessment=final["assessment"],
            citations=final["citations"],
            guideline=final["guideline"],
            degraded=bool(final.get("degraded_reason")),
            degraded_reason=final.get("degraded_reason"),
        )
