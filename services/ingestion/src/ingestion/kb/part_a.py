"""Part A: the numbered recommendations 1.1.1 ... 1.16.8, organised by site of cancer.

A state machine walks the regions that contain numbered sections ("1.1 Lung and pleural
cancers"). A line starting at the left margin with a number "1.x.y" opens a
recommendation; lines indented to its text column continue it, across page breaks (the
running header and footer are already gone). Headings, text back at the margin and
indented panels end it. A table or a boxed panel that directly follows a recommendation
and whose title the recommendation names ("... threshold for their age in table 1", "...
weighted 7-point checklist score ...") is kept as part of that recommendation's text;
every other non-recommendation text (section introductions, scope statements, pointers
to rationale) becomes prose for `guideline_text` chunks.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field

from ingestion.kb.classify import AgeGroups, cancer_site, classify
from ingestion.kb.errors import KnowledgeBaseError
from ingestion.kb.layout import Document, Line, Table, load_document
from ingestion.kb.structure import Heading, ProseBlock, Region, regions, split_numbered
from ingestion.kb.terms import age_groups
from ingestion.kb.text import ends_with_year_tag, flat_text, is_rec_id, render_lines, year_tags
from ng12_common.knowledge import Recommendation, TextBox, text_hash


@dataclass(slots=True)
class RecDraft:
    """A recommendation as laid out, before classification."""

    id: str
    section: str
    section_title: str
    subsection: str | None
    heading_path: tuple[str, ...]
    lines: list[Line] = field(default_factory=list)
    attachments: list[list[Line | Table]] = field(default_factory=list)
    attachment_titles: list[str] = field(default_factory=list)
    indent: float = 0.0

    @property
    def page(self) -> int:
        return self.lines[0].page if self.lines else 0

    @property
    def page_end(self) -> int:
        pages = [self.page] + [it.page for block in self.attachments for it in block]
        pages += [line.page for line in self.lines]
        return max(pages)


@dataclass(slots=True)
class PartA:
    drafts: list[RecDraft]
    prose: list[ProseBlock]
    scope_notes: dict[tuple[str, str | None], list[str]]
    warnings: list[str]


@dataclass(slots=True)
class _Supplement:
    caption: str | None
    kind: str  # "panel" (indented box), "prose" (margin text) or "table"
    items: list[Line | Table] = field(default_factory=list)


def _render_items(items: list[Line | Table], pitch: float) -> list[str]:
    out: list[str] = []
    run: list[Line] = []
    for item in items:
        if isinstance(item, Line):
            run.append(item)
            continue
        if run:
            out.append(render_lines(run, pitch))
            run = []
        for row in item.rows:
            cells = [flat_text(cell.lines) for cell in row if cell.lines]
            if cells:
                out.append(" ".join(cells))
    if run:
        out.append(render_lines(run, pitch))
    return out


def _referenced(title: str, rec_text: str) -> bool:
    match = re.match(r"^(table \d+)\b", title.strip(), re.IGNORECASE)
    key = match.group(1) if match else title.strip()
    norm = re.sub(r"\s+", " ", rec_text).lower()
    return re.sub(r"\s+", " ", key).lower() in norm


class _PartAParser:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.drafts: list[RecDraft] = []
        self.prose: list[ProseBlock] = []
        self.scope: dict[tuple[str, str | None], list[str]] = {}
        self.warnings: list[str] = []
        self.h1 = ""
        self.section: tuple[str, str] | None = None
        self.subsection: str | None = None
        self.h4: str | None = None
        self.rec: RecDraft | None = None
        self.last_rec: RecDraft | None = None  # closed, nothing in between yet
        self.supplement: _Supplement | None = None

    # ------------------------------------------------------------------ helpers
    def heading_path(self) -> tuple[str, ...]:
        path = [self.h1]
        if self.section:
            path.append(f"{self.section[0]} {self.section[1]}")
        if self.subsection:
            path.append(self.subsection)
        if self.h4:
            path.append(self.h4)
        return tuple(p for p in path if p)

    def rec_text(self, rec: RecDraft) -> str:
        return render_lines(rec.lines, self.doc.line_pitch)

    def close_rec(self) -> None:
        if self.rec is not None:
            self.drafts.append(self.rec)
            self.last_rec = self.rec
            self.rec = None

    def flush_supplement(self) -> None:
        sup, self.supplement = self.supplement, None
        if sup is None or not sup.items:
            if sup is not None and sup.caption:
                self.prose.append(self._prose_block([], sup.caption))
            return
        first = sup.items[0]
        title = sup.caption
        if title is None and isinstance(first, Line) and first.bold:
            title = first.text
        target = self.last_rec
        if (
            title
            and sup.kind != "prose"
            and target is not None
            and ends_with_year_tag(self.rec_text(target))
            and _referenced(title, self.rec_text(target))
        ):
            items: list[Line | Table] = list(sup.items)
            target.attachments.append(items)
            target.attachment_titles.append(sup.caption or "")
            return
        block = self._prose_block(sup.items, sup.caption)
        self.prose.append(block)
        self.last_rec = None
        key = (self.section[0] if self.section else "", self.subsection)
        text = " ".join(line.text for line in block.lines)
        self.scope.setdefault(key, []).append(text)

    def _prose_block(self, items: list[Line | Table], caption: str | None) -> ProseBlock:
        path = self.heading_path() + ((caption,) if caption else ())
        lines = [it for it in items if isinstance(it, Line)]
        tables = [it for it in items if isinstance(it, Table)]
        return ProseBlock(
            heading_path=path,
            lines=lines,
            tables=tables,
            section=self.section[0] if self.section else "",
            region=self.h1,
        )

    # ------------------------------------------------------------------ events
    def on_heading(self, heading: Heading) -> None:
        self.close_rec()
        self.flush_supplement()
        if heading.level <= 4:
            self.last_rec = None
        if heading.level == 2:
            numbered = split_numbered(heading.text)
            self.section = numbered if numbered else ("", heading.text)
            self.subsection = None
            self.h4 = None
        elif heading.level == 3:
            self.subsection = heading.text
            self.h4 = None
        elif heading.level == 4:
            self.h4 = heading.text
        else:
            self.supplement = _Supplement(caption=heading.text, kind="table")

    def on_table(self, table: Table) -> None:
        self.close_rec()
        if self.supplement is None or self.supplement.kind == "prose":
            self.flush_supplement()
            self.supplement = _Supplement(caption=None, kind="table")
        self.supplement.items.append(table)

    def on_line(self, line: Line) -> None:
        margin = self.doc.margin_x
        if is_rec_id(line.words[0].text) and abs(line.x0 - margin) <= 2.0:
            self.close_rec()
            self.flush_supplement()
            if self.section is None:
                self.warnings.append(f"recommendation {line.words[0].text} outside a numbered section")
            section = self.section or ("", "")
            body = line.without_first_word()
            rec = RecDraft(
                id=line.words[0].text,
                section=section[0],
                section_title=section[1],
                subsection=self.subsection,
                heading_path=self.heading_path(),
            )
            if body is not None:
                rec.lines.append(body)
                rec.indent = body.x0
            self.rec = rec
            return
        if self.rec is not None:
            if not self.rec.lines:
                self.rec.lines.append(line)
                self.rec.indent = line.x0
                return
            if line.x0 >= self.rec.indent - 3.0:
                self.rec.lines.append(line)
                return
            self.close_rec()
        kind = "panel" if line.x0 > margin + 5.0 else "prose"
        sup = self.supplement
        if sup is not None and (sup.kind == kind or (sup.kind == "table" and not sup.items)):
            sup.items.append(line)
            if sup.kind == "table" and not any(isinstance(it, Table) for it in sup.items):
                sup.kind = kind
            return
        self.flush_supplement()
        self.supplement = _Supplement(caption=None, kind=kind, items=[line])

    def run(self, region: Region) -> None:
        self.h1 = region.title
        self.section = None
        self.subsection = None
        self.h4 = None
        for el in region.elements:
            if isinstance(el, Heading):
                self.on_heading(el)
            elif isinstance(el, Table):
                self.on_table(el)
            else:
                self.on_line(el)
        self.close_rec()
        self.flush_supplement()
        self.last_rec = None


def parse_part_a(doc: Document, doc_regions: list[Region] | None = None) -> PartA:
    """Recommendation drafts and Part A prose from the numbered-section regions."""
    parser = _PartAParser(doc)
    for region in doc_regions if doc_regions is not None else regions(doc):
        if region.numbered_sections:
            parser.run(region)
    return PartA(parser.drafts, parser.prose, parser.scope, parser.warnings)


def _id_key(rec_id: str) -> tuple[int, ...]:
    return tuple(int(p) for p in rec_id.split("."))


def check_numbering(ids: list[str]) -> list[str]:
    """Warnings for duplicated, missing or out-of-order recommendation numbers."""
    warnings: list[str] = []
    seen: set[str] = set()
    for rec_id in ids:
        if rec_id in seen:
            warnings.append(f"recommendation {rec_id} appears more than once")
        seen.add(rec_id)
    keys = [_id_key(i) for i in ids]
    if keys != sorted(keys):
        warnings.append("recommendation numbers are out of order")
    by_section: dict[tuple[int, ...], list[int]] = {}
    for key in keys:
        by_section.setdefault(key[:-1], []).append(key[-1])
    for section, numbers in sorted(by_section.items()):
        for expected in range(1, max(numbers) + 1):
            if expected not in numbers:
                sec = ".".join(str(p) for p in section)
                warnings.append(f"recommendation {sec}.{expected} is missing (numbering gap)")
    sections = sorted({k[:2] for k in keys})
    for (major, minor), (major2, minor2) in itertools.pairwise(sections):
        if major == major2 and minor2 != minor + 1:
            warnings.append(f"section {major}.{minor + 1} has no recommendations (numbering gap)")
    return warnings


def draft_text(draft: RecDraft, doc: Document) -> str:
    """Verbatim recommendation text, with an attached table/panel as further lines."""
    parts = [render_lines(draft.lines, doc.line_pitch)]
    for title, block in zip(draft.attachment_titles, draft.attachments, strict=True):
        if title:
            parts.append(title)
        parts.extend(_render_items(block, doc.line_pitch))
    return "\n".join(p for p in parts if p)


def _scope_for(part: PartA, draft: RecDraft) -> list[str]:
    notes = part.scope_notes
    return [*notes.get((draft.section, None), []), *notes.get((draft.section, draft.subsection), [])]


def highlights(draft: RecDraft) -> list[TextBox]:
    """One box per printed line of the recommendation (its own lines, then its attached
    bullets and tables), for the guideline viewer to highlight."""
    boxes: list[TextBox] = []
    items: list[Line | Table] = [*draft.lines, *(it for block in draft.attachments for it in block)]
    for it in sorted(items, key=lambda i: (i.page_index, i.top)):
        if isinstance(it, Line):
            x0, top, x1, bottom = it.x0, it.top, it.x1, it.bottom
        else:
            x0, top, x1, bottom = it.bbox
        boxes.append(
            TextBox(
                page=it.page,
                page_index=it.page_index,
                x0=round(x0, 1),
                top=round(top, 1),
                x1=round(x1, 1),
                bottom=round(bottom, 1),
            )
        )
    return boxes


def to_recommendations(
    part: PartA, doc: Document, groups: AgeGroups
) -> tuple[list[Recommendation], list[str]]:
    """Classified Recommendation models, plus structure warnings."""
    warnings = list(part.warnings)
    recs: list[Recommendation] = []
    for draft in part.drafts:
        text = draft_text(draft, doc)
        if not draft.lines:
            warnings.append(f"recommendation {draft.id} has no text")
            continue
        tags = year_tags(render_lines(draft.lines, doc.line_pitch))
        if not tags:
            warnings.append(f"recommendation {draft.id} does not end with a year tag such as [2015]")
        if not draft.id.startswith(draft.section + "."):
            warnings.append(f"recommendation {draft.id} is under section {draft.section}")
        found = classify(draft.id, text, _scope_for(part, draft), groups)
        recs.append(
            Recommendation(
                id=draft.id,
                section=draft.section,
                section_title=draft.section_title,
                subsection_title=draft.subsection,
                cancer_site=cancer_site(draft.section_title, draft.subsection),
                page=draft.page,
                page_end=draft.page_end,
                text=text,
                text_hash=text_hash(text),
                year_tags=tags,
                highlights=highlights(draft),
                action=found.action,  # type: ignore[arg-type]
                strength=found.strength,  # type: ignore[arg-type]
                timeframe=found.timeframe,  # type: ignore[arg-type]
                population=found.population,
            )
        )
    warnings.extend(check_numbering([r.id for r in recs]))
    return recs, warnings


def parse_recommendations(pdf_path: str | os.PathLike[str]) -> list[Recommendation]:
    """All numbered recommendations of the PDF (criteria left empty: criteria_status "none")."""
    doc = load_document(pdf_path)
    doc_regions = regions(doc)
    part = parse_part_a(doc, doc_regions)
    if not part.drafts:
        raise KnowledgeBaseError(f"{pdf_path} has no numbered recommendations: not the NG12 guideline")
    recs, _ = to_recommendations(part, doc, age_groups(doc_regions))
    return recs
