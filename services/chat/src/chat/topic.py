"""The session topic: the most common cancer site among cited recommendations plus up to two
clinical terms the conversation named (never section numbers). Updated only on grounded answers
(sufficient or weak) that carry valid citations."""

from __future__ import annotations

from collections import Counter

from chat.clinical import ClinicalState
from chat.knowledge import Knowledge
from ng12_common.models import Citation, Grounding


def next_topic(
    current: str | None,
    grounding: Grounding,
    citations: list[Citation],
    turn: ClinicalState,
    knowledge: Knowledge | None,
) -> str | None:
    if grounding not in ("sufficient", "weak") or knowledge is None:
        return current
    sites = [
        knowledge.recs[c.recommendation_id].cancer_site
        for c in citations
        if c.recommendation_id in knowledge.recs
        and knowledge.recs[c.recommendation_id].cancer_site
        # the process sections (1.14-1.16) are about any site: the conversation's site stays
        and knowledge.recs[c.recommendation_id].cancer_site != "non-site-specific"
    ]
    if not sites:
        return current
    site = Counter(sites).most_common(1)[0][0]
    terms = [t for t in (s.replace("_", " ") for s in turn.symptoms) if not t.startswith(site)][:2]
    return " ".join([site, *terms])
