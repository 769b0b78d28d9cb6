"""Benchmark: retrieval Search over gRPC on the real NG12 index (prints numbers, no pass/fail).

Starts a real retrieval server on a temp Chroma dir, ingests the NG12 PDF, then measures
Search (top_k 8): p50/p95 for new queries (embedding computed) and repeated queries
(cached embedding), and throughput with 8 concurrent callers.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc

from ingestion.pipeline import ingest_pdf
from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from tests.support import find_pdf, start_retrieval, stop_process

SYMPTOMS = [
    "haemoptysis",
    "dysphagia",
    "rectal bleeding",
    "breast lump",
    "hoarseness",
    "haematuria",
    "weight loss",
    "abdominal pain",
    "fatigue",
    "night sweats",
    "bone pain",
    "jaundice",
    "iron-deficiency anaemia",
    "post-menopausal bleeding",
    "skin lesion",
    "neck lump",
]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


async def measure(addr: str) -> None:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = pb_grpc.RetrievalStub(channel)

        async def call(q: str) -> float:
            t = time.perf_counter()
            await stub.Search(pb.SearchRequest(query=q, top_k=8, mode=pb.SEARCH_MODE_CHAT), timeout=10)
            return (time.perf_counter() - t) * 1000

        for i in range(50):  # warm-up: connections, caches, first-call paths
            await call(f"warm up {i % 5}")
        new_q = [f"{s} in a patient aged {40 + i % 40} for {i} weeks" for i, s in enumerate(SYMPTOMS * 13)][
            :200
        ]
        new = [await call(q) for q in new_q]
        rep = [await call(new_q[i % 10]) for i in range(300)]
        print(f"new n={len(new)}  p50={statistics.median(new):.2f} ms  p95={pct(new, 95):.2f} ms")
        print(f"repeated n={len(rep)}  p50={statistics.median(rep):.2f} ms  p95={pct(rep, 95):.2f} ms")
        total = 800
        queue = [new_q[i % len(new_q)] for i in range(total)]

        async def worker() -> None:
            while queue:
                await call(queue.pop())

        t = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(8)))
        elapsed = time.perf_counter() - t
        print(f"search throughput, 8 concurrent callers: {total / elapsed:.0f} req/s ({total} requests)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc, port, _, _ = start_retrieval(Path(tmp))
        try:
            t = time.perf_counter()
            ingest_pdf(find_pdf(), f"127.0.0.1:{port}")
            print(f"ingest NG12 (parse + embed + index): {time.perf_counter() - t:.1f} s")
            time.sleep(5)  # let the just-built index settle (Chroma persists in the background)
            asyncio.run(measure(f"127.0.0.1:{port}"))
        finally:
            stop_process(proc)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
