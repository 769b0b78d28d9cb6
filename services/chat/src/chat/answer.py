"""The extractive placeholder answer: the retrieved NG12 passages quoted verbatim, cited.

Nothing is said that is not in the guideline text; later issues add guardrails, an
extractive sentence selector and an optional LLM narrative behind the same function.
"""

from __future__ import annotations

from ng12_common.models import Citation, Grounding

DISCLAIMER = "Guideline information to support clinical judgement; not a diagnosis or a referral decision."
NO_ANSWER = (
    "I could not find a passage in NG12 that answers this question, so I cannot answer it from the guideline."
)


def cite_tag(citation: Citation) -> str:
    """The citation tag, e.g. [NG12 p.9] or [NG12 p.9, rec 1.1.1]."""
    rec = f", rec {citation.recommendation_id}" if citation.recommendation_id else ""
    return f"[NG12 p.{citation.page}{rec}]"


def compose_answer(citations: list[Citation]) -> tuple[str, Grounding]:
    if not citations:
        return f"{NO_ANSWER}\n\n{DISCLAIMER}", "none"
    quotes = [f'> "{c.excerpt.strip()}" {cite_tag(c)}' for c in citations]
    body = "\n".join(["NG12 says:", *quotes])
    return f"{body}\n\n{DISCLAIMER}", "sufficient"
