"""Fallback chunker: page/paragraph chunks straight from the PDF text, with printed page numbers.

Used only when a PDF cannot be turned into a structured knowledge base; the knowledge-base
builder (ingestion.kb) is the normal path.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pdfplumber

from ng12_common.knowledge import Chunk

_FOOTER = re.compile(r"©\s*NICE.*$", re.S)
_PAGE_OF = re.compile(r"Page\s+(\d+)\s+of\s+\d+")


def page_chunks(pdf_path: Path, max_words: int = 180) -> list[Chunk]:
    chunks: list[Chunk] = []
    with pdfplumber.open(pdf_path) as pdf:
        for index, page in enumerate(pdf.pages, start=1):
            raw = page.extract_text() or ""
            m = _PAGE_OF.search(raw)
            printed = int(m.group(1)) if m else index
            body = _FOOTER.sub("", raw)
            lines = [ln for ln in body.splitlines() if ln.strip() and "recognition and referral (NG12)" not in ln]
            buf: list[str] = []
            for line in [*lines, ""]:
                buf.append(line) if line else None
                words = sum(len(b.split()) for b in buf)
                if buf and (not line or words >= max_words):
                    text = "\n".join(buf).strip()
                    digest = hashlib.sha256(f"{printed}:{text}".encode()).hexdigest()[:12]
                    chunks.append(Chunk(id=f"ng12:page:{printed}:{digest}", doc_type="page_text", text=text,
                                        page=printed))
                    buf = []
    return chunks
