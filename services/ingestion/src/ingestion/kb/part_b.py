"""Part B: "Recommendations organised by symptom and findings of primary care investigations".

Every row of every ruled table becomes a SymptomRow. Cells come from pdfplumber's table
geometry (each word is assigned to the cell whose box contains it), never from line order,
because plain text extraction interleaves the three columns. Column roles are read from
each table's header row (the small bold "Symptom and specific features | Possible cancer |
Recommendation"), which repeats on every page. The heading path is the level-2 heading
("Abdominal symptoms") plus the bold table title ("Abdominal distension"); a table that
continues on the next page keeps the path of the page before, and a row split by a page
break (its first cells empty on the new page) is merged back into the row it continues.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingestion.kb.layout import Cell, Document, Line, Table, join_words
from ingestion.kb.structure import Heading, ProseBlock, Region
from ingestion.kb.text import flat_text, join_fragment, render_lines
from ng12_common.knowledge import SymptomRow, text_hash

_REFERENCE = re.compile(r"(\[)?\s*(\d+\.\d+\.\d+)\s*(\])?")


@dataclass(slots=True)
class PartB:
    rows: list[SymptomRow]
    prose: list[ProseBlock]
    warnings: list[str]
    unresolved: list[str] = field(default_factory=list)
    merged_rows: int = 0
    tables: int = 0


@dataclass(slots=True)
class _Columns:
    symptom: int
    cancer: int
    recommendation: int


@dataclass(slots=True)
class _RowDraft:
    path: tuple[str, ...]
    symptom: list[Line]
    cancer: list[Line]
    recommendation: list[Line]
    page: int
    page_end: int


def is_part_b(region: Region) -> bool:
    """A region of recommendation tables rather than numbered recommendations."""
    return not region.numbered_sections and any(_header_columns(t) is not None for t in region.tables)


def _is_header(row: tuple[Cell, ...], body_size: float) -> bool:
    words = [w for cell in row for w in cell.words]
    return bool(words) and all(w.size < body_size - 0.5 for w in words)


def _header_columns(table: Table) -> _Columns | None:
    for row in table.rows[:1]:
        names = [cell.text.lower() for cell in row]
        rec = next((i for i, n in enumerate(names) if "recommendation" in n), None)
        cancer = next((i for i, n in enumerate(names) if "cancer" in n), None)
        if rec is None or cancer is None:
            return None
        rest = [i for i in range(len(names)) if i not in (rec, cancer)]
        if not rest:
            return None
        return _Columns(symptom=rest[0], cancer=cancer, recommendation=rec)
    return None


def _features(lines: list[Line]) -> str:
    """The symptom cell minus its leading bold term: the specific features."""
    text = ""
    for line in lines:
        plain = [w for w in line.words if not w.bold]
        if plain:
            text = join_fragment(text, join_words(plain))
    return text


def references(text: str) -> tuple[list[str], list[str]]:
    """Bracketed recommendation ids in a cell, and the malformed brackets among them."""
    ids: list[str] = []
    malformed: list[str] = []
    for match in _REFERENCE.finditer(text):
        opening, rec_id, closing = match.groups()
        if not opening and not closing:
            continue  # a number in running text ("see recommendations 1.16.2 and 1.16.3")
        if rec_id not in ids:
            ids.append(rec_id)
        if not (opening and closing):
            malformed.append(match.group(0).strip())
    return ids, malformed


class _PartBParser:
    def __init__(self, doc: Document, rec_ids: set[str]) -> None:
        self.doc = doc
        self.rec_ids = rec_ids
        self.rows: list[SymptomRow] = []
        self.prose: list[ProseBlock] = []
        self.warnings: list[str] = []
        self.unresolved: list[str] = []
        self.merged = 0
        self.tables = 0
        self.h1 = ""
        self.h2 = ""
        self.title = ""
        self.columns: _Columns | None = None
        self.pending: _RowDraft | None = None
        self.previous_was_table = False
        self.last_table_page = -1
        self.block: ProseBlock | None = None

    def path(self) -> tuple[str, ...]:
        out: list[str] = []
        for part in (self.h2, self.title):
            if part and (not out or out[-1] != part):
                out.append(part)
        return tuple(out)

    def flush_row(self) -> None:
        draft, self.pending = self.pending, None
        if draft is None:
            return
        symptom = flat_text(draft.symptom)
        rec_text = render_lines(draft.recommendation, self.doc.line_pitch)
        cancer = flat_text(draft.cancer)
        if not (symptom or rec_text):
            return
        where = f"Part B row '{symptom[:60]}' (page {draft.page})"
        ids, malformed = references(rec_text)
        for bad in malformed:
            self.warnings.append(f"{where}: reference {bad!r} has a missing bracket")
        resolved = [i for i in ids if i in self.rec_ids]
        for rec_id in ids:
            if rec_id not in self.rec_ids:
                self.unresolved.append(rec_id)
                self.warnings.append(f"{where}: reference [{rec_id}] is not a Part A recommendation")
        if not ids:
            self.warnings.append(f"{where}: no recommendation reference")
        row_id = "ng12:row:" + text_hash("|".join([" > ".join(draft.path), symptom, rec_text]))
        if any(r.id == row_id for r in self.rows):
            n = sum(1 for r in self.rows if r.id.startswith(row_id))
            self.warnings.append(f"{where}: duplicate row (same heading, symptom and recommendation)")
            row_id = f"{row_id}-{n + 1}"
        self.rows.append(
            SymptomRow(
                id=row_id,
                heading_path=list(draft.path),
                symptom=symptom,
                features=_features(draft.symptom),
                possible_cancer=cancer,
                recommendation_text=rec_text,
                references=resolved,
                page=draft.page,
                page_end=draft.page_end if draft.page_end != draft.page else None,
            )
        )

    def flush_prose(self) -> None:
        if self.block is not None and self.block.lines:
            self.prose.append(self.block)
        self.block = None

    def on_table(self, table: Table) -> None:
        self.flush_prose()
        self.tables += 1
        continuation = self.previous_was_table and table.page_index != self.last_table_page
        self.last_table_page = table.page_index
        columns = _header_columns(table)
        if columns is not None:
            self.columns = columns
        elif self.columns is None:
            self.warnings.append(f"page {table.page}: table without a recognisable header row skipped")
            return
        cols = self.columns
        first_body = True
        for row in table.rows:
            if _is_header(row, self.doc.body_size):
                continue
            if len(row) <= max(cols.symptom, cols.cancer, cols.recommendation):
                self.warnings.append(f"page {table.page}: table row with {len(row)} cells skipped")
                continue
            symptom = list(row[cols.symptom].lines)
            cancer = list(row[cols.cancer].lines)
            rec = list(row[cols.recommendation].lines)
            if not (symptom or cancer or rec):
                continue
            if continuation and first_body and self.pending is not None and (not symptom or not cancer):
                # The row began on the previous page: its first cells are empty here.
                self.pending.symptom += symptom
                self.pending.cancer += cancer
                self.pending.recommendation += rec
                self.pending.page_end = table.page
                self.merged += 1
                first_body = False
                continue
            first_body = False
            self.flush_row()
            self.pending = _RowDraft(self.path(), symptom, cancer, rec, table.page, table.page)
        self.previous_was_table = True

    def on_heading(self, heading: Heading) -> None:
        self.flush_row()
        self.flush_prose()
        self.previous_was_table = False
        if heading.level <= 2:
            self.h2 = heading.text
            self.title = ""
        else:
            self.title = heading.text

    def on_line(self, line: Line) -> None:
        self.flush_row()
        self.previous_was_table = False
        if self.block is None:
            self.block = ProseBlock(heading_path=(self.h1, *self.path()), region=self.h1)
        self.block.lines.append(line)

    def run(self, region: Region) -> None:
        self.h1 = region.title
        self.h2 = ""
        self.title = ""
        for el in region.elements:
            if isinstance(el, Heading):
                self.on_heading(el)
            elif isinstance(el, Table):
                self.on_table(el)
            else:
                self.on_line(el)
        self.flush_row()
        self.flush_prose()


def parse_part_b(doc: Document, doc_regions: list[Region], rec_ids: set[str]) -> PartB:
    """Symptom rows (references resolved against `rec_ids`) and the prose between tables."""
    parser = _PartBParser(doc, rec_ids)
    for region in doc_regions:
        if is_part_b(region):
            parser.run(region)
    if parser.tables == 0:
        parser.warnings.append("no symptom tables found (Part B missing)")
    return PartB(parser.rows, parser.prose, parser.warnings, parser.unresolved, parser.merged, parser.tables)
