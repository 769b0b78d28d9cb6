"""Build the NG12 knowledge base from the PDF and write it atomically.

`parse_guideline` does the PDF work once (layout, Part A, Part B, prose, metadata);
`assemble` adds criteria and the lexicon (owned by `criteria` and `lexicon`) and the
retrieval chunks; `build_knowledge_base` is both. `write_knowledge_base` writes the JSON to a
temporary file in the target directory and renames it over the target, so readers never see
a partial file and nothing is written when the build fails.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ng12_common.knowledge import (
    GuidelineMeta,
    KBReport,
    KnowledgeBase,
    LexiconEntry,
    Recommendation,
    SymptomRow,
)

from ingestion.kb.chunks import prose_chunks, recommendation_chunks, row_chunks
from ingestion.kb.criteria import attach_criteria
from ingestion.kb.errors import KnowledgeBaseError
from ingestion.kb.layout import Document, load_document
from ingestion.kb.lexicon import build_lexicon, synonyms_for_text
from ingestion.kb.meta import guideline_meta
from ingestion.kb.part_a import parse_part_a, to_recommendations
from ingestion.kb.part_b import is_part_b, parse_part_b
from ingestion.kb.prose import collect_prose
from ingestion.kb.structure import ProseBlock, regions
from ingestion.kb.terms import age_groups


@dataclass(slots=True)
class ParsedGuideline:
    """Everything read from the PDF, before criteria, lexicon and chunks."""

    doc: Document
    guideline: GuidelineMeta
    recommendations: list[Recommendation]
    symptom_rows: list[SymptomRow]
    prose: list[ProseBlock]
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def parse_guideline(pdf_path: str | os.PathLike[str], workers: int | None = None) -> ParsedGuideline:
    """Parse the PDF; raises KnowledgeBaseError for bad input or a PDF that is not NG12."""
    doc = load_document(pdf_path, workers=workers)
    doc_regions = regions(doc)
    part_a = parse_part_a(doc, doc_regions)
    if not part_a.drafts:
        raise KnowledgeBaseError(
            f"{pdf_path} has no numbered recommendations (no 'Recommendations organised by site of "
            "cancer' structure): it is not the NG12 guideline"
        )
    recs, rec_warnings = to_recommendations(part_a, doc, age_groups(doc_regions))
    part_b = parse_part_b(doc, doc_regions, {r.id for r in recs})
    handled = {i for i, r in enumerate(doc_regions) if r.numbered_sections or is_part_b(r)}
    other_prose, prose_warnings = collect_prose(doc_regions, handled)
    meta, meta_warnings = guideline_meta(doc, doc_regions)
    warnings = [*doc.warnings, *meta_warnings, *rec_warnings, *part_b.warnings, *prose_warnings]
    counts = {
        "pages": doc.page_count,
        "recommendations": len(recs),
        "symptom_rows": len(part_b.rows),
        "symptom_tables": part_b.tables,
        "symptom_rows_merged_across_pages": part_b.merged_rows,
        "unresolved_references": len(part_b.unresolved),
        "symptom_rows_without_references": sum(1 for r in part_b.rows if not r.references),
    }
    return ParsedGuideline(
        doc=doc,
        guideline=meta,
        recommendations=recs,
        symptom_rows=part_b.rows,
        prose=[*part_a.prose, *part_b.prose, *other_prose],
        warnings=warnings,
        counts=counts,
    )


def enrich(
    recommendations: list[Recommendation], rows: list[SymptomRow]
) -> tuple[dict[str, Any], list[LexiconEntry]]:
    """Criteria (set in place on the recommendations) and the lexicon."""
    coverage = attach_criteria(recommendations)
    lexicon = build_lexicon(recommendations, rows)
    return coverage, lexicon


def assemble(parsed: ParsedGuideline) -> KnowledgeBase:
    """The knowledge base from a parse (the parse itself is not modified)."""
    recs = [r.model_copy(deep=True) for r in parsed.recommendations]
    rows = [r.model_copy(deep=True) for r in parsed.symptom_rows]
    coverage, lexicon = enrich(recs, rows)

    def synonyms(text: str) -> list[str]:
        return synonyms_for_text(text, lexicon)

    chunks = [
        *recommendation_chunks(recs, synonyms),
        *row_chunks(rows, {r.id: r for r in recs}),
        *prose_chunks(parsed.prose, parsed.doc),
    ]
    ids = Counter(c.id for c in chunks)
    warnings = list(parsed.warnings)
    warnings += [f"chunk id {cid} is not unique" for cid, n in ids.items() if n > 1]
    by_type = Counter(c.doc_type for c in chunks)
    counts = {
        **parsed.counts,
        "chunks": len(chunks),
        **{f"chunks_{t}": by_type.get(t, 0) for t in ("rule_canonical", "rule_search", "symptom_index", "guideline_text")},
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
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
