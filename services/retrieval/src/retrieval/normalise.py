"""Query normalisation: GP shorthand written out in NG12's words, lexicon synonyms expanded.

Built once per index version (the lexicon belongs to the version) by serving.load_serving_index.
"""

from __future__ import annotations

import re
from typing import Any

#: GP shorthand -> the guideline's wording. Replaced in place (the embedder reads "pts" and "2ww" as
#: noise: "what info should pts get when I refer them on a 2WW?" scores 0.22 against 1.14.5, written
#: out 0.64). General clinical and administrative abbreviations, not the lexicon's symptom synonyms.
SHORTHAND: dict[str, str] = {
    "pt": "patient",
    "pts": "patients",
    "pt's": "patient's",
    "appt": "appointment",
    "appts": "appointments",
    "info": "information",
    "2ww": "suspected cancer pathway referral",
    "2 ww": "suspected cancer pathway referral",
    "2/52 wait": "suspected cancer pathway referral",
    "two week wait": "suspected cancer pathway referral",
    "2 week wait": "suspected cancer pathway referral",
    "2-week wait": "suspected cancer pathway referral",
    "dna": "miss",
    "dnas": "missed appointments",
    "dna'd": "missed",
    "wt": "weight",
    "ln": "lymph node",
    "lns": "lymph nodes",
    "lnp": "lymphadenopathy",
    "plts": "platelets",
    "plt": "platelets",
    "ogd": "upper gastrointestinal endoscopy",
    "uss": "ultrasound scan",
    "cxr": "chest x-ray",
    "xr": "x-ray",
    "ca": "cancer",
    "paeds": "children",
    "kids": "children",
    "kid": "child",
    "abdo": "abdominal",
    "bx": "biopsy",
    "sx": "symptoms",
    "dx": "diagnosis",
    "hx": "history",
    "fhx": "family history",
    "yo": "year old",
    "y/o": "year old",
    "yrs": "years",
    "wks": "weeks",
    "mths": "months",
    "sec care": "secondary care",
    "a+g": "advice and guidance",
    "a&g": "advice and guidance",
    "gi": "gastrointestinal",
    "ugi": "upper gastrointestinal",
    "re": "about",
    "w/": "with",
    "w": "with",
    "pmh": "past medical history",
}
_SHORTHAND = re.compile(
    r"(?<![\w/&+'-])("
    + "|".join(re.escape(k) for k in sorted(SHORTHAND, key=len, reverse=True))
    + r")(?![\w/&+'-]| ?\d)"
)


def expand_shorthand(text: str) -> str:
    """`text` (lower case) with GP shorthand written out in NG12's words."""
    return _SHORTHAND.sub(lambda m: SHORTHAND[m.group(1)], text)


class QueryNormaliser:
    """Lower-cases a query, writes out GP shorthand and appends the guideline wording of every
    lexicon synonym in it.

    One compiled alternation of all synonyms (longest first), built once per index version.
    """

    def __init__(self, lexicon: list[dict[str, Any]]) -> None:
        self.label_of: dict[str, str] = {}
        for term in lexicon:
            label = str(term.get("label", "")).lower().strip()
            for syn in [*term.get("synonyms", []), label]:
                s = str(syn).lower().strip()
                if s and label and s not in self.label_of:
                    self.label_of[s] = label
        alternation = "|".join(re.escape(s) for s in sorted(self.label_of, key=len, reverse=True))
        self._pattern = re.compile(rf"(?<![a-z0-9])(?:{alternation})(?![a-z0-9])") if alternation else None

    def labels_in(self, text: str) -> list[str]:
        """Guideline wording of every lexicon term found in (lower-cased) text."""
        if self._pattern is None:
            return []
        return [self.label_of[m.group(0)] for m in self._pattern.finditer(text.lower())]

    def __call__(self, query: str) -> str:
        text = re.sub(r"\s+", " ", query.lower()).strip()
        expanded = expand_shorthand(text)
        if self._pattern is None:
            return expanded
        additions = self.labels_in(text)  # the lexicon's synonyms as typed ("pr bleed", "fbc")
        extra = [a for a in dict.fromkeys(additions) if a not in expanded]
        return " ".join([expanded, *extra]) if extra else expanded
