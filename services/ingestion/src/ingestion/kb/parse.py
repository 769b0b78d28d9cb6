"""Parse the NG12 PDF once: layout, Part A, Part B, prose and metadata (no enrichment).

The result is what the knowledge base is assembled from (`builder.assemble`); it does not
depend on the criteria or lexicon modules, so parsing can be tested on its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ingestion.kb.errors import KnowledgeBaseError
from ingestion.kb.layout import Document, load_document
from ingestion.kb.meta import guideline_meta
from ingestion.kb.part_a import parse_part_a, to_recommendations
from ingestion.kb.part_b import is_part_b, parse_part_b
from ingestion.kb.prose import collect_prose
from ingestion.kb.structure import ProseBlock, regions
from ingestion.kb.terms import age_groups
from ng12_common.knowledge import GuidelineMeta, Recommendation, SymptomRow


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
