"""Benchmark: build the NG12 knowledge base from the PDF 3 times; print min/median seconds.

Usage: .venv/bin/python bench/bench_kb.py [--pdf PATH] [--runs 3] [--workers N]
The PDF defaults to $NG12_PDF, else /work/shared/ng12/ng12.pdf. Prints numbers, no pass/fail
(the target is <= 15 s per build on a 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from ingestion.kb.builder import assemble
from ingestion.kb.parse import parse_guideline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", default=os.environ.get("NG12_PDF") or "/work/shared/ng12/ng12.pdf")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    totals: list[float] = []
    parses: list[float] = []
    for run in range(1, args.runs + 1):
        start = time.perf_counter()
        parsed = parse_guideline(args.pdf, workers=args.workers)
        parsed_at = time.perf_counter()
        kb = assemble(parsed)
        end = time.perf_counter()
        parses.append(parsed_at - start)
        totals.append(end - start)
        print(
            f"run {run}: build {end - start:.2f}s (parse {parsed_at - start:.2f}s, "
            f"criteria+lexicon+chunks {end - parsed_at:.2f}s); {len(kb.recommendations)} recommendations, "
            f"{len(kb.symptom_rows)} rows, {len(kb.chunks)} chunks"
        )
    print(f"build-kb: min {min(totals):.2f}s median {statistics.median(totals):.2f}s over {args.runs} runs")
    print(f"parse only: min {min(parses):.2f}s median {statistics.median(parses):.2f}s")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
