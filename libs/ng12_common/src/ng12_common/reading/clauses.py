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

_SENTENCE_END = re.compile(r"(?<!\d)\.(?!\d)|[!?\n]+|\s-\s")
_STEMMER = snowballstemmer.stemmer("english")


def split_sentences(text: str) -> list[str]:
    """Sentences of one entry, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip(" ,;")]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _data(name: str) -> object:
    return yaml.safe_load(resources.files("ng12_common.reading").joinpath("data", name).read_text("utf-8"))


@lru_cache(maxsize=1)
def _clinical_stems() -> frozenset[str]:
    data = _data("clinical_words.yaml")
    assert isinstance(data, dict)
    return frozenset(_STEMMER.stemWords([w.lower() for w in data["words"]]))


def is_clinical(clause: str) -> bool:
    """True when the clause holds a clinical word (by stem)."""
    return bool(set(_STEMMER.stemWords(_words(clause))) & _clinical_stems())


@lru_cache(maxsize=1)
def other_finding_terms() -> tuple[str, ...]:
    """Every term of data/other_findings.yaml (common findings NG12 does not use)."""
    data = _data("other_findings.yaml")
    assert isinstance(data, list)
    return tuple(str(term) for group in data for term in group["terms"])


@lru_cache(maxsize=1)
def _other_findings() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    for term in other_finding_terms():
        stems = _STEMMER.stemWords(_words(term))
        out.append((re.compile(r"\b" + r"\s+".join(re.escape(s) + r"\w*" for s in stems) + r"\b"), term))
    return tuple(out)


def other_finding(clause: str) -> str | None:
    """The common non-NG12 finding a clause names ("sore throat"), or None."""
    text = " ".join(_words(clause))
    for pattern, term in _other_findings():
        if pattern.search(text):
            return term
    return None
