"""`make eval-retrieval`: recall@1/5/10 and MRR of the expected recommendation ids.

Queries: the standalone turns of ../shared/eval-dev/chat_dev.json (single-turn questions and
the first turn of each conversation; refusals excluded) in chat mode, and the development
patients of assessment_dev.json in assessment mode (symptoms, findings, history and textual
test results as the query; the patient profile for reranking). Expected: each case's
must_cite ids. Configurations: dense only, BM25 only, hybrid (RRF and weighted fusion),
hybrid + rerank, and the default with and without collapsing hits to distinct recommendations
(issue 12: before, one recommendation could fill several of the top 5 slots; "repeats@5" is the
share of queries whose top 5 hits name a recommendation id twice; "recall@5 distinct" counts the
first 5 distinct recommendation ids, however many hits carry them). Runs on the real index: a real
retrieval server builds it from the NG12 PDF,
then the store is opened in-process.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ingestion.pipeline import ingest_pdf  # noqa: E402
from retrieval.embeddings import CachedQueryEmbedder, LocalMiniLM  # noqa: E402
from retrieval.search import SearchConfig, SearchParams, run_search  # noqa: E402
from retrieval.serving import IndexManager  # noqa: E402
from retrieval.storage import IndexStorage  # noqa: E402
from tests.support import (  # noqa: E402
    find_eval_dev,
    find_pdf,
    start_retrieval,
    stop_process,
)

EVAL_DIR = find_eval_dev("chat_dev.json").parent
CONFIGS = {
    "dense only": SearchConfig(use_lexical=False, rerank=False),
    "BM25 only": SearchConfig(use_dense=False, rerank=False),
    "hybrid (RRF)": SearchConfig(fusion="rrf", rerank=False),
    "hybrid (weighted 0.6)": SearchConfig(fusion="weighted", dense_weight=0.6, rerank=False),
    "hybrid (RRF) + rerank": SearchConfig(fusion="rrf", rerank=True),
    "hybrid (weighted 0.6) + rerank": SearchConfig(fusion="weighted", dense_weight=0.6, rerank=True),
    "hybrid (weighted 0.7) + rerank, not collapsed (before issue 12)": SearchConfig(collapse=False),
    "hybrid (weighted 0.7) + rerank (default)": SearchConfig(),
    "default, dense candidates from Chroma's HNSW query": SearchConfig(dense_backend="chroma"),
}
GRID = {
    f"{fusion} w={w} boost x{b}": SearchConfig(fusion=fusion, dense_weight=w, rerank=True, boost_scale=b)
    for fusion in ("rrf", "weighted")
    for w in ((0.6,) if fusion == "rrf" else (0.4, 0.5, 0.7))
    for b in (0.25, 0.5, 1.0)
}
if "--grid" in sys.argv:
    CONFIGS = GRID


@dataclass
class Query:
    case: str
    params: SearchParams
    expected: list[str]


def _smoking(text: str) -> str:
    t = text.lower()
    return (
        "never"
        if "never" in t
        else "ex"
        if "ex" in t
        else "current"
        if "current" in t or "smoker" in t
        else ""
    )


def load_queries() -> list[Query]:
    queries: list[Query] = []
    for case in json.loads((EVAL_DIR / "chat_dev.json").read_text()):
        if case["type"] == "refuse":
            continue
        turn = case["turns"][0]
        if turn.get("must_cite"):
            queries.append(Query(case["id"], SearchParams(turn["user"], 10, "chat"), list(turn["must_cite"])))
    for case in json.loads((EVAL_DIR / "assessment_dev.json").read_text()):
        expected = list(case["expected"]["must_cite"])
        expected += [group[0] for group in case["expected"].get("must_cite_any", [])]
        if not expected:
            continue
        tests = case.get("test_results", {})
        results = [f"{k.replace('_', ' ')} {v}" for k, v in tests.items() if isinstance(v, str)]
        text = "; ".join(case["symptoms"] + case.get("exam_findings", []) + case.get("history", []) + results)
        patient = {
            "age": case["age"],
            "sex": case["gender"].lower(),
            "smoking": _smoking(case.get("smoking_history", "")),
            "symptoms": case["symptoms"],
        }
        queries.append(Query(case["patient_id"], SearchParams(text, 10, "assessment", patient), expected))
    return queries


def ranked_ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    out: list[str] = []
    for h in hits:
        for rid in h.chunk.recommendation_ids:
            if rid not in out:
                out.append(rid)
    return out


def score(
    store: IndexManager, embedder: CachedQueryEmbedder, queries: list[Query], config: SearchConfig
) -> dict:  # type: ignore[type-arg]
    assert store.current is not None
    recall = {1: 0.0, 5: 0.0, 10: 0.0}
    mrr = 0.0
    repeats = 0
    distinct5 = 0.0
    misses: list[str] = []
    for q in queries:
        hits = run_search(store.current, embedder, q.params, config).hits
        ids = ranked_ids(hits)
        top5 = [rid for h in hits[:5] for rid in h.chunk.recommendation_ids]
        repeats += len(top5) != len(set(top5))
        distinct5 += sum(1 for e in q.expected if e in ids[:5]) / len(q.expected)
        for k in recall:  # recall@k: expected ids carried by the top-k hits
            top = ranked_ids(hits[:k])
            recall[k] += sum(1 for e in q.expected if e in top) / len(q.expected)
        first = next((i for i, r in enumerate(ids) if r in q.expected), None)
        mrr += 1 / (first + 1) if first is not None else 0.0
        missing = [e for e in q.expected if e not in ranked_ids(hits[:5])]
        if missing:
            misses.append(f"{q.case}: {','.join(missing)}")
    n = len(queries)
    return {
        "r1": recall[1] / n,
        "r5": recall[5] / n,
        "r10": recall[10] / n,
        "mrr": mrr / n,
        "repeats": repeats / n,
        "d5": distinct5 / n,
        "misses": misses,
    }


def main() -> None:
    queries = load_queries()
    with tempfile.TemporaryDirectory() as tmp:
        proc, port, _, _ = start_retrieval(Path(tmp))
        try:
            ingest_pdf(find_pdf(), f"127.0.0.1:{port}")
        finally:
            stop_process(proc)  # type: ignore[arg-type]
        provider = LocalMiniLM()
        embedder = CachedQueryEmbedder(provider)
        store = IndexManager(IndexStorage(Path(tmp) / "chroma", provider))
        store.start()
        print(
            f"{len(queries)} queries ({sum(q.params.mode == 'chat' for q in queries)} chat, "
            f"{sum(q.params.mode == 'assessment' for q in queries)} assessment); top_k 10"
        )
        print(
            "| configuration | recall@1 | recall@5 | recall@10 | MRR | repeats@5 | recall@5 distinct |\n"
            "|---|---|---|---|---|---|---|"
        )
        results = {}
        for name, config in CONFIGS.items():
            r = score(store, embedder, queries, config)
            results[name] = r
            print(
                f"| {name} | {r['r1']:.3f} | {r['r5']:.3f} | {r['r10']:.3f} | {r['mrr']:.3f} "
                f"| {r['repeats']:.2f} | {r['d5']:.3f} |",
                flush=True,
            )
        for name, r in results.items():
            if "rerank" in name:
                print(f"misses@5 for {name}: {'; '.join(r['misses']) or 'none'}")


if __name__ == "__main__":
    main()
