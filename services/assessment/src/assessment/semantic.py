"""Tier 3 of reading a record: semantic similarity between a clause and each concept's words.

The embedding model is retrieval's (the `Embed` RPC), so it is loaded once, in retrieval. For each
index version the descriptions of every symptom and finding concept (its guideline label, its
curated terms, and its exemplars: ways UK patients and GPs describe the finding, from
`data/tier3_exemplars.json`, each concept's group with its source) and the common findings NG12
does not use (``ng12_common.reading.clauses.other_finding_terms`` and the exemplars of clauses that
name no NG12 finding) are embedded once; a clause is then one Embed call (all of a record's pending
clauses in one batch).

Decision (k-nearest description, with abstention): the best concept's similarity must reach the
calibrated threshold AND lead the best *other* concept by the calibrated margin. When the nearest
description is a non-NG12 finding that clears the threshold, the clause is read as "not an NG12
finding". Otherwise the matcher abstains and the clause stays unread. The numbers come from
`data/semantic_calibration.json`, written by `bench/calibrate_tier3.py` (see docs/assessment.md).
A tier-3 match always goes to `needs_review` with its score.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import numpy.typing as npt

from ng12_common.knowledge import LexiconEntry
from ng12_common.reading.clauses import other_finding_terms

Embed = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]
NOT_NG12 = "__not_ng12__"
MAX_TEXTS_PER_CONCEPT = 16
_KINDS = ("symptom", "finding")


@dataclass(frozen=True)
class Calibration:
    threshold: float
    margin: float
    other_threshold: float


@dataclass(frozen=True)
class Exemplars:
    """Phrasings of each concept (and of clauses naming no NG12 finding) the nearest-description
    decision compares a clause with. General knowledge with a source, never an evaluation case."""

    by_concept: dict[str, tuple[str, ...]]
    not_ng12: tuple[str, ...]


@lru_cache(maxsize=1)
def exemplars() -> Exemplars:
    raw = resources.files("assessment").joinpath("data", "tier3_exemplars.json").read_text("utf-8")
    data = json.loads(raw)
    by_concept = {c: tuple(g["exemplars"]) for c, g in (data.get("concepts") or {}).items()}
    return Exemplars(by_concept=by_concept, not_ng12=tuple((data.get("not_ng12") or {}).get("exemplars", [])))


@lru_cache(maxsize=1)
def calibration() -> Calibration:
    raw = resources.files("assessment").joinpath("data", "semantic_calibration.json").read_text("utf-8")
    data = json.loads(raw)
    return Calibration(float(data["threshold"]), float(data["margin"]), float(data["other_threshold"]))


def description_texts(lexicon: Sequence[LexiconEntry]) -> tuple[list[str], list[str], list[str]]:
    """(texts, their concept, their kind) for every symptom and finding concept, and non-NG12 findings."""
    examples = exemplars()
    texts: list[str] = []
    owners: list[str] = []
    kinds: list[str] = []
    for e in lexicon:
        if e.kind not in _KINDS:
            continue
        words = list(dict.fromkeys([e.label, *e.synonyms]))[:MAX_TEXTS_PER_CONCEPT]
        words += [x for x in examples.by_concept.get(e.concept, ()) if x not in words]
        for w in words:
            texts.append(w)
            owners.append(e.concept)
            kinds.append(e.kind)
    for t in dict.fromkeys([*other_finding_terms(), *examples.not_ng12]):
        texts.append(t)
        owners.append(NOT_NG12)
        kinds.append("other")
    return texts, owners, kinds


@dataclass(frozen=True)
class _Grouping:
    names: tuple[str, ...]  # distinct owners, in first-seen order
    order: npt.NDArray[np.intp]  # row permutation that puts each owner's rows together
    starts: npt.NDArray[np.intp]  # first row of each owner in that order


@lru_cache(maxsize=4)
def _groups(owners: tuple[str, ...]) -> _Grouping:
    first: dict[str, int] = {}
    for o in owners:
        first.setdefault(o, len(first))
    keys = np.asarray([first[o] for o in owners])
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=len(first))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
    return _Grouping(names=tuple(first), order=order, starts=starts)


@dataclass(frozen=True)
class ConceptSpace:
    """Unit vectors of every description, with the concept each belongs to."""

    matrix: npt.NDArray[np.float32]  # (n_texts, dim)
    owners: tuple[str, ...]
    kinds: dict[str, str]

    @classmethod
    async def build(cls, lexicon: Sequence[LexiconEntry], embed: Embed) -> ConceptSpace:
        texts, owners, kinds = description_texts(lexicon)
        parts = [await embed(texts[i : i + 256]) for i in range(0, len(texts), 256)]
        matrix = np.concatenate(parts).astype(np.float32)
        return cls(matrix=matrix, owners=tuple(owners), kinds=dict(zip(owners, kinds, strict=True)))

    def scores(self, vector: npt.NDArray[np.float32]) -> dict[str, float]:
        """Best similarity per concept (max over its descriptions)."""
        names, best = self._best(vector)
        return dict(zip(names, best.tolist(), strict=True))

    def _best(self, vector: npt.NDArray[np.float32]) -> tuple[tuple[str, ...], npt.NDArray[np.float32]]:
        """The concepts and their best similarity, in numpy (one matrix product and one grouped max;
        a Python loop over the ~2,000 descriptions cost ~0.5 ms per clause)."""
        groups = _groups(self.owners)
        sims = (self.matrix @ vector)[groups.order]
        return groups.names, np.maximum.reduceat(sims, groups.starts)

    def decide(
        self, vector: npt.NDArray[np.float32], cal: Calibration | None = None
    ) -> tuple[str | None, str, float] | None:
        """(concept, kind, score), (None, "not_ng12", score), or None to abstain."""
        cal = cal or calibration()
        names, best = self._best(vector)
        if not names:
            return None
        top = np.argsort(-best, kind="stable")[:2]
        c1, s1 = names[int(top[0])], float(best[int(top[0])])
        s2 = float(best[int(top[1])]) if len(top) > 1 else 0.0
        if c1 == NOT_NG12:
            return (None, "not_ng12", s1) if s1 >= cal.other_threshold else None
        if s1 >= cal.threshold and s1 - s2 >= cal.margin:
            return (c1, self.kinds[c1], s1)
        return None


class SemanticMatcher:
    """Tier 3 for one index version: the concept space, built once, and the clause decisions."""

    def __init__(self, space: ConceptSpace, embed: Embed) -> None:
        self.space = space
        self._embed = embed

    async def decide(self, clauses: Sequence[str]) -> list[tuple[str | None, str, float] | None]:
        if not clauses:
            return []
        vectors = await self._embed(list(clauses))
        return [self.space.decide(v) for v in vectors]
