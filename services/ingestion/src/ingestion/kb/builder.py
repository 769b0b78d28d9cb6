"""Build the NG12 knowledge base from the PDF and write it atomically.

`parse.parse_guideline` does the PDF work once (layout, Part A, Part B, prose, metadata);
`assemble` adds criteria and the lexicon (owned by `criteria` and `lexicon`) and the
retrieval chunks; `build_knowledge_base` is both. `write_knowledge_base` writes the JSON to a
temporary file in the target directory and renames it over the target, so readers never see
a partial file and nothing is written when the build fails.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from ingestion.kb.chunks import prose_chunks, recommendation_chunks, row_chunks
from ingestion.kb.criteria import attach_criteria
from ingestion.kb.lexicon import build_lexicon, synonyms_for_text
from ingestion.kb.parse import ParsedGuideline, parse_guideline
from ng12_common.knowledge import KBReport, KnowledgeBase, LexiconEntry, Recommendation, SymptomRow

_DOC_TYPES = ("rule_canonical", "rule_search", "symptom_index", "guideline_text")

__all__ = ["assemble", "build_knowledge_base", "enrich", "parse_guideline", "write_knowledge_base"]


def enrich(
    recommendations: list[Recommendation], rows: list[SymptomRow]
) -> tuple[dict[str, Any], list[LexiconEntry]]:
    """Criteria (set in place on the recommendations) and the lexicon."""
    coverage = attach_criteria(recommendations)
    lexicon = build_lexicon(recommendations, rows)
    return coverage, lexicon


def assemble(parsed: ParsedGuideline, with_enrichment: bool = True) -> KnowledgeBase:
    """The knowledge base from a parse (the parse itself is not modified).

    with_enrichment=False skips criteria and lexicon (criteria_status stays "none", no
    synonyms); chunk ids do not depend on them.
    """
    recs = [r.model_copy(deep=True) for r in parsed.recommendations]
    rows = [r.model_copy(deep=True) for r in parsed.symptom_rows]
    coverage: dict[str, Any] = {}
    lexicon: list[LexiconEntry] = []
    if with_enrichment:
        coverage, lexicon = enrich(recs, rows)

    def synonyms(text: str) -> list[str]:
        return synonyms_for_text(text, lexicon) if lexicon else []

    chunks = [
        *recommendation_chunks(recs, synonyms),
        *row_chunks(rows, {r.id: r for r in recs}),
        *prose_chunks(parsed.prose, parsed.doc),
    ]
    ids = Counter(c.id for c in chunks)
    warnings = list(parsed.warnings)
    warnings += [f"chunk id {cid} is not unique" for cid, n in ids.items() if n > 1]
    by_type: Counter[str] = Counter(c.doc_type for c in chunks)
    counts = {
        **parsed.counts,
        "chunks": len(chunks),
        **{f"chunks_{t}": by_type.get(t, 0) for t in _DOC_TYPES},
        "lexicon_entries": len(lexicon),
        "warnings": len(warnings),
    }
    return KnowledgeBase(
        guideline=parsed.guideline,
        recommendations=recs,
        symptom_rows=rows,
        chunks=chunks,
        lexicon=lexicon,
        report=KBReport(counts=counts, warnings=warnings, criteria_coverage=coverage),
    )


def build_knowledge_base(pdf_path: str | os.PathLike[str], workers: int | None = None) -> KnowledgeBase:
    """Parse the NG12 PDF and assemble the knowledge base."""
    return assemble(parse_guideline(pdf_path, workers=workers))


def write_knowledge_base(kb: KnowledgeBase, out_path: str | os.PathLike[str]) -> Path:
    """Write `kb` as JSON atomically (temp file in the same directory + os.replace)."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(kb.model_dump_json(indent=1))
            fh.flush()
            os.fsync(fh.fileno())
        tmp.chmod(0o644)  # mkstemp creates 0600; the artifact is read by other services
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
