"""Clauses of a record entry, and whether a clause says anything clinical.

A symptom line may be a phrase, a sentence or several ("PMB x1 last week. No discharge."):
``split_sentences`` cuts it at sentence ends (full stops that are not decimals, ! ? and new
lines); ``ng12_common.lexicon_match.read_phrase`` then splits each sentence into clauses.

``is_clinical`` tells a context clause ("twice this week", "came with her daughter") from an
unread finding: a clause is clinical when it holds a word of ``data/clinical_words.yaml`` or of the
lexicon's own terms, compared by word stem. ``other_finding`` recognises the common findings NG12
does not use (``data/other_findings.yaml``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import snowballstemmer
import yaml

# "?" ends a sentence only before a space or the end: "?mesothelioma", "?UTI" are queries.
_SENTENCE_END = re.compile(r"(?<!\d)\.(?!\d)|[!\n]+|\?+(?=\s|$)")
# " - " joins two clauses of one statement ("lump in neck - getting bigger", "X-ray: lytic lesion -
# suggests bone sarcoma"): read as a comma, so what follows still qualifies the finding before it.
_DASH = re.compile(r"\s+[-\u2013\u2014]\s+")
_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of one lower-case word (memoised: record words repeat, and the
    pure-Python stemmer costs ~0.3 ms per new word)."""
    return str(_STEMMER.stemWord(word))


def stems(words: list[str]) -> list[str]:
    return [stem(w) for w in words]


def split_sentences(text: str) -> list[str]:
    """Sentences of one entry, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(_DASH.sub(", ", text)) if s and s.strip(" ,;")]


def word_tokens(text: str) -> list[str]:
    """The lower-case words and numbers of a text, in order."""
    return re.findall(r"[a-z0-9]+", text.lower())


def _data(name: str) -> object:
    return yaml.safe_load(resources.files("ng12_common.reading").joinpath("data", name).read_text("utf-8"))


@lru_cache(maxsize=1)
def clinical_words() -> frozenset[str]:
    """The words of data/clinical_words.yaml (a typing slip is corrected towards them too)."""
    data = _data("clinical_words.yaml")
    assert isinstance(data, dict)
    return frozenset(w.lower() for w in [*data["words"], *data["more"]])


@lru_cache(maxsize=1)
def _clinical_stems() -> frozenset[str]:
    data = _data("clinical_words.yaml")
    assert isinstance(data, dict)
    return frozenset(stems([w.lower() for w in [*data["words"], *data["more"]]]))


def is_clinical(clause: str, lexicon_words: frozenset[str] = frozenset()) -> bool:
    """True when the clause holds a clinical word (by stem): one of data/clinical_words.yaml, or
    a content word of the lexicon's terms (``lexicon_stems``)."""
    words = set(stems(word_tokens(clause)))
    return bool(words & _clinical_stems() or words & lexicon_words)


@lru_cache(maxsize=4)
def _term_stems(terms: tuple[str, ...]) -> frozenset[str]:
    data = _data("clinical_words.yaml")
    assert isinstance(data, dict)
    general = frozenset(stems([w.lower() for w in data["general"]]))
    out = set()
    for term in terms:
        for w in word_tokens(term):
            if len(w) > 2 and not w.isdigit():
                out.add(stem(w))
    return frozenset(out - general)


def lexicon_stems(terms: tuple[str, ...]) -> frozenset[str]:
    """Stems of the content words of every lexicon term, label and lay term: a clause that holds one
    ("limping", "freq", "sizes") names something clinical and is never silently taken as context.
    General words that terms also use (``general`` in data/clinical_words.yaml: "more", "night",
    "time", "after") do not count."""
    return _term_stems(terms)


@lru_cache(maxsize=1)
def other_finding_terms() -> tuple[str, ...]:
    """Every term of data/other_findings.yaml (common findings NG12 does not use)."""
    data = _data("other_findings.yaml")
    assert isinstance(data, list)
    return tuple(str(term) for group in data for term in group["terms"])


# Personal pronouns and possessives do not change what a clause names: "blood when he coughs", "blood
# when I cough" and "blood in your pee" name what "blood when coughing" and "blood in pee" name (with
# word stems, one lay term covers every person). "us" is not listed (US, ultrasound), nor "me" (ME,
# myalgic encephalomyelitis).
PRONOUNS = frozenset(
    {"i", "you", "he", "she", "it", "we", "they", "him", "them"}
    | {"my", "your", "his", "her", "its", "our", "their"}
)
_FILLER = PRONOUNS | {"the", "a", "an"}


def _stem_text(text: str) -> str:
    """The clause as space-separated word stems (fillers dropped), padded with spaces."""
    words = [w for w in word_tokens(text) if w not in _FILLER]
    return " " + " ".join(stems(words)) + " "


@lru_cache(maxsize=1)
def _other_findings() -> tuple[tuple[str, str], ...]:
    return tuple((_stem_text(term), term) for term in other_finding_terms())


@lru_cache(maxsize=1)
def infection_terms() -> frozenset[str]:
    """The terms of data/other_findings.yaml groups marked ``infection: true``."""
    data = _data("other_findings.yaml")
    assert isinstance(data, list)
    return frozenset(str(t) for group in data if group.get("infection") for t in group["terms"])


def other_finding(clause: str) -> str | None:
    """The common non-NG12 finding a clause names ("sore throat"), or None. Compared by word
    stems, whole words only ("shaky hands" and "shaking hands"; "smelly urine"); the longest term
    named wins ("migraine with aura" over "aura")."""
    text = _stem_text(clause)
    best: str | None = None
    best_len = 0
    for stems, term in _other_findings():
        if stems.strip() and stems in text and len(stems) > best_len:
            best, best_len = term, len(stems)
    return best


def words_outside(clause: str, term: str) -> set[str]:
    """The word stems of the clause that are not words of the term (fillers dropped)."""
    return set(_stem_text(clause).split()) - set(_stem_text(term).split())


@lru_cache(maxsize=1)
def _describing_words() -> tuple[frozenset[str], frozenset[str]]:
    data = _data("clinical_words.yaml")
    assert isinstance(data, dict)
    return frozenset(str(w) for w in data["descriptive"]), frozenset(str(w) for w in data["surfaces"])


def describes_only(clause: str, surfaces: bool = False) -> bool:
    """True when every word of the clause only describes a finding (site and side, size, shape,
    surface, consistency, fixity, how long: ``descriptive`` in data/clinical_words.yaml; with
    ``surfaces``, also the body surfaces a distributed finding is on). Numbers count as sizes."""
    words = word_tokens(clause.replace("non ", "non"))
    if not words:
        return False
    desc, surf = _describing_words()
    allowed = desc | surf if surfaces else desc
    return all(w.isdigit() or w in allowed for w in words)


@lru_cache(maxsize=1)
def other_finding_stems() -> frozenset[str]:
    """The word stems of every term of data/other_findings.yaml."""
    return frozenset(w for term in other_finding_terms() for w in _stem_text(term).split())


@lru_cache(maxsize=1)
def site_stems() -> frozenset[str]:
    """Stems of the body-site words of data/clinical_words.yaml (``sites``)."""
    data = _data("clinical_words.yaml")
    assert isinstance(data, dict)
    return frozenset(stems([str(w) for w in data["sites"]]))
