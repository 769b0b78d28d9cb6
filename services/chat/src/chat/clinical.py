"""Structured clinical state of a session: what the GP has said about the patient so far.

`extract` reads one message (age, sex, duration, symptom/finding concepts through the lexicon
concept matcher, cancer sites named); `ClinicalState.merged` folds a turn into the session's
state (newer values win). `to_facts` gives the criteria evaluator's PatientFacts.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from chat.results import patient_results
from ng12_common.criteria import PatientFacts, SymptomFact
from ng12_common.knowledge import LexiconEntry
from ng12_common.lexicon_match import match_concepts

_AGE_SEX = re.compile(r"\b(\d{1,3})(?:([MFmf])|\s([MF]))\b")  # "57M", "60f", "41 M": age and sex
_AGE = [
    re.compile(r"\b(\d{1,3})[- ]?(?:years?|yrs?|y)[- ]?old\b", re.I),
    re.compile(r"\b(?:aged?|age of)\s*(\d{1,3})\b", re.I),
    re.compile(r"\b(\d{1,3})\s*(?:yo|y/o|yr)\b", re.I),
    _AGE_SEX,
    re.compile(r"\b(?:they|he|she|patient|pt)(?:'re| are| is|'s| were| was)\s*(\d{1,3})\b", re.I),
    re.compile(r"\b(?:a|an)\s+(\d{1,3})\b(?! ?(?:mm|cm|days?|weeks?|months?))", re.I),
    # "Pt 58 with reflux", "woman, 62", "58 male", "62 year-old"
    re.compile(
        r"\b(?:pt|patient|man|woman|lady|gentleman|gent|male|female|boy|girl|mr|mrs|ms)\s*,?\s+(\d{1,3})\b"
        r"(?!\s*(?:mm|cm|kg|%|x|/|\.\d|days?|weeks?|wks?|months?|mths?|years? ago|hours?|points?))",
        re.I,
    ),
    re.compile(r"\b(\d{1,3})\s*(?:male|female|man|woman|lady|gent|gentleman|boy|girl)\b", re.I),
    # a bare number as the whole question: "what about 83?", "and at 19?", "47?"
    re.compile(
        r"^\s*(?:(?:and|so|but)\s+)?(?:(?:what|how) about\s+|at\s+|if\s+)?(\d{1,3})\s*[?.!]*\s*$", re.I
    ),
]
_AGE_BOUND = re.compile(r"\b(?:under|over|below|above|younger than|older than)\s+(\d{1,3})\b", re.I)
_FEMALE = re.compile(r"\b(woman|women|female|lady|girl|she|her|mother|wife)\b", re.I)
_MALE = re.compile(r"\b(man|men|male|gentleman|boy|he|his|him|father|husband)\b", re.I)
_DURATION = re.compile(r"\b(\d+(?:\.\d+)?)\s*(day|week|month|year)s?\b(?![- ]old)", re.I)
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


class ClinicalState(BaseModel):
    """What the conversation has established about the patient (display and query rewriting)."""

    cancer_sites: list[str] = Field(default_factory=list)
    symptoms: list[str] = Field(default_factory=list)  # lexicon concepts, in order mentioned
    modifiers: dict[str, list[str]] = Field(default_factory=dict)
    negated: list[str] = Field(default_factory=list)
    age: int | None = None
    sex: str | None = None
    duration_days: float | None = None
    tests: dict[str, float] = Field(default_factory=dict)  # the patient's results: {"psa": 4.1}

    def is_empty(self) -> bool:
        return not (self.cancer_sites or self.symptoms or self.age is not None or self.sex)

    @property
    def names_clinical_terms(self) -> bool:
        """The words named a symptom, sign or cancer site (not only an age, sex or duration)."""
        return bool(self.cancer_sites or self.symptoms or self.negated)

    def merged(self, turn: ClinicalState) -> ClinicalState:
        def union(a: list[str], b: list[str]) -> list[str]:
            return [*a, *[x for x in b if x not in a]]

        return ClinicalState(
            cancer_sites=union(turn.cancer_sites, self.cancer_sites)[:3],
            symptoms=union(self.symptoms, turn.symptoms)[-8:],
            modifiers={**self.modifiers, **turn.modifiers},
            negated=union(self.negated, turn.negated),
            age=turn.age if turn.age is not None else self.age,
            sex=turn.sex or self.sex,
            duration_days=turn.duration_days if turn.duration_days is not None else self.duration_days,
            tests={**self.tests, **turn.tests},
        )

    def to_facts(self) -> PatientFacts:
        return PatientFacts(
            age=self.age,
            sex=self.sex,  # type: ignore[arg-type]
            symptoms={
                s: SymptomFact(modifiers=set(self.modifiers.get(s, [])) | {"unexplained"})
                for s in self.symptoms
            },
            findings=set(self.symptoms),
            negated=set(self.negated),
            duration_days=int(self.duration_days) if self.duration_days is not None else None,
            tests=dict(self.tests),
        )

    def describe(self) -> str:
        parts: list[str] = []
        if self.age is not None:
            parts.append(f"aged {self.age}")
        if self.sex:
            parts.append(self.sex)
        parts.extend(s.replace("_", " ") for s in self.symptoms)
        parts.extend(self.cancer_sites)
        return " ".join(parts)


def asks_about_age(message: str) -> bool:
    """The question gives an age or an age bound ("aged 60", "what if they were 60", "under 40",
    "older than 50")."""
    return _age(message) is not None or bool(_AGE_BOUND.search(message))


def _age(text: str) -> int | None:
    for pattern in _AGE:
        m = pattern.search(text)
        if m and 0 <= int(m.group(1)) <= 120:
            return int(m.group(1))
    return None


def extract(message: str, lexicon: list[LexiconEntry], sites: set[str]) -> ClinicalState:
    """The clinical content of one message."""
    state = ClinicalState(age=_age(message), tests=patient_results(message))
    shorthand = _AGE_SEX.search(message)
    if shorthand:  # "57M", "60F": age and sex
        state.sex = "male" if (shorthand.group(2) or shorthand.group(3)).upper() == "M" else "female"
    elif _FEMALE.search(message) and not _MALE.search(message):
        state.sex = "female"
    elif _MALE.search(message) and not _FEMALE.search(message):
        state.sex = "male"
    duration = _DURATION.search(message)
    if duration:
        state.duration_days = float(duration.group(1)) * _DAYS[duration.group(2).lower()]
    if lexicon:
        for match in match_concepts(message, lexicon):
            if match.kind not in ("symptom", "finding"):
                continue
            if match.negated:
                state.negated.append(match.concept)
                continue
            state.symptoms.append(match.concept)
            if match.modifiers:
                state.modifiers[match.concept] = list(match.modifiers)
    lowered = message.lower()
    patterns = _site_patterns(sites)
    state.cancer_sites = [s for s, own, _ in patterns if s and own.search(lowered)]
    named = [s for s, _, others in patterns if any(p.search(lowered) for p in others)]
    if not state.cancer_sites:  # "lymphoma" names both lymphoma sites, "BCC" basal cell carcinoma
        state.cancer_sites = named
    else:  # a site named by its other name too: "neuroblastoma / wilms recs"
        generic = {"lymphoma", "sarcoma"}
        state.cancer_sites += [
            s for s in named if s not in state.cancer_sites and s.lower().split()[-1] not in generic
        ]
    return state


def _site_words(site: str) -> list[str]:
    """Other names of a cancer site: its head noun when that is specific, and abbreviations."""
    words = [v for k, v in _SITE_ALIASES.items() if k in site.lower()]
    parts = site.lower().replace("'", "").split()
    head = parts[-1]
    if head in ("lymphoma", "sarcoma"):
        return [*words, head]
    if head == "tumour" and len(parts) > 1 and len(parts[0]) > 3:  # "wilms" for Wilms' tumour
        return [*words, parts[0]]
    return words


_SITE_ALIASES = {
    "basal cell": "bcc",
    "squamous cell": "scc",
    "non-hodgkin": "nhl",
    "brain": "brain",
    "cns": "cns",
    "brain and cns": "brain tumour",
}


def _site_pattern(site: str) -> re.Pattern[str]:
    """What finds a site's name (or another name of it) in lower-cased text: its words from a word
    start, a final "s" dropped from names longer than 5 characters."""
    words = site.lower().replace("_", " ")
    stem = words.rstrip("s") if len(words) > 5 else words
    return re.compile(rf"\b{re.escape(stem)}")


#: Per cancer-site set (one per index version's Knowledge): the sites, longest first, each with
#: its own pattern and those of its other names. Keyed by the set's id, the set kept with its
#: entry so the id cannot be reused while cached; the order is that of sorting the set itself.
SitePatterns = tuple[str, re.Pattern[str], list[re.Pattern[str]]]
_SITE_PATTERNS: dict[int, tuple[set[str], list[SitePatterns]]] = {}


def _site_patterns(sites: set[str]) -> list[SitePatterns]:
    """The sites longest first with their compiled patterns, compiled once per set of sites."""
    hit = _SITE_PATTERNS.get(id(sites))
    if hit is not None and hit[0] is sites:
        return hit[1]
    compiled = [
        (s, _site_pattern(s), [_site_pattern(w) for w in _site_words(s)])
        for s in sorted(sites, key=len, reverse=True)
    ]
    if len(_SITE_PATTERNS) >= 8:  # a few index versions at most: forget the oldest
        _SITE_PATTERNS.pop(next(iter(_SITE_PATTERNS)))
    _SITE_PATTERNS[id(sites)] = (sites, compiled)
    return compiled
