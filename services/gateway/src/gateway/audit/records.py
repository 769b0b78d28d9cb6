"""What one audit record holds, and how its hash is computed.

The hash is SHA-256 over the record's canonical JSON (sorted keys, no spaces) which includes
`seq` and `prev_hash`, so editing any field, deleting a record or reordering breaks the chain.
Free text never enters a record: `input_sha256` is the hash of the raw request body and
`summary` holds only structured, redacted facts (counts, ages, test names, lengths).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, Field

AuditKind = Literal["assessment", "chat", "search", "patient", "guideline", "admin", "signin", "session"]
GENESIS = "0" * 64


class AuditEntry(BaseModel):
    """What a route reports; the store adds seq, ts and the chain."""

    request_id: str = ""
    actor: str
    role: str = ""
    auth_method: str = ""
    client_ip: str = ""
    kind: AuditKind
    method: str
    route: str  # the route template, never a raw path with ids or text
    status: int
    input_sha256: str = ""
    summary: dict[str, Any] = Field(default_factory=dict)
    recommendation_ids: list[str] = Field(default_factory=list)
    top_action: str = ""
    grounding: str = ""
    index_version: str = ""


class AuditRecord(AuditEntry):
    seq: int
    ts: str
    prev_hash: str
    hash: str = ""


def canonical(record: AuditRecord) -> str:
    return json.dumps(record.model_dump(exclude={"hash"}), sort_keys=True, separators=(",", ":"))


def text_hash(canonical_text: str) -> str:
    """The hash of a record's canonical text (`canonical`): what the chain links."""
    return hashlib.sha256(canonical_text.encode("utf-8")).hexdigest()


def record_hash(record: AuditRecord) -> str:
    return text_hash(canonical(record))


def body_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
