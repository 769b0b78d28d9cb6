"""Fixtures for the knowledge-base tests: the real NG12 PDF parsed ONCE per session.

`ng12_parsed` is the parse (no criteria/lexicon), `ng12_kb` the assembled knowledge base.
`ng12_reference` is an independent oracle for verbatim checks: the text of every page as
pdfium (a different PDF engine from pdfplumber/pdfminer) extracts it, running header and
footer removed, keyed by printed page number.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from ingestion.kb.parse import ParsedGuideline, parse_guideline
from ng12_common.knowledge import KnowledgeBase, normalise_text

DEFAULT_PDF = "/work/shared/ng12/ng12.pdf"
_FOOTER = re.compile(
    r"Suspected cancer: recognition and referral \(NG12\)\s*©.*?(Page\s+(\d+)\s+of\s*\d+)?\s*$", re.DOTALL
)
_BULLETS = re.compile(r"[\u2022\uff0d]")


def norm(text: str) -> str:
    """Comparable word sequence: bullets dropped, line-break hyphens closed, normalise_text."""
    t = text.replace("\ufffe", "-").replace("\u00ad", "-")
    t = _BULLETS.sub(" ", t)
    t = re.sub(r"(?m)^\s*- ", " ", t)  # the parser's "- " bullet markers
    t = normalise_text(t)
    return re.sub(r"(?<=\w)-\s+(?=\w)", "-", t)


@dataclass(frozen=True)
class Reference:
    pages: dict[int, str]  # printed page -> normalised text (header/footer removed)

    def span(self, first: int, last: int) -> str:
        return " ".join(self.pages[p] for p in range(first, last + 1) if p in self.pages)


@pytest.fixture(scope="session")
def ng12_pdf_path() -> Path:
    path = Path(os.environ.get("NG12_PDF") or DEFAULT_PDF)
    if not path.is_file():
        pytest.fail(f"the NG12 PDF is needed: set NG12_PDF (looked for {path})")
    return path


@pytest.fixture(scope="session")
def ng12_parsed(ng12_pdf_path: Path) -> ParsedGuideline:
    return parse_guideline(ng12_pdf_path)


@pytest.fixture(scope="session")
def ng12_kb(ng12_parsed: ParsedGuideline) -> KnowledgeBase:
    from ingestion.kb.builder import assemble  # criteria + lexicon: only the KB tests need them

    return assemble(ng12_parsed)


@pytest.fixture(scope="session")
def ng12_reference(ng12_pdf_path: Path) -> Reference:
    pdf = pdfium.PdfDocument(str(ng12_pdf_path))
    pages: dict[int, str] = {}
    try:
        for index in range(len(pdf)):
            raw = pdf[index].get_textpage().get_text_range()
            match = _FOOTER.search(raw)
            number = int(match.group(2)) if match and match.group(2) else index + 1
            body = raw[: match.start()] if match else raw
            pages[number] = norm(body)
    finally:
        pdf.close()
    return Reference(pages)


@pytest.fixture(scope="session")
def normalise() -> Callable[[str], str]:
    return norm
