"""Guideline prose outside the recommendations: front matter and the sections after Part B.

Kept (users ask about them): "Overview", "Introduction" (how the guideline is organised,
recommendation wording), "Terms used in this guideline" (one block per defined term),
"Rationale and impact" and "Update information". Skipped: "Your responsibility",
"Contents", "Recommendations for research", "Context", "Finding more information and
committee details". Each block is split on headings; rendering to chunks happens in
`chunks`.
"""

from __future__ import annotations

from ingestion.kb.layout import Document, Line, Table
from ingestion.kb.structure import Heading, ProseBlock, Region
from ingestion.kb.text import render_paragraphs

KEPT_REGIONS = (
    "overview",
    "introduction",
    "terms used in this guideline",
    "rationale and impact",
    "update information",
)
SKIPPED_REGIONS = (
    "",
    "your responsibility",
    "contents",
    "recommendations for research",
    "context",
    "finding more information",
)


def _kind(title: str) -> str:
    low = title.strip().lower()
    if any(low.startswith(k) for k in KEPT_REGIONS):
        return "kept"
    if low == "" or any(low.startswith(s) for s in SKIPPED_REGIONS if s):
        return "skipped"
    return "unknown"


def collect_prose(doc_regions: list[Region], handled: set[int]) -> tuple[list[ProseBlock], list[str]]:
    """Prose blocks of the kept regions (regions in `handled` are Part A/B, by index)."""
    blocks: list[ProseBlock] = []
    warnings: list[str] = []
    for index, region in enumerate(doc_regions):
        if index in handled:
            continue
        kind = _kind(region.title)
        if kind == "skipped":
            continue
        if kind == "unknown":
            warnings.append(f"unrecognised section '{region.title}' (page {region.page}) kept as prose")
        path: list[str] = [region.title]
        current = ProseBlock(heading_path=tuple(path), region=region.title)
        for el in region.elements:
            if isinstance(el, Heading):
                if current.lines or current.tables:
                    blocks.append(current)
                del path[max(1, el.level - 1) :]
                path.append(el.text)
                current = ProseBlock(heading_path=tuple(path), region=region.title)
            elif isinstance(el, Table):
                current.tables.append(el)
            else:
                current.lines.append(el)
        if current.lines or current.tables:
            blocks.append(current)
    return blocks, warnings


def render_block(block: ProseBlock, doc: Document) -> str:
    """Block text: its own heading as the first line, then its paragraphs."""
    return "\n".join(text for text, _first, _last in block_paragraphs(block, doc))


def block_paragraphs(block: ProseBlock, doc: Document) -> list[tuple[str, int, int]]:
    """(paragraph, first page, last page): the block's heading first, then its text and table rows."""
    parts: list[tuple[str, int, int]] = []
    if block.heading_path:
        parts.append((block.heading_path[-1], block.page, block.page))
    items: list[Line | Table] = sorted([*block.lines, *block.tables], key=lambda it: (it.page, it.top))
    run: list[Line] = []
    for item in items:
        if isinstance(item, Line):
            run.append(item)
            continue
        if run:
            parts.extend(render_paragraphs(run, doc.line_pitch))
            run = []
        for row in item.rows:
            parts.append((" ".join(cell.text for cell in row if cell.lines), item.page, item.page))
    if run:
        parts.extend(render_paragraphs(run, doc.line_pitch))
    return [part for part in parts if part[0]]
