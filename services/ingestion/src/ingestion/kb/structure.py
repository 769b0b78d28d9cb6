"""Document structure: headings, and the regions (top-level sections) they delimit.

Headings are recognised typographically (see `Document.heading_level`); a heading that
wraps over several lines is merged into one. Level-1 headings ("Recommendations organised
by site of cancer", "Terms used in this guideline", ...) split the document into regions
that the Part A, Part B and prose parsers consume.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingestion.kb.layout import Document, Line, Table

_NUMBERED_SECTION = re.compile(r"^(\d+\.\d+)\s+(.+)$")


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    page: int  # printed page
    page_index: int
    top: float


Element = Heading | Line | Table


@dataclass(slots=True)
class Region:
    """Everything under one level-1 heading (title "" for what precedes the first one)."""

    title: str
    page: int
    elements: list[Element] = field(default_factory=list)

    @property
    def numbered_sections(self) -> list[tuple[str, str]]:
        out = []
        for el in self.elements:
            if isinstance(el, Heading) and el.level == 2:
                match = _NUMBERED_SECTION.match(el.text)
                if match:
                    out.append((match.group(1), match.group(2)))
        return out

    @property
    def tables(self) -> list[Table]:
        return [el for el in self.elements if isinstance(el, Table)]

    @property
    def page_end(self) -> int:
        pages = [el.page for el in self.elements]
        return max(pages, default=self.page)


def split_numbered(text: str) -> tuple[str, str] | None:
    """ "1.1 Lung and pleural cancers" -> ("1.1", "Lung and pleural cancers")."""
    match = _NUMBERED_SECTION.match(text)
    return (match.group(1), match.group(2)) if match else None


def elements(doc: Document) -> list[Element]:
    """All headings, lines and tables in reading order, multi-line headings merged."""
    out: list[Element] = []
    prev_line: Line | None = None
    for page in doc.pages:
        for item in page.items():
            if isinstance(item, Table):
                out.append(item)
                prev_line = None
                continue
            level = doc.heading_level(item)
            if level is None:
                out.append(item)
                prev_line = None
                continue
            last = out[-1] if out else None
            if (
                isinstance(last, Heading)
                and prev_line is not None
                and last.level == level
                and last.page_index == item.page_index
                and item.top - prev_line.top < 2.0 * item.size
            ):
                out[-1] = Heading(level, f"{last.text} {item.text}", last.page, last.page_index, last.top)
            else:
                out.append(Heading(level, item.text, item.page, item.page_index, item.top))
            prev_line = item
    return out


def regions(doc: Document) -> list[Region]:
    """Split the document on level-1 headings."""
    out = [Region(title="", page=doc.pages[0].number if doc.pages else 1)]
    for el in elements(doc):
        if isinstance(el, Heading) and el.level == 1:
            out.append(Region(title=el.text, page=el.page))
        else:
            out[-1].elements.append(el)
    return out


@dataclass(slots=True)
class ProseBlock:
    """Running text that is not a numbered recommendation or a table row."""

    heading_path: tuple[str, ...]
    lines: list[Line] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    section: str = ""  # "1.13" inside Part A, else ""
    region: str = ""  # the level-1 heading it sits under

    @property
    def page(self) -> int:
        return min([ln.page for ln in self.lines] + [t.page for t in self.tables], default=0)

    @property
    def page_end(self) -> int:
        return max([ln.page for ln in self.lines] + [t.page for t in self.tables], default=0)
