"""Turning laid-out lines back into clean text.

Line breaks inside a paragraph become spaces (a line ending in a hyphen is joined without
one: "gender-" + "related" -> "gender-related"), bullet glyphs become "- " items at the
start of a new line, nested lists are indented two spaces per level, and paragraphs (a
larger vertical gap) start a new line. Nothing else is changed: the words are the PDF's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ingestion.kb.layout import Line, join_words

_YEAR_TAG = re.compile(r"\[(\d{4}(?:,?\s*amended\s+\d{4})?)\]")
_TRAILING_YEAR_TAG = re.compile(r"\[(\d{4}(?:,?\s*amended\s+\d{4})?)\]\s*$")
_REC_ID = re.compile(r"^\d+\.\d+\.\d+$")
_BULLET_PREFIX = re.compile(r"(?m)^\s*- ")


def join_fragment(left: str, right: str) -> str:
    """Join two wrapped pieces of one paragraph."""
    if not left:
        return right
    if left.endswith("-") and len(left) > 1 and left[-2].isalpha() and right[:1].isalpha():
        return left + right
    return f"{left} {right}"


def _new_paragraph(prev: Line, line: Line, pitch: float) -> bool:
    if line.page_index == prev.page_index:
        return line.top - prev.top > pitch + 2.5
    # Across a page break only a finished sentence followed by a capital starts a paragraph.
    return prev.text.rstrip().endswith((".", ":")) and line.text[:1].isupper()


def render_lines(lines: Sequence[Line], pitch: float) -> str:
    """Render lines as text with "- " bullet items and paragraph breaks."""
    return "\n".join(text for text, _first, _last in render_paragraphs(lines, pitch))


def render_paragraphs(lines: Sequence[Line], pitch: float) -> list[tuple[str, int, int]]:
    """Rendered output lines (paragraphs, bullet items) with the printed pages they start and end on."""
    out: list[str] = []
    pages: list[int] = []
    ends: list[int] = []
    stack: list[tuple[float, float]] = []  # open bullet levels: (glyph x0, text x0)
    prev: Line | None = None
    for line in lines:
        if line.starts_with_bullet:
            glyph_x = line.words[0].x0
            text_x = line.words[1].x0 if len(line.words) > 1 else glyph_x
            while stack and glyph_x < stack[-1][0] - 2.0:
                stack.pop()
            if stack and abs(glyph_x - stack[-1][0]) <= 2.0:
                stack[-1] = (glyph_x, text_x)
            else:
                stack.append((glyph_x, text_x))
            body = join_words(line.words[1:])
            out.append("  " * (len(stack) - 1) + "- " + body)
            pages.append(line.page)
            ends.append(line.page)
        elif prev is None or not out:
            out.append(line.text)
            pages.append(line.page)
            ends.append(line.page)
        elif _new_paragraph(prev, line, pitch):
            while stack and stack[-1][1] > line.x0 + 2.0:
                stack.pop()
            out.append("  " * len(stack) + line.text)
            pages.append(line.page)
            ends.append(line.page)
        else:
            out[-1] = join_fragment(out[-1], line.text)
            ends[-1] = line.page
        prev = line
    return list(zip(out, pages, ends, strict=True))


def flat_text(lines: Sequence[Line]) -> str:
    """All lines as one paragraph (cells such as a symptom or a cancer name)."""
    text = ""
    for line in lines:
        text = join_fragment(text, line.text)
    return text


def year_tags(text: str) -> list[str]:
    """The year tag ending a recommendation, split into its parts: "[2015, amended 2025]"."""
    match = _TRAILING_YEAR_TAG.search(text)
    if not match:
        return []
    return [part.strip() for part in match.group(1).split(",") if part.strip()]


def ends_with_year_tag(text: str) -> bool:
    return bool(_TRAILING_YEAR_TAG.search(text))


def is_rec_id(token: str) -> bool:
    return bool(_REC_ID.match(token))


def strip_bullets(text: str) -> str:
    """Text with the "- " bullet markers removed (for comparing words with the PDF)."""
    return _BULLET_PREFIX.sub(" ", text)
