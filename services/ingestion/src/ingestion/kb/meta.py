"""Guideline metadata read from the PDF's title page: title, code, publication dates."""

from __future__ import annotations

import re
from datetime import datetime

from ingestion.kb.layout import Document, Line
from ingestion.kb.structure import Region
from ng12_common.knowledge import GuidelineMeta

_PUBLISHED = re.compile(r"Published:?\s*(\d{1,2}\s+[A-Z][a-z]+\s+\d{4})")
_UPDATED = re.compile(r"Last updated:?\s*(\d{1,2}\s+[A-Z][a-z]+\s+\d{4})")
_CODE = re.compile(r"\b(NG\d+)\b", re.IGNORECASE)


def _iso(date_text: str) -> str:
    return datetime.strptime(re.sub(r"\s+", " ", date_text), "%d %B %Y").date().isoformat()


def guideline_meta(doc: Document, doc_regions: list[Region]) -> tuple[GuidelineMeta, list[str]]:
    """Metadata from the title page (the text before the first level-1 heading)."""
    warnings: list[str] = []
    front = [el for el in doc_regions[0].elements if isinstance(el, Line)] if doc_regions else []
    first_page = [ln for ln in front if ln.page_index == 0] or front
    text = " ".join(ln.text for ln in first_page)
    title = ""
    if first_page:
        largest = max(ln.size for ln in first_page)
        title = " ".join(ln.text for ln in first_page if abs(ln.size - largest) < 0.25)
    else:
        warnings.append("no title page text; guideline title unknown")
    dates: dict[str, str] = {}
    for key, pattern in (("published", _PUBLISHED), ("last_updated", _UPDATED)):
        match = pattern.search(text)
        if match:
            try:
                dates[key] = _iso(match.group(1))
            except ValueError:
                warnings.append(f"{key} date {match.group(1)!r} is not a date")
        else:
            warnings.append(f"no '{key.replace('_', ' ')}' date on the title page")
    all_text = text + " " + " ".join(ln.text for p in doc.pages[:3] for ln in p.lines)
    code = _CODE.search(all_text)
    meta = GuidelineMeta(
        title=title,
        code=code.group(1).upper() if code else "NG12",
        published=dates.get("published", ""),
        last_updated=dates.get("last_updated", dates.get("published", "")),
        page_count=doc.page_count,
        source_sha256=doc.sha256,
    )
    if not code:
        warnings.append("no guideline code (NGxx) found on the first pages")
    return meta, warnings
