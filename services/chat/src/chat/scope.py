"""The scope classifier: is a message about what NG12 covers, and if not, what kind of request is it.

Classes (`SCOPE_KINDS`): `in_scope` (recognition, investigation and referral of suspected cancer
in primary care, NG12's definitions, safety netting, patient information), `task_request` (write,
draft or fill in a letter, fit note, referral form, prescription), `logistics` (which hospital,
waiting times, phone numbers, booking), `treatment` (treatment, dosing, prognosis, survival),
`other_guideline` (screening programmes, other guidelines) and `non_medical`.

The model is a multinomial logistic regression (scikit-learn) over the embeddings retrieval
serves (`Embed`, all-MiniLM-L6-v2, unit length), trained on the labelled questions in
`chat/data/scope_train.json` (see `chat/data/README.md`): the training texts are embedded once
per index version at start-up (batches of at most 256 texts), the model fitted in memory, and
each new message costs one `Embed(as_query=True)`, whose vector Search then reuses from
retrieval's query cache (the same normalised text). The prediction itself is a 6 x 384 product.

A message is out of scope when P(in_scope) < `IN_SCOPE_THRESHOLD` (`CONTEXT_THRESHOLD` for the
next question of a conversation); its kind is then the most probable other class. Both thresholds
and C are calibrated by 5-fold cross-validation over the training set (`make calibrate-scope`,
bench/calibrate_scope.py; docs/chat.md has the figures). Rules stay on top of it
(chat.guardrails: emergencies, prompt injection, smalltalk, mixed requests).
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ng12_common.logs import get_logger
from ng12_common.retrieval_client import RetrievalClient, RetrievalError

log = get_logger("chat.scope")

ScopeKind = Literal["in_scope", "task_request", "logistics", "treatment", "other_guideline", "non_medical"]
SCOPE_KINDS: tuple[ScopeKind, ...] = (
    "in_scope",
    "task_request",
    "logistics",
    "treatment",
    "other_guideline",
    "non_medical",
)
#: Out of scope when P(in_scope) falls below this: the largest threshold whose cross-validated
#: false refusal rate is at most 1% (0.9% on the 1406 questions; docs/chat.md, `make calibrate-scope`).
IN_SCOPE_THRESHOLD = 0.07
#: In a conversation (a session with earlier turns) the next question is refused only at a stricter
#: threshold: a refusal mid-conversation breaks it, and what follows a grounded answer is more often
#: about NG12. Calibrated like IN_SCOPE_THRESHOLD with a 0.5% target (cross-validated 0.4%).
CONTEXT_THRESHOLD = 0.02
#: Regularisation of the logistic regression (inverse strength), chosen with the thresholds.
REGULARISATION_C = 30.0
EMBED_BATCH = 256  # the Embed RPC's limit per call
CACHE_SIZE = 4096  # decisions kept per index version, by message text


@dataclass(frozen=True)
class Example:
    text: str
    label: ScopeKind


@dataclass(frozen=True)
class ScopeDecision:
    kind: ScopeKind  # the decision (in_scope unless P(in_scope) < threshold)
    in_scope_probability: float
    best_other: ScopeKind  # the most probable out-of-scope class, whatever the decision
    probability: float  # of `best_other`

    @property
    def in_scope(self) -> bool:
        return self.kind == "in_scope"


def load_examples() -> list[Example]:
    """The labelled training questions shipped with the package."""
    raw = json.loads(resources.files("chat.data").joinpath("scope_train.json").read_text(encoding="utf-8"))
    return [Example(str(e["text"]), e["label"]) for e in raw if e.get("label") in SCOPE_KINDS]


@dataclass
class ScopeModel:
    """Fitted weights; prediction is a matrix product and a softmax (no scikit-learn at run time)."""

    labels: tuple[ScopeKind, ...]
    coef: npt.NDArray[np.float64]  # classes x dimensions
    intercept: npt.NDArray[np.float64]
    threshold: float = IN_SCOPE_THRESHOLD

    @classmethod
    def fit(
        cls,
        vectors: npt.NDArray[np.floating[Any]],
        labels: Sequence[str],
        c: float = REGULARISATION_C,
        threshold: float = IN_SCOPE_THRESHOLD,
    ) -> ScopeModel:
        from sklearn.linear_model import LogisticRegression  # imported only when a model is fitted

        model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced")
        model.fit(np.asarray(vectors, dtype=np.float64), list(labels))
        order = tuple(str(x) for x in model.classes_)
        return cls(order, model.coef_.copy(), model.intercept_.copy(), threshold)  # type: ignore[arg-type]

    def probabilities(self, vectors: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.float64]:
        logits = np.atleast_2d(np.asarray(vectors, dtype=np.float64)) @ self.coef.T + self.intercept
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        result: npt.NDArray[np.float64] = exp / exp.sum(axis=1, keepdims=True)
        return result

    def decide(self, probs: npt.NDArray[np.float64], threshold: float | None = None) -> ScopeDecision:
        t = self.threshold if threshold is None else threshold
        p_in = float(probs[self.labels.index("in_scope")])
        others = [(float(p), lab) for p, lab in zip(probs, self.labels, strict=True) if lab != "in_scope"]
        p_other, other = max(others)
        kind: ScopeKind = "in_scope" if p_in >= t else other
        return ScopeDecision(kind, p_in, other, p_other)

    def classify(self, vector: npt.NDArray[np.floating[Any]]) -> ScopeDecision:
        return self.decide(self.probabilities(vector)[0])


#: Models fitted in this process, by (embedder id, training set): the same texts embedded by the same
#: model give the same vectors, so a second app (tests) or a new index version built with the same
#: embedder does not embed the training set again.
_FITTED: dict[tuple[str, int], ScopeModel] = {}


async def embed_all(
    retrieval: RetrievalClient, texts: list[str], as_query: bool = False
) -> tuple[npt.NDArray[np.float32], str]:
    """Embeddings of `texts` in batches of EMBED_BATCH, and the index version that served them."""
    rows: list[npt.NDArray[np.float32]] = []
    version = ""
    for start in range(0, len(texts), EMBED_BATCH):
        reply = await retrieval.embed(texts[start : start + EMBED_BATCH], as_query=as_query, timeout=60.0)
        version = reply.index_version
        rows.extend(np.asarray(e.values, dtype=np.float32) for e in reply.embeddings)
    return np.vstack(rows), version


class ScopeClassifier:
    """The classifier for the index version retrieval serves, fitted once per version, with the
    decisions for recent messages cached (a repeated message costs no Embed call)."""

    def __init__(self, retrieval: RetrievalClient, examples: list[Example] | None = None) -> None:
        self._retrieval = retrieval
        self._examples = examples if examples is not None else load_examples()
        self._model: ScopeModel | None = None
        self._version = ""
        self._lock = asyncio.Lock()
        self._decisions: OrderedDict[str, ScopeDecision] = OrderedDict()

    @property
    def ready(self) -> bool:
        return self._model is not None

    async def load(self) -> bool:
        """Embed the training set with the serving model and fit (start-up; again only when the
        served index version changes). False when retrieval cannot embed now."""
        async with self._lock:
            try:
                probe = await self._retrieval.embed([self._examples[0].text])
                key = (probe.embedder_id, hash(tuple(self._examples)))
                if self._model is not None and probe.index_version == self._version:
                    return True
                model = _FITTED.get(key)
                if model is None:
                    vectors, _ = await embed_all(self._retrieval, [e.text for e in self._examples])
                    labels = [e.label for e in self._examples]
                    model = _FITTED[key] = await asyncio.to_thread(ScopeModel.fit, vectors, labels)
                    log.info("scope_classifier_fitted", embedder=probe.embedder_id, examples=len(labels))
            except RetrievalError as exc:
                log.warning("scope_classifier_unavailable", error=str(exc))
                return self._model is not None
            self._model, self._version = model, probe.index_version
            self._decisions.clear()
            return True

    async def classify(self, text: str) -> ScopeDecision | None:
        """The decision for one message (one Embed as a query), or None when no model or no
        embedding is available (the rules alone then decide)."""
        key = " ".join(text.lower().split())
        cached = self._decisions.get(key)
        if cached is not None:
            self._decisions.move_to_end(key)
            return cached
        if self._model is None and not await self.load():
            return None
        try:
            reply = await self._retrieval.embed([text], as_query=True)
        except RetrievalError as exc:
            log.warning("scope_embed_failed", error=str(exc))
            return None
        if reply.index_version != self._version:  # a new index version (maybe a new embedder)
            await self.load()
        assert self._model is not None
        decision = self._model.classify(np.asarray(reply.embeddings[0].values, dtype=np.float32))
        self._decisions[key] = decision
        if len(self._decisions) > CACHE_SIZE:
            self._decisions.popitem(last=False)
        return decision
