"""What changed between two index versions, per recommendation (the review before activating a
new NICE edition): added, removed, text changed (with a word-level diff), page moved, unchanged.

Text is compared in ng12_common.knowledge.normalise_text form (layout, quotes and dashes
folded), so a re-flowed line is not a change; the word diff shows the printed words.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import BaseModel

from ng12_common.knowledge import normalise_text
from ng12_common.served_recommendations import rec_sort_key

Status = Literal["added", "removed", "text_changed", "page_moved", "unchanged"]


class WordOp(BaseModel):
    op: Literal["equal", "insert", "delete"]
    text: str


class RecommendationDiff(BaseModel):
    id: str
    status: Status
    section: str = ""
    page_a: int | None = None
    page_b: int | None = None
    text_a: str | None = None
    text_b: str | None = None
    word_diff: list[WordOp] = []


class DiffSummary(BaseModel):
    added: int = 0
    removed: int = 0
    text_changed: int = 0
    page_moved: int = 0
    unchanged: int = 0


class IndexDiff(BaseModel):
    a: str
    b: str
    summary: DiffSummary
    recommendations: list[RecommendationDiff]
    stale_criteria_a: list[str] = []
    stale_criteria_b: list[str]
    unused_criteria_b: list[str] = []


def word_diff(a: str, b: str) -> list[WordOp]:
    """Word-level edit script from a to b; consecutive words of one kind are merged."""
    wa, wb = a.split(), b.split()
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in wa], b=[w.lower() for w in wb], autojunk=False)
    out: list[WordOp] = []

    def emit(op: Literal["equal", "insert", "delete"], words: list[str]) -> None:
        if not words:
            return
        if out and out[-1].op == op:
            out[-1].text += " " + " ".join(words)
        else:
            out.append(WordOp(op=op, text=" ".join(words)))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            emit("equal", wb[j1:j2])
        else:
            emit("delete", wa[i1:i2])
            emit("insert", wb[j1:j2])
    return out


def diff_recommendations(
    a: str, b: str, recs_a: dict[str, dict[str, Any]], recs_b: dict[str, dict[str, Any]]
) -> tuple[DiffSummary, list[RecommendationDiff]]:
    """recs_*: id -> {text, page, section}."""
    summary = DiffSummary()
    out: list[RecommendationDiff] = []
    for rid in sorted(set(recs_a) | set(recs_b), key=rec_sort_key):
        ra, rb = recs_a.get(rid), recs_b.get(rid)
        if ra is None and rb is not None:
            item = RecommendationDiff(
                id=rid, status="added", section=rb["section"], page_b=rb["page"], text_b=rb["text"]
            )
        elif rb is None and ra is not None:
            item = RecommendationDiff(
                id=rid, status="removed", section=ra["section"], page_a=ra["page"], text_a=ra["text"]
            )
        else:
            assert ra is not None and rb is not None
            status: Status
            if normalise_text(ra["text"]) != normalise_text(rb["text"]):
                status = "text_changed"
            elif ra["page"] != rb["page"]:
                status = "page_moved"
            else:
                status = "unchanged"
            item = RecommendationDiff(
                id=rid,
                status=status,
                section=rb["section"],
                page_a=ra["page"],
                page_b=rb["page"],
                text_a=ra["text"],
                text_b=rb["text"],
                word_diff=word_diff(ra["text"], rb["text"]) if status == "text_changed" else [],
            )
        setattr(summary, item.status, getattr(summary, item.status) + 1)
        out.append(item)
    return summary, out
