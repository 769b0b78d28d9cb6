"""Domain models shared at the service boundaries (public API and service-to-service HTTP).

The gateway declares its routes with these models (so /docs shows them) and the services
validate with the same ones; no model is copied between services.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ng12_common.actions import ActionOrOutcome

ActionOrNone = ActionOrOutcome  # ng12_common.actions: the one action vocabulary
#: "contradicted": the question rests on something NG12 does not say (a claimed threshold, age or
#: interval); the answer says so and quotes what NG12 does say, with citations (docs/chat.md).
Grounding = Literal[
    "sufficient", "weak", "none", "contradicted", "out_of_scope", "smalltalk", "meta", "emergency"
]
SearchModeName = Literal["assessment", "chat"]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- errors ----------------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    code: str  # machine-readable, e.g. "patient_not_found", "retrieval_unavailable"
    message: str  # says what happened and what to do
    request_id: str | None = None
    fields: list[dict[str, Any]] | None = None  # for validation errors: [{field, problem}]
    job_id: str | None = None  # 409 ingestion_running: the job still running


class ErrorResponse(BaseModel):
    error: ErrorDetail


# --- guideline and citations -------------------------------------------------------------------


class GuidelineRef(BaseModel):
    title: str = ""
    code: str = "NG12"
    last_updated: str = ""
    index_version: str = ""


class Citation(BaseModel):
    source: Literal["NG12"] = "NG12"
    recommendation_id: str | None = None
    section: str = ""
    page: int
    chunk_id: str
    excerpt: str  # verbatim from the guideline
    doc_type: str = ""
    score: float | None = None


# --- patients and assessment ---------------------------------------------------------------------


RecordLine = Annotated[str, Field(max_length=1000, description="One entry, at most 1000 characters.")]


class PatientRecord(StrictModel):
    """What a GP sends to POST /assess."""

    age: int = Field(ge=0, le=120, description="Age in whole years (0-120).")
    gender: str = Field(min_length=1, max_length=40, description="e.g. Male, Female.")
    smoking_history: str = Field(
        default="", max_length=200, description='Free text: "Current Smoker", "Ex-Smoker", "Never Smoked".'
    )
    symptoms: list[RecordLine] = Field(
        max_length=50, description="Free-text phrases as a GP types them, e.g. 'unexplained hemoptysis'."
    )
    symptom_duration_days: int | None = Field(default=None, ge=0, le=36500)
    history: list[RecordLine] = Field(default_factory=list, max_length=50)
    exam_findings: list[RecordLine] = Field(default_factory=list, max_length=50)
    test_results: dict[str, Any] = Field(
        default_factory=dict, max_length=50, description="At most 50 results."
    )


class AssessRecord(PatientRecord):
    """What POST /assess accepts: a record, or the stored-patient shape GET /patients/{id} returns
    (its `patient_id` and `name` are accepted and ignored by the engine)."""

    patient_id: str | None = Field(default=None, max_length=64, description="Ignored by the engine.")
    name: str | None = Field(default=None, max_length=200, description="Ignored by the engine.")


class Patient(PatientRecord):
    """A patient in the patient store (data/patients.json)."""

    patient_id: str = Field(min_length=1, max_length=64)
    name: str = ""


class MatchedRecommendation(BaseModel):
    recommendation_id: str
    action: str
    strength: str = ""
    cancer_site: str = ""
    criteria_met: list[str] = Field(default_factory=list)
    text: str  # verbatim canonical NG12 text
    page: int
    provisional: list[str] = Field(default_factory=list)  # judgement calls the match relies on


RecordField = Literal["symptoms", "exam_findings", "history", "test_results"]
FindingStatus = Literal[
    "finding",  # a current finding of this patient, used by the criteria
    "history",  # a history item the criteria use (asbestos exposure, ...)
    "test",  # a test result typed in the line (see test_interpretations)
    "absent",  # negated: "no cough", "denies haemoptysis"
    "family",  # someone else's: "mum had breast cancer"
    "resolved",  # was present, has gone: "cough resolved last year"
    "hypothetical",  # conditional advice: "return if haemoptysis"
    "not_ng12",  # a finding NG12 does not use: "sore throat"
    "context",  # names nothing clinical: "twice this week"
    "history_not_used",  # background the lexicon does not know
    "unread",  # a clinical clause that was not understood: the assessment is not complete
]


class FindingRead(BaseModel):
    """How one clause of the record was read: the concept, the tier that decided, the evidence."""

    field: RecordField
    entry: str  # the entry as typed
    clause: str  # the clause of it that this is about
    concept: str | None = None
    label: str | None = None
    tier: Literal["exact", "lemma", "curated", "semantic"] | None = None
    evidence: str = ""  # the words that matched (or the rule, for a test)
    score: float | None = None  # similarity, for the semantic tier
    status: FindingStatus


class TestInterpretation(BaseModel):
    """A test result as read: the value used, the rule and its source, and what it established."""

    key: str
    value: Any = None
    analyte: str
    value_used: float | None = None
    unit: str = ""
    rule: str  # "118 g/L < 120 g/L (women) -> low haemoglobin"
    finding: str | None = None  # the NG12 finding it establishes
    decides: list[str] = Field(default_factory=list)  # matched recommendations that rely on it
    source: str = ""


class NearMiss(BaseModel):
    recommendation_id: str
    missing: list[str]


class UnusedTestResult(BaseModel):
    """A `test_results` entry the engine did not use, and why."""

    key: str
    value: Any = None
    reason: str


class ReviewItem(BaseModel):
    """Something a clinician should check: a judgement call, or an LLM claim the engine did not make."""

    kind: Literal[
        "provisional_judgement",
        "llm_unsupported_claim",
        "unread_finding",
        "semantic_match",
        "test_done",
        "explained_finding",
    ]
    recommendation_id: str | None = None
    detail: str


class Assessment(BaseModel):
    top_action: ActionOrNone = "not_assessed"
    complete: bool = True  # False when a finding or test result in the record was not understood
    risk_level: str = "not_assessed"
    cancer_types: list[str] = Field(default_factory=list)
    recommended_action: str = ""
    reasoning: str = ""
    matched_recommendations: list[MatchedRecommendation] = Field(default_factory=list)
    near_misses: list[NearMiss] = Field(default_factory=list)
    safety_netting: list[str] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    unrecognised: list[str] = Field(default_factory=list)  # the unread findings, as typed
    findings: list[FindingRead] = Field(default_factory=list)  # how every clause was read
    test_interpretations: list[TestInterpretation] = Field(default_factory=list)
    unused_test_results: list[UnusedTestResult] = Field(default_factory=list)
    needs_review: list[ReviewItem] = Field(default_factory=list)
    engine: str = "retrieval-only"  # "rules" or "rules+llm"


class AssessmentResponse(BaseModel):
    patient: Patient | AssessRecord | PatientRecord
    assessment: Assessment
    citations: list[Citation]
    guideline: GuidelineRef
    degraded: bool = Field(
        default=False,
        description="True when retrieval was unavailable: the criteria engine answered rules-only from "
        "the guideline knowledge it had cached (canonical recommendations and criteria of "
        "`guideline.index_version`); citations are the matched and safety-netting recommendations "
        "only (no searched passages) and free text that needs semantic reading stays unread.",
    )
    degraded_reason: str | None = None


# --- chat ------------------------------------------------------------------------------------------

SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"


class ChatRequest(StrictModel):
    session_id: str = Field(pattern=SESSION_ID_PATTERN, description="1-128 chars of [A-Za-z0-9_-].")
    message: str = Field(min_length=1, max_length=4000)
    top_k: int = Field(default=5, ge=1, le=20)


class ChatQuery(BaseModel):
    strategy: str = "direct"
    text: str = ""


class ChatResponse(BaseModel):
    session_id: str
    answer: str
    grounding: Grounding
    citations: list[Citation]
    query: ChatQuery
    topic: str | None = None
    guideline: GuidelineRef
    clinical_summary: dict[str, Any] | None = None  # what the question says about the patient


class ChatTurn(BaseModel):
    role: Literal["user", "assistant"]
    content: str
    citations: list[Citation] = Field(default_factory=list)
    grounding: Grounding | None = None
    at: str  # RFC 3339
    # assistant turns: how the guideline was searched and what the question said about the patient,
    # kept so that a reloaded conversation shows what the live answer showed
    query: ChatQuery | None = None
    clinical_summary: dict[str, Any] | None = None


class ChatHistory(BaseModel):
    session_id: str
    turns: list[ChatTurn]
    topic: str | None = None


# --- public search -----------------------------------------------------------------------------------


class SearchQuery(StrictModel):
    query: str = Field(min_length=1, max_length=2000)
    top_k: int = Field(default=8, ge=1, le=50)
    mode: SearchModeName = "chat"


class BoostOut(BaseModel):
    name: str
    value: float
    reason: str = ""


class SupportingPassageOut(BaseModel):
    """Another passage of the same recommendation (search collapses hits to one per recommendation)."""

    chunk_id: str
    doc_type: str
    score: float
    page: int
    section: str
    excerpt: str


class Passage(BaseModel):
    chunk_id: str
    doc_type: str
    score: float
    recommendation_ids: list[str]
    page: int
    section: str
    excerpt: str
    boosts: list[BoostOut] = Field(default_factory=list)
    supporting: list[SupportingPassageOut] = Field(default_factory=list)


class SearchResult(BaseModel):
    query: str
    normalized_query: str = ""
    passages: list[Passage]
    index_version: str
    degraded: bool = False
    degraded_reason: str = ""
