"""The chat graph's state (`ChatState`) and what its nodes are given (`ChatDeps`).

Both are shared by the graph's routing nodes (chat.graph) and its answering nodes (chat.respond).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from chat.clinical import ClinicalState
from chat.guardrails import InputKind
from chat.history import HistoryStore, SessionMeta
from chat.knowledge import Knowledge, KnowledgeCache
from chat.llm import AnswerWriter, QueryRewriter
from chat.redaction import redact
from chat.scope import ScopeClassifier
from ng12_common.models import ChatQuery, ChatRequest, ChatTurn, Citation, Grounding, GuidelineRef
from ng12_common.retrieval_client import RetrievalClient

#: A passage of NG12 looked up by a fixed query: (index version, query, sections searched).
GlossaryKey = tuple[str, str, tuple[str, ...]]


class ChatState(TypedDict, total=False):
    """One turn's state: what the chat graph's nodes read and write."""

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


@dataclass(frozen=True)
class ChatDeps:
    """What the nodes need, passed explicitly (no closures)."""

    history: HistoryStore
    retrieval: RetrievalClient
    knowledge_cache: KnowledgeCache
    writer: AnswerWriter | None = None
    rewriter: QueryRewriter | None = None
    scope: ScopeClassifier | None = None
    #: NG12's own passages looked up by a fixed query (definitions, notes), per index version:
    #: one Search the first time, none after (one cache per graph).
    glossary: dict[GlossaryKey, Citation | None] = field(default_factory=dict, compare=False)


async def redacted_text(state: ChatState, text: str) -> str:
    """`text` without personal data: the message redacted once in load_history when it is the
    message (whitespace aside), else redacted now (a mixed request's part, a rewritten query)."""
    if " ".join(text.split()) == " ".join(state["request"].message.split()):
        return state["redacted_message"]
    return await redact(text)
