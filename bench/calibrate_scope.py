"""Calibrate chat's scope classifier (chat.scope) by cross-validation over its training set.

The labelled questions (services/chat/src/chat/data/scope_train.json) are split into 5 folds
(`--folds 1`: one 80/20 split), stratified by label with a fixed seed. The training part is
embedded as chat embeds it at start-up (Embed, documents); the held-out part as chat embeds a new
message (Embed as_query, i.e. through Search's normaliser). For each regularisation C and each
threshold on P(in_scope) the held-out questions are scored: accuracy over the six classes,
in/out-of-scope accuracy, false refusals (in-scope questions refused) and missed refusals. The
threshold chosen is the largest one (most refusals) whose false-refusal rate is at most
MAX_FALSE_REFUSAL; per-class precision and recall are printed for it. With cross-validation a
conversation threshold is chosen too (the largest at most MAX_FALSE_REFUSAL_IN_CONVERSATION), and
only a C that has both is chosen. Runs against a real retrieval server (--retrieval-addr, else
one is started and the NG12 PDF ingested).

    .venv/bin/python bench/calibrate_scope.py [--retrieval-addr HOST:PORT]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from chat.scope import SCOPE_KINDS, Example, ScopeModel, embed_all, load_examples  # noqa: E402
from ng12_common.retrieval_client import RetrievalClient  # noqa: E402

SEED = 12
HOLDOUT = 0.2
#: A false refusal costs the GP an answer NG12 gives; a missed refusal still meets the rules on top
#: (chat.guardrails) and is answered only from NG12 text, so false refusals are held to 1%.
MAX_FALSE_REFUSAL = 0.01
#: In a conversation (a session with turns) the next question is refused only at a stricter
#: threshold (chat.scope.CONTEXT_THRESHOLD): the largest whose false refusal rate is at most this.
#: A refusal mid-conversation breaks it, and what follows a grounded answer is more often about NG12.
MAX_FALSE_REFUSAL_IN_CONVERSATION = 0.005
C_VALUES = (1.0, 3.0, 10.0, 30.0, 100.0)
#: Steps of 0.01: with steps of 0.05 the choice jumped a whole step (and C with it) when a handful of
#: training questions changed, because the false refusal limit falls between two grid points.
THRESHOLDS = [round(x, 2) for x in np.arange(0.01, 0.96, 0.01)]
SWEEP_PRINTED = {round(x, 2) for x in np.arange(0.05, 0.96, 0.05)}


def split(examples: list[Example]) -> tuple[list[Example], list[Example]]:
    rng = np.random.default_rng(SEED)
    train: list[Example] = []
    held: list[Example] = []
    for label in SCOPE_KINDS:
        group = [e for e in examples if e.label == label]
        order = rng.permutation(len(group))
        n_held = round(len(group) * HOLDOUT)
        held += [group[i] for i in order[:n_held]]
        train += [group[i] for i in order[n_held:]]
    return train, held


def report(
    model: ScopeModel, vectors: np.ndarray, held: list[Example], threshold: float
) -> dict[str, object]:
    probs = model.probabilities(vectors)
    decided = [model.decide(p, threshold).kind for p in probs]
    gold = [e.label for e in held]
    n = len(gold)
    in_total = sum(g == "in_scope" for g in gold)
    out_total = n - in_total
    false_refusals = sum(g == "in_scope" and d != "in_scope" for g, d in zip(gold, decided, strict=True))
    missed = sum(g != "in_scope" and d == "in_scope" for g, d in zip(gold, decided, strict=True))
    per_class = {}
    for label in SCOPE_KINDS:
        tp = sum(g == label and d == label for g, d in zip(gold, decided, strict=True))
        predicted = sum(d == label for d in decided)
        actual = sum(g == label for g in gold)
        per_class[label] = (tp / predicted if predicted else 0.0, tp / actual if actual else 0.0, actual)
    errors = [f"{g} -> {d}: {e.text}" for e, g, d in zip(held, gold, decided, strict=True) if g != d]
    return {
        "accuracy": sum(g == d for g, d in zip(gold, decided, strict=True)) / n,
        "scope_accuracy": 1 - (false_refusals + missed) / n,
        "false_refusal_rate": false_refusals / max(1, in_total),
        "missed_refusal_rate": missed / max(1, out_total),
        "per_class": per_class,
        "errors": errors,
    }


def folds_of(examples: list[Example], k: int) -> list[int]:
    """A stratified fold number (0..k-1) for each example, with the fixed seed."""
    rng = np.random.default_rng(SEED)
    fold = [0] * len(examples)
    for label in SCOPE_KINDS:
        idx = [i for i, e in enumerate(examples) if e.label == label]
        for rank, j in enumerate(rng.permutation(len(idx))):
            fold[idx[j]] = rank % k
    return fold


def report_probs(
    labels: tuple[str, ...], probs: np.ndarray, held: list[Example], threshold: float
) -> dict[str, object]:
    """`report` for probabilities already computed (pooled out-of-fold predictions)."""
    model = ScopeModel(labels, np.zeros((len(labels), 1)), np.zeros(len(labels)))  # type: ignore[arg-type]

    class _Pooled(ScopeModel):
        def probabilities(self, vectors: np.ndarray) -> np.ndarray:  # type: ignore[override]
            return probs

    pooled = _Pooled(model.labels, model.coef, model.intercept)
    return report(pooled, probs, held, threshold)


def _print_choice(
    c: float,
    t: float,
    how: str,
    r: dict[str, object],
    report_at: Callable[[float], dict[str, object]],
    only_false_refusals: bool = False,
) -> None:
    """The chosen C and threshold: accuracy, per-class table, threshold sweep and the errors."""
    print(f"\nchosen: C={c:g}, threshold P(in_scope) < {t:.2f} -> out of scope")
    print(
        f"{how} accuracy {r['accuracy']:.3f} (6 classes), in/out of scope {r['scope_accuracy']:.3f}, "
        f"false refusals {r['false_refusal_rate']:.3f}, missed refusals {r['missed_refusal_rate']:.3f}"
    )
    print("| class | precision | recall | n |\n|---|---|---|---|")
    for label, (p, rec, n) in r["per_class"].items():  # type: ignore[attr-defined]
        print(f"| {label} | {p:.3f} | {rec:.3f} | {n} |")
    print(f"\nthreshold sweep at the chosen C ({how}, query embeddings):")
    for t2 in sorted(SWEEP_PRINTED | {t}):
        rr = report_at(t2)
        print(
            f"  t={t2:.2f}: accuracy {rr['accuracy']:.3f}, false refusals {rr['false_refusal_rate']:.3f}, "
            f"missed {rr['missed_refusal_rate']:.3f}"
        )
    print(f"\n{'false refusals' if only_false_refusals else 'errors'} at the chosen threshold ({how}):")
    for line in r["errors"]:  # type: ignore[attr-defined]
        if not only_false_refusals or str(line).startswith("in_scope ->"):
            print("  -", line)


async def run_cv(addr: str, k: int) -> None:
    """Stratified k-fold cross-validation: every example is held out once (embedded as a query,
    as chat embeds a message) and predicted by a model fitted on the other folds (documents)."""
    examples = load_examples()
    fold = folds_of(examples, k)
    client = RetrievalClient(addr, timeout_seconds=60)
    docs, version = await embed_all(client, [e.text for e in examples])
    queries, _ = await embed_all(client, [e.text for e in examples], as_query=True)
    await client.close()
    counts = dict(Counter(e.label for e in examples))
    print(f"index {version}: {len(examples)} examples, {k}-fold cross-validation; by label: {counts}")
    print(
        "\n| C | threshold | accuracy (6 classes) | in/out accuracy | false refusals | missed refusals "
        "| in a conversation: threshold, false refusals, missed |"
    )
    print("|---|---|---|---|---|---|---|")
    labels_all = [e.label for e in examples]
    results: dict[float, tuple[tuple[str, ...], np.ndarray]] = {}
    best: tuple[float, float, float, float, float] | None = None
    for c in C_VALUES:
        probs = np.zeros((len(examples), len(SCOPE_KINDS)))
        order: tuple[str, ...] = ()
        for f in range(k):
            train = [i for i in range(len(examples)) if fold[i] != f]
            held = [i for i in range(len(examples)) if fold[i] == f]
            model = ScopeModel.fit(docs[train], [labels_all[i] for i in train], c=c)
            order = model.labels
            probs[held] = model.probabilities(queries[held])
        results[c] = (order, probs)
        swept = [(t, report_probs(order, probs, examples, t)) for t in THRESHOLDS]
        new = [(t, r) for t, r in swept if float(r["false_refusal_rate"]) <= MAX_FALSE_REFUSAL]  # type: ignore[arg-type]
        limit = MAX_FALSE_REFUSAL_IN_CONVERSATION
        talk = [(t, r) for t, r in swept if float(r["false_refusal_rate"]) <= limit]  # type: ignore[arg-type]
        if not new:
            print(f"| {c:g} | - | | | no threshold keeps false refusals within {MAX_FALSE_REFUSAL} | | |")
            continue
        t, r = new[-1]
        tc, rc = talk[-1] if talk else (None, None)
        conversation = (
            f"{tc:.2f}, {rc['false_refusal_rate']:.3f}, {rc['missed_refusal_rate']:.3f}"
            if tc is not None and rc is not None
            else f"none within {limit}"
        )
        print(
            f"| {c:g} | {t:.2f} | {r['accuracy']:.3f} | {r['scope_accuracy']:.3f} | "
            f"{r['false_refusal_rate']:.3f} | {r['missed_refusal_rate']:.3f} | {conversation} |"
        )
        if tc is None:
            continue  # both thresholds must keep their false refusal targets
        key = (float(r["missed_refusal_rate"]), -float(r["accuracy"]), c, t, tc)  # type: ignore[arg-type]
        if best is None or key < best:
            best = key
    if best is None:
        print("no C keeps false refusals within", MAX_FALSE_REFUSAL, "and", MAX_FALSE_REFUSAL_IN_CONVERSATION)
        return
    c, t, tc = best[2], best[3], best[4]
    order, probs = results[c]
    r = report_probs(order, probs, examples, t)

    def at(t2: float) -> dict[str, object]:
        return report_probs(order, probs, examples, t2)

    _print_choice(c, t, "cross-validated", r, at, only_false_refusals=True)
    rr = at(tc)
    print(
        f"\nin a conversation (CONTEXT_THRESHOLD): P(in_scope) < {tc:.2f}: false refusals "
        f"{rr['false_refusal_rate']:.3f}, missed refusals {rr['missed_refusal_rate']:.3f}"
    )


async def run(addr: str) -> None:
    examples = load_examples()
    train, held = split(examples)
    client = RetrievalClient(addr, timeout_seconds=60)
    train_vectors, version = await embed_all(client, [e.text for e in train])
    held_query, _ = await embed_all(client, [e.text for e in held], as_query=True)
    held_doc, _ = await embed_all(client, [e.text for e in held])
    await client.close()
    print(f"index {version}: {len(examples)} examples, {len(train)} train / {len(held)} held out")
    print("held out by label:", dict(Counter(e.label for e in held)))
    print(
        "\n| C | held-out embedding | threshold | accuracy (6 classes) | in/out accuracy | false refusals "
        "| missed refusals |"
    )
    print("|---|---|---|---|---|---|---|")
    best: tuple[float, float, float] | None = None  # (missed, -threshold..., C)
    chosen: dict[float, float] = {}
    for c in C_VALUES:
        model = ScopeModel.fit(train_vectors, [e.label for e in train], c=c)
        pick = None
        for t in THRESHOLDS:
            r = report(model, held_query, held, t)
            if r["false_refusal_rate"] <= MAX_FALSE_REFUSAL:  # type: ignore[operator]
                pick = (t, r)
        if pick is None:
            continue
        t, r = pick
        chosen[c] = t
        for name, vecs in (("query", held_query), ("document", held_doc)):
            rr = report(model, vecs, held, t)
            print(
                f"| {c:g} | {name} | {t:.2f} | {rr['accuracy']:.3f} | {rr['scope_accuracy']:.3f} | "
                f"{rr['false_refusal_rate']:.3f} | {rr['missed_refusal_rate']:.3f} |"
            )
        key = (float(r["missed_refusal_rate"]), -float(r["accuracy"]), c)  # type: ignore[arg-type]
        if best is None or key < best:
            best = key
    if best is None:
        print("no threshold keeps false refusals within", MAX_FALSE_REFUSAL)
        return
    c = best[2]
    t = chosen[c]
    model = ScopeModel.fit(train_vectors, [e.label for e in train], c=c)
    r = report(model, held_query, held, t)
    _print_choice(c, t, "held out", r, lambda t2: report(model, held_query, held, t2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retrieval-addr", default="")
    parser.add_argument(
        "--folds", type=int, default=5, help="k-fold cross-validation (default 5); 1: one 80/20 split"
    )
    args = parser.parse_args()

    def calibrate(addr: str) -> None:
        asyncio.run(run_cv(addr, args.folds) if args.folds > 1 else run(addr))

    if args.retrieval_addr:
        calibrate(args.retrieval_addr)
        return
    from ingestion.pipeline import ingest_pdf
    from tests.support import find_pdf, start_retrieval, stop_process

    with tempfile.TemporaryDirectory() as tmp:
        proc, port, _, _ = start_retrieval(Path(tmp))
        try:
            ingest_pdf(find_pdf(), f"127.0.0.1:{port}")
            calibrate(f"127.0.0.1:{port}")
        finally:
            stop_process(proc)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
