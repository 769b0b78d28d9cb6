"""Typing slips in a record: "bit breathles walking up hill", "haemoptisis", "diarrohea".

A word is read as a clinical word when all of these hold:
- it is not an English word (pyspellchecker's English word-frequency list, shipped with the package,
  no download);
- it is not one of the reader's own words (the lexicon's terms, ``data/clinical_words.yaml``,
  ``data/compositions.yaml``);
- it has at least 6 letters;
- it is one edit (a letter added, dropped, changed, or two neighbours swapped: Damerau) from exactly
  one clinical word, and the edit is inside the word: a first letter changes the meaning
  ("apyrexial" is not "pyrexial") and a last one is another form ("hemiplegic", "hemiplegia").

Shorter words, English words ("smelling" is never "swelling") and words near two clinical words
stay as written. The correction is made before matching, and every correction is returned so the
reading can show it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from spellchecker import SpellChecker

MIN_LETTERS = 6
_WORD = re.compile(r"[a-z]+")


@lru_cache(maxsize=1)
def _english() -> frozenset[str]:
    return frozenset(SpellChecker(language="en", distance=1).word_frequency.dictionary)


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _one_inner_edit(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance exactly 1 (a letter added, dropped, changed or two swapped), the
    edit inside the word: not its first letter (a prefix changes the meaning: "apyrexial" is not
    "pyrexial") and not its last (an ending is another form or word: "hemiplegic", "hemiplegia")."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swapped = (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
        if len(diff) != 1 and not swapped:
            return False
        return diff[0] > 0 and diff[-1] < len(a) - 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    dropped = [i for i in range(len(long_)) if long_[:i] + long_[i + 1 :] == short]
    return any(0 < i < len(long_) - 1 for i in dropped)


class Speller:
    """Corrects slips towards one vocabulary of clinical words."""

    def __init__(self, vocabulary: frozenset[str]) -> None:
        _english()  # loaded when the speller is built (with the lexicon), never on a request
        self.vocabulary = frozenset(w for w in vocabulary if w.isalpha())
        self._by_delete: dict[str, set[str]] = {}
        for w in self.vocabulary:
            if len(w) >= MIN_LETTERS - 1:
                self._by_delete.setdefault(w, set()).add(w)
                for d in _deletes(w):
                    self._by_delete.setdefault(d, set()).add(w)

    def candidates(self, word: str) -> set[str]:
        keys = {word} | _deletes(word)
        found: set[str] = set()
        for k in keys:
            found |= self._by_delete.get(k, set())
        return {c for c in found if _one_inner_edit(word, c)}

    @lru_cache(maxsize=16384)  # noqa: B019 - one Speller per lexicon, kept for the process's life
    def correct_word(self, word: str) -> str | None:
        if len(word) < MIN_LETTERS or word in self.vocabulary or word in _english():
            return None
        found = self.candidates(word)
        return next(iter(found)) if len(found) == 1 else None

    def correct(self, text: str) -> tuple[str, list[tuple[str, str]]]:
        """The text with its slips corrected, and each (as written, read as)."""
        fixes: list[tuple[str, str]] = []

        def repl(m: re.Match[str]) -> str:
            fixed = self.correct_word(m.group(0))
            if fixed is None:
                return m.group(0)
            fixes.append((m.group(0), fixed))
            return fixed

        return _WORD.sub(repl, text), fixes
