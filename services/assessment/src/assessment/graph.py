"""The assessment workflow as a LangGraph StateGraph.

    fetch_patient -> retrieve_guidelines -> assess_risk -> END
          \\________________\\__________-> handle_error -> END   (on error)

Walking skeleton: `assess_risk` does not judge yet (top_action "not_assessed", engine
"retrieval-only"); the retrieved NG12 passages become the citations. The deterministic
criteria engine later replaces `assess_risk` without changing the graph's edges.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from assessment.errors import PatientNotFound
from assessment.patients import PatientStore
from assessment.profile import search_profile, symptom_query
from ng12_common.citations import guideline_ref, hits_to_citations
from ng12_common.logs import get_logger
from ng12_common.models import Assessment, AssessmentResponse, Citation, GuidelineRef, Patient, PatientRecord
from ng12_common.retrieval_client import RetrievalClient, RetrievalError

log = get_logger("assessment.graph")

SEARCH_TOP_K = 8
NOT_ASSESSED_REASONING = (
    "Criteria evaluation is not available yet: no NG12 recommendation has been judged met or unmet. "
    "The citations are the NG12 passages retrieved for this patient's symptoms and profile."
)


class AssessmentState(TypedDict, total=False):
    patient_id: str | None
    record: PatientRecord | None
    patient: Patient | PatientRecord
    citations: list[Citation]
    guideline: GuidelineRef
    assessment: Assessment
    error: Exception | None


def _route(next_node: str) -> Any:
    def decide(state: AssessmentState) -> str:
        return "handle_error" if state.get("error") else next_node

    return decide


def build_graph(store: PatientStore, retrieval: RetrievalClient) -> CompiledStateGraph[Any, Any, Any, Any]:
    async def fetch_patient(state: AssessmentState) -> dict[str, Any]:
        record = state.get("record")
        if record is not None:
            return {"patient": record}
        patient_id = state.get("patient_id") or ""
        patient = store.get(patient_id)
        if patient is None:
            return {"error": PatientNotFound(patient_id)}
        return {"patient": patient}

    async def retrieve_guidelines(state: AssessmentState) -> dict[str, Any]:
        patient = state["patient"]
        query = symptom_query(patient)
        try:
            if not query:  # nothing to search for; still say which guideline version is served
                active = await retrieval.active_index()
                return {"citations": [], "guideline": guideline_ref(active.guideline, active.version)}
            found = await retrieval.search(
                query, top_k=SEARCH_TOP_K, mode="assessment", patient=search_profile(patient)
            )
        except RetrievalError as exc:
            return {"error": exc}
        return {
            "citations": hits_to_citations(found.hits),
            "guideline": guideline_ref(found.guideline, found.index_version),
        }

    async def assess_risk(state: AssessmentState) -> dict[str, Any]:
        return {
            "assessment": Assessment(
                top_action="not_assessed",
                risk_level="not_assessed",
                engine="retrieval-only",
                reasoning=NOT_ASSESSED_REASONING,
            )
        }

    async def handle_error(state: AssessmentState) -> dict[str, Any]:
        error = state.get("error")
        log.warning("assessment_failed", error_type=type(error).__name__, error=str(error))
        return {}

    graph = StateGraph(AssessmentState)
    graph.add_node("fetch_patient", fetch_patient)
    graph.add_node("retrieve_guidelines", retrieve_guidelines)
    graph.add_node("assess_risk", assess_risk)
    graph.add_node("handle_error", handle_error)
    graph.add_edge(START, "fetch_patient")
    graph.add_conditional_edges(
        "fetch_patient", _route("retrieve_guidelines"), ["retrieve_guidelines", "handle_error"]
    )
    graph.add_conditional_edges("retrieve_guidelines", _route("assess_risk"), ["assess_risk", "handle_error"])
    graph.add_edge("assess_risk", END)
    graph.add_edge("handle_error", END)
    return graph.compile()


class AssessmentRunner:
    """Runs the graph for one request and turns its final state into a response (or raises)."""

    def __init__(self, store: PatientStore, retrieval: RetrievalClient) -> None:
        self._graph = build_graph(store, retrieval)

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
        )
