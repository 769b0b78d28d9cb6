"""Page layout of the NG12 PDF: words, lines, tables and headings, read once per page.

This is the only module that talks to pdfplumber. It validates the file, extracts every
page's words (with font name and size) and ruled tables exactly once, strips the running
header and the copyright footer, reads the printed page number from the footer ("Page 9
of 95" -> 9) and groups the remaining words into lines. Everything downstream (Part A,
Part B, prose) works on these plain, picklable objects.

Parsing a page with pdfminer dominates the build time (~120 ms/page), so pages can be
extracted in a small process pool; each worker opens the PDF once.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pdfplumber
from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
from pdfminer.pdfparser import PDFSyntaxError

from ingestion.kb.errors import KnowledgeBaseError

BBox = tuple[float, float, float, float]  # x0, top, x1, bottom

#: Glyphs the PDF uses as list bullets (level is taken from their x position, not the glyph).
BULLET_GLYPHS = frozenset({"\u2022", "\uff0d", "\u25e6", "\u25aa", "\u2023", "\u25cb", "\u25cf"})
_BOLD_FONT = re.compile(r"(semibold|bold|black|heavy|demi)", re.IGNORECASE)
_PRINTED_PAGE = re.compile(r"\bPage\s+(\d+)\s+of\b")
_SPACE_GAP = 1.0  # pt: a smaller horizontal gap between two "words" is not a space
_LINE_TOLERANCE = 3.0  # pt: words whose vertical centres differ by less are on one line


@dataclass(frozen=True, slots=True)
class Word:
    """One word as pdfplumber extracted it (coordinates in pt, top-left origin)."""

    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    font: str
    size: float

    @property
    def bold(self) -> bool:
        return bool(_BOLD_FONT.search(self.font))

    @property
    def centre(self) -> float:
        return (self.top + self.bottom) / 2


def join_words(words: Sequence[Word]) -> str:
    """Words of one line as text: a space only where the PDF leaves a gap.

    Words are split where the font changes, so "and" + ":" in another font is one word.
    """
    out = ""
    prev: Word | None = None
    for w in words:
        if prev is not None and w.x0 - prev.x1 > _SPACE_GAP:
            out += " "
        out += w.text
        prev = w
    return out


@dataclass(frozen=True, slots=True)
class Line:
    """Words sharing a baseline, left to right, on one page."""

    page_index: int  # 0-based PDF page index
    page: int  # printed page number
    words: tuple[Word, ...]

    @property
    def text(self) -> str:
        return join_words(self.words)

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def top(self) -> float:
        return min(w.top for w in self.words)

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)

    @property
    def bottom(self) -> float:
        return max(w.bottom for w in self.words)

    @property
    def size(self) -> float:
        """Font size of the text (bullet glyphs and small rec numbers ignored)."""
        return max(w.size for w in self.words)

    @property
    def bold(self) -> bool:
        return all(w.bold for w in self.words)

    @property
    def starts_with_bullet(self) -> bool:
        return self.words[0].text in BULLET_GLYPHS

    def without_first_word(self) -> Line | None:
        if len(self.words) < 2:
            return None
        return Line(self.page_index, self.page, self.words[1:])


@dataclass(frozen=True, slots=True)
class Cell:
    bbox: BBox
    lines: tuple[Line, ...]

    @property
    def text(self) -> str:
        return " ".join(line.text for line in self.lines)

    @property
    def words(self) -> tuple[Word, ...]:
        return tuple(w for line in self.lines for w in line.words)


@dataclass(frozen=True, slots=True)
class Table:
    """A ruled table found by pdfplumber, with the page's words assigned to its cells."""

    page_index: int
    page: int
    bbox: BBox
    rows: tuple[tuple[Cell, ...], ...]

    @property
    def top(self) -> float:
        return self.bbox[1]


@dataclass(slots=True)
class PageLayout:
    index: int  # 0-based PDF page index
    number: int  # printed page number
    lines: list[Line]  # content lines outside tables (header/footer removed)
    tables: list[Table]

    def items(self) -> list[Line | Table]:
        """Lines and tables in reading (top-to-bottom) order."""
        items: list[Line | Table] = [*self.lines, *self.tables]
        return sorted(items, key=lambda it: it.top)


@dataclass(slots=True)
class Document:
    """The laid-out PDF plus typography measured from it."""

    path: Path
    sha256: str
    page_count: int
    pages: list[PageLayout]
    body_size: float  # most common font size of words
    margin_x: float  # most common left edge of lines
    line_pitch: float  # most common top-to-top distance of consecutive body lines
    heading_sizes: tuple[float, ...]  # distinct bold heading sizes, largest first
    warnings: list[str] = field(default_factory=list)

    def heading_level(self, line: Line) -> int | None:
        """1.. for headings by size (largest = 1); len(heading_sizes)+1 for bold body-size titles.

        Only bold lines starting at the left margin count: indented bold text (panel titles,
        bold year tags) is content.
        """
        if not line.bold or abs(line.x0 - self.margin_x) > 2.0:
            return None
        size = line.size
        for level, heading_size in enumerate(self.heading_sizes, start=1):
            if abs(size - heading_size) < 0.25:
                return level
        if abs(size - self.body_size) < 0.25:
            return len(self.heading_sizes) + 1
        return None

    def iter_items(self, start: int = 0, stop: int | None = None) -> Iterator[Line | Table]:
        for page in self.pages[start:stop]:
            yield from page.items()


# --------------------------------------------------------------------------- extraction


@dataclass(frozen=True, slots=True)
class _RawPage:
    index: int
    height: float
    words: tuple[Word, ...]
    tables: tuple[tuple[BBox, tuple[tuple[BBox | None, ...], ...]], ...]


def _raw_page(page: Any, index: int) -> _RawPage:
    words = tuple(
        Word(
            text=str(w["text"]),
            x0=float(w["x0"]),
            x1=float(w["x1"]),
            top=float(w["top"]),
            bottom=float(w["bottom"]),
            font=str(w.get("fontname", "")),
            size=float(w.get("size", 0.0)),
        )
        for w in page.extract_words(extra_attrs=["fontname", "size"])
    )
    tables = []
    for table in page.find_tables():
        rows = tuple(
            tuple(tuple(float(v) for v in cell) if cell else None for cell in row.cells)  # type: ignore[misc]
            for row in table.rows
        )
        tables.append((tuple(float(v) for v in table.bbox), rows))
    return _RawPage(index=index, height=float(page.height), words=words, tables=tuple(tables))  # type: ignore[arg-type]


def _extract_range(path: str, indices: Sequence[int]) -> list[_RawPage]:
    """Open the PDF once and extract the given pages (runs in a worker process)."""
    out: list[_RawPage] = []
    with pdfplumber.open(path) as pdf:
        for i in indices:
            page = pdf.pages[i]
            out.append(_raw_page(page, i))
            page.close()
    return out


def _check_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise KnowledgeBaseError(f"PDF not found: {path}") from exc
    except OSError as exc:
        raise KnowledgeBaseError(f"cannot read {path}: {exc}") from exc
    if not data:
        raise KnowledgeBaseError(f"{path} is an empty file, not a PDF")
    if b"%PDF-" not in data[:1024]:
        raise KnowledgeBaseError(f"{path} is not a PDF (no %PDF- header)")
    if b"%%EOF" not in data[-2048:]:
        raise KnowledgeBaseError(f"{path} is a truncated PDF (no %%EOF marker at the end of the file)")
    return data


def _pdfminer_cause(exc: BaseException) -> BaseException:
    """pdfplumber wraps pdfminer errors in PdfminerException(original)."""
    if exc.args and isinstance(exc.args[0], BaseException):
        return exc.args[0]
    return exc.__context__ or exc


def _open_count(path: Path) -> int:
    try:
        with pdfplumber.open(path) as pdf:
            if getattr(pdf.doc, "encryption", None):
                raise KnowledgeBaseError(f"{path} is an encrypted PDF; provide an unencrypted copy")
            return len(pdf.pages)
    except KnowledgeBaseError:
        raise
    except Exception as exc:  # pdfminer raises many unrelated types on broken files
        cause = _pdfminer_cause(exc)
        if isinstance(cause, (PDFPasswordIncorrect, PDFEncryptionError)):
            raise KnowledgeBaseError(f"{path} is an encrypted PDF; provide an unencrypted copy") from exc
        if isinstance(cause, PDFSyntaxError):
            raise KnowledgeBaseError(f"{path} is a damaged or truncated PDF: {cause}") from exc
        detail = f"{type(cause).__name__}: {cause}".rstrip(": ")
        raise KnowledgeBaseError(f"{path} cannot be read as a PDF ({detail})") from exc


def _extract_parallel(path: Path, indices: list[int], workers: int) -> list[_RawPage] | None:
    """Pages extracted by `workers` processes, or None if a pool cannot be used here."""
    if multiprocessing.current_process().daemon:
        return None  # e.g. a Celery prefork child: daemonic processes cannot have children
    chunks = [indices[k::workers] for k in range(workers)]
    try:
        # "spawn": safe inside threaded servers (gRPC); each worker opens the PDF once.
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
            parts = list(pool.map(_extract_range, [str(path)] * workers, chunks))
    except (BrokenProcessPool, OSError):
        return None  # no process pool here (sandbox, resource limits): parse in this process
    return sorted((p for part in parts for p in part), key=lambda p: p.index)


def _extract_all(path: Path, page_count: int, workers: int) -> list[_RawPage]:
    indices = list(range(page_count))
    try:
        if workers > 1 and page_count >= 8:
            pages = _extract_parallel(path, indices, workers)
            if pages is not None:
                return pages
        return _extract_range(str(path), indices)
    except KnowledgeBaseError:
        raise
    except Exception as exc:
        raise KnowledgeBaseError(f"{path} cannot be parsed: {type(exc).__name__}: {exc}") from exc


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


# --------------------------------------------------------------------------- lines


def group_lines(words: Sequence[Word], page_index: int, page: int) -> list[Line]:
    """Cluster words into lines by vertical centre, then order each line left to right."""
    ordered = sorted(words, key=lambda w: (w.centre, w.x0))
    groups: list[list[Word]] = []
    centres: list[float] = []
    for w in ordered:
        if groups and abs(centres[-1] - w.centre) <= _LINE_TOLERANCE:
            groups[-1].append(w)
        else:
            groups.append([w])
            centres.append(w.centre)
    return [Line(page_index, page, tuple(sorted(g, key=lambda w: w.x0))) for g in groups]


def _inside(word: Word, bbox: BBox) -> bool:
    cx = (word.x0 + word.x1) / 2
    return bbox[0] - 1 <= cx <= bbox[2] + 1 and bbox[1] - 1 <= word.centre <= bbox[3] + 1


def _build_tables(raw: _RawPage, words: list[Word], page: int) -> tuple[list[Table], list[Word]]:
    """Assign words to table cells; return the tables and the words outside any table."""
    remaining = list(words)
    tables: list[Table] = []
    for bbox, rows in raw.tables:
        inside = [w for w in remaining if _inside(w, bbox)]
        if not inside:
            continue
        remaining = [w for w in remaining if not _inside(w, bbox)]
        built_rows: list[tuple[Cell, ...]] = []
        for row in rows:
            cells: list[Cell] = []
            for cell_bbox in row:
                if cell_bbox is None:
                    continue
                cell_words = [w for w in inside if _inside(w, cell_bbox)]
                cells.append(Cell(cell_bbox, tuple(group_lines(cell_words, raw.index, page))))
            built_rows.append(tuple(cells))
        tables.append(Table(raw.index, page, bbox, tuple(built_rows)))
    return tables, remaining


def _footer_cut(lines: list[Line], height: float) -> int:
    """Index of the first footer line (copyright / page-number block at the bottom)."""
    for i, line in enumerate(lines):
        if line.top > height * 0.85 and ("\u00a9" in line.text or _PRINTED_PAGE.search(line.text)):
            return i
    return len(lines)


def _mode(values: Sequence[float], default: float) -> float:
    if not values:
        return default
    return Counter(round(v, 1) for v in values).most_common(1)[0][0]


def load_document(pdf_path: str | os.PathLike[str], workers: int | None = None) -> Document:
    """Validate and lay out the whole PDF; raises KnowledgeBaseError for unusable input."""
    path = Path(pdf_path)
    data = _check_bytes(path)
    page_count = _open_count(path)
    if page_count == 0:
        raise KnowledgeBaseError(f"{path} has no pages")
    raws = _extract_all(path, page_count, default_workers() if workers is None else workers)
    warnings: list[str] = []

    # Lines per page, footer removed; the printed number comes from the footer.
    staged: list[tuple[_RawPage, int, list[Line], list[Table]]] = []
    for raw in raws:
        provisional = group_lines(raw.words, raw.index, raw.index + 1)
        cut = _footer_cut(provisional, raw.height)
        footer_text = " ".join(line.text for line in provisional[cut:])
        match = _PRINTED_PAGE.search(footer_text)
        number = int(match.group(1)) if match else raw.index + 1
        if not match and raw.index > 0:
            warnings.append(f"PDF page {raw.index + 1}: no 'Page N of M' footer; using the PDF page index")
        footer_top = provisional[cut].top if cut < len(provisional) else raw.height + 1
        content = [w for w in raw.words if w.centre < footer_top - 0.5]
        tables, outside = _build_tables(raw, content, number)
        staged.append((raw, number, group_lines(outside, raw.index, number), tables))

    # Running header: the first line text shared by at least half of the pages.
    firsts = Counter(lines[0].text for _, _, lines, _ in staged if lines)
    header = None
    if firsts:
        text, count = firsts.most_common(1)[0]
        if count >= max(2, page_count // 2):
            header = text
    pages: list[PageLayout] = []
    for raw, number, lines, tables in staged:
        if header is not None and lines and lines[0].text == header:
            lines = lines[1:]
        pages.append(PageLayout(raw.index, number, lines, tables))

    all_words = [w for raw in raws for w in raw.words]
    body_size = _mode([w.size for w in all_words], 12.0)
    body_lines = [ln for p in pages for ln in p.lines if abs(ln.size - body_size) < 0.25]
    margin_x = min(_mode([ln.x0 for ln in body_lines], 40.0), min((ln.x0 for ln in body_lines), default=40.0))
    pitches = [
        b.top - a.top
        for p in pages
        for a, b in zip(p.lines, p.lines[1:], strict=False)
        if abs(a.size - body_size) < 0.25
        and abs(b.size - body_size) < 0.25
        and 0 < b.top - a.top < 3 * body_size
    ]
    line_pitch = _mode(pitches, body_size * 1.5)
    # Heading sizes: bold lines at the margin larger than body text (the title page excluded).
    heading_sizes = sorted(
        {
            round(ln.size, 1)
            for p in pages[1:]
            for ln in p.lines
            if ln.bold and abs(ln.x0 - margin_x) <= 2.0 and ln.size > body_size + 0.5
        },
        reverse=True,
    )
    return Document(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        page_count=page_count,
        pages=pages,
        body_size=body_size,
        margin_x=margin_x,
        line_pitch=line_pitch,
        heading_sizes=tuple(heading_sizes),
        warnings=warnings,
    )
