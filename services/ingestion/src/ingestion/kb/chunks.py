"""Retrieval chunks built from the parsed guideline, with ids stable across runs.

- rule_canonical  "ng12:rec:<id>"    one per recommendation, the verbatim text.
- rule_search     "ng12:search:<id>" one per recommendation, enriched for search: title path,
                                     action/timeframe/population in words, the verbatim text
                                     and lexicon synonyms.
- symptom_index   SymptomRow.id      one per Part B row, heading path as prefix.
- guideline_text  "ng12:text:<hash>" prose split on headings (long sections by paragraph).

Ids depend only on the text (hashes of normalised text), never on run order or time.
Metadata holds JSON scalars and lists of strings only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ingestion.kb.layout import Document
from ingestion.kb.prose import block_paragraphs
from ingestion.kb.structure import ProseBlock
from ng12_common.actions import action_info
from ng12_common.knowledge import Chunk, Population, Recommendation, SymptomRow, text_hash

_MAX_PROSE_CHARS = 1500

_AGE_GROUP_WORDS = {
    "adults": "adults",
    "children_and_young_people": "children and young people",
    "children": "children",
    "young_people": "young people",
}


def describe_population(pop: Population) -> str:
    """ "women aged 50 and over", "children and young people (under 25)", "people of any age"."""
    who = {"female": "women", "male": "men"}.get(pop.sex, "")
    group = _AGE_GROUP_WORDS.get(pop.age_group, "")
    noun = group or who or "people"
    if group and who:
        noun = f"{group} ({who})"
    ages: list[str] = []
    if pop.min_age is not None:
        ages.append(f"aged {pop.min_age} and over")
    if pop.max_age_exclusive is not None:
        ages.append(f"aged under {pop.max_age_exclusive}")
    if not ages and not group and not who:
        return "people of any age"
    return " ".join([noun, " and ".join(ages)]).strip()


def rec_path(rec: Recommendation) -> list[str]:
    path = ["NG12", f"{rec.section} {rec.section_title}"]
    if rec.subsection_title:
        path.append(rec.subsection_title)
    path.append(rec.id)
    return path


def _rec_metadata(rec: Recommendation) -> dict[str, object]:
    return {
        "cancer_site": rec.cancer_site,
        "action": rec.action,
        "strength": rec.strength,
        "timeframe": rec.timeframe,
        "section_title": rec.section_title,
        "subsection_title": rec.subsection_title or "",
        "page_end": rec.page_end,
        "year_tags": list(rec.year_tags),
        "text_hash": rec.text_hash,
        "heading_path": rec_path(rec)[1:-1],
    }


def recommendation_chunks(
    recs: Sequence[Recommendation], synonyms: Callable[[str], list[str]] | None = None
) -> list[Chunk]:
    out: list[Chunk] = []
    for rec in recs:
        meta = _rec_metadata(rec)
        out.append(
            Chunk(
                id=f"ng12:rec:{rec.id}",
                doc_type="rule_canonical",
                text=rec.text,
                page=rec.page,
                section=rec.section,
                recommendation_ids=[rec.id],
                metadata=dict(meta),
            )
        )
        lines = [
            " > ".join(rec_path(rec)),
            f"Action: {action_info(rec.action).words}; strength: {rec.strength}; timeframe: {rec.timeframe}.",
            f"Applies to: {describe_population(rec.population)}. Cancer site: {rec.cancer_site}.",
            rec.text,
        ]
        found = synonyms(rec.text) if synonyms is not None else []
        if found:
            lines.append("Related terms: " + ", ".join(found))
        out.append(
            Chunk(
                id=f"ng12:search:{rec.id}",
                doc_type="rule_search",
                text="\n".join(lines),
                page=rec.page,
                section=rec.section,
                recommendation_ids=[rec.id],
                metadata={**meta, "synonyms": found},
            )
        )
    return out


def row_chunks(rows: Sequence[SymptomRow], recs_by_id: dict[str, Recommendation]) -> list[Chunk]:
    out: list[Chunk] = []
    for row in rows:
        text = "\n".join(
            [
                "NG12 symptom table > " + " > ".join(row.heading_path),
                f"Symptom and specific features: {row.symptom}",
                f"Possible cancer: {row.possible_cancer}",
                f"Recommendation: {row.recommendation_text}",
            ]
        )
        sites = sorted({recs_by_id[r].cancer_site for r in row.references if r in recs_by_id})
        actions = sorted({recs_by_id[r].action for r in row.references if r in recs_by_id})
        out.append(
            Chunk(
                id=row.id,
                doc_type="symptom_index",
                text=text,
                page=row.page,
                section=" > ".join(row.heading_path),
                recommendation_ids=list(row.references),
                metadata={
                    "heading_path": list(row.heading_path),
                    "possible_cancer": row.possible_cancer,
                    "cancer_sites": sites,
                    "actions": actions,
                    "page_end": row.page_end or row.page,
                },
            )
        )
    return out


def _split(paragraphs: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """(text, page, page_end) parts of at most ~1500 characters, split between paragraphs.

    The first paragraph is the heading; it is repeated at the top of every part.
    """
    if not paragraphs:
        return []
    heading, body = paragraphs[0][0], paragraphs[1:]
    total = sum(len(t) + 1 for t, _, _ in paragraphs)
    if total <= _MAX_PROSE_CHARS or not body:
        first = [p for _, p, _ in paragraphs]
        last = [p for _, _, p in paragraphs]
        return [("\n".join(t for t, _, _ in paragraphs), min(first), max(last))]
    groups: list[list[tuple[str, int, int]]] = [[]]
    size = len(heading)
    for para in body:
        if groups[-1] and size + len(para[0]) + 1 > _MAX_PROSE_CHARS:
            groups.append([])
            size = len(heading)
        groups[-1].append(para)
        size += len(para[0]) + 1
    return [
        ("\n".join([heading, *(t for t, _, _ in group)]), group[0][1], max(p for _, _, p in group))
        for group in groups
    ]


def prose_chunks(blocks: Sequence[ProseBlock], doc: Document) -> list[Chunk]:
    out: list[Chunk] = []
    seen: set[str] = set()
    for block in blocks:
        section = block.section or " > ".join(block.heading_path)
        for part, page, page_end in _split(block_paragraphs(block, doc)):
            chunk_id = "ng12:text:" + text_hash(f"{section}\n{part}")
            if chunk_id in seen:
                continue  # the same boxed reminder repeated at the top of two regions
            seen.add(chunk_id)
            mentioned = sorted(set(re.findall(r"\b1\.\d{1,2}\.\d{1,2}\b", part)))
            out.append(
                Chunk(
                    id=chunk_id,
                    doc_type="guideline_text",
                    text=part,
                    page=page,
                    section=section,
                    recommendation_ids=[],
                    metadata={
                        "heading_path": list(block.heading_path),
                        "region": block.region,
                        "page_end": page_end,
                        "mentions": mentioned,
                    },
                )
            )
    return out
