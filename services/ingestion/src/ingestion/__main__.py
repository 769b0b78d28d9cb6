"""Command line of the ingestion service: `python -m ingestion build-kb --pdf PATH --out FILE`
and `python -m ingestion worker` (the Celery worker).

build-kb parses the NG12 PDF into the knowledge-base JSON (written atomically). Bad input
(not a PDF, empty, truncated, encrypted, not NG12) prints the reason and exits with 2;
nothing is written. Other subcommands can be added to `_parser`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from ingestion.kb.builder import build_knowledge_base, write_knowledge_base
from ingestion.kb.errors import KnowledgeBaseError


def _build_kb(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        kb = build_knowledge_base(args.pdf, workers=args.workers)
    except KnowledgeBaseError as exc:
        print(f"build-kb: {exc}", file=sys.stderr)
        return 2
    out = write_knowledge_base(kb, args.out)
    counts = kb.report.counts
    print(
        f"wrote {out}: {counts.get('recommendations', 0)} recommendations, "
        f"{counts.get('symptom_rows', 0)} symptom rows, {counts.get('chunks', 0)} chunks, "
        f"{len(kb.report.warnings)} warnings in {time.perf_counter() - started:.1f}s"
    )
    for warning in kb.report.warnings:
        print(f"  warning: {warning}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ingestion", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build-kb", help="parse the NG12 PDF into the knowledge-base JSON")
    build.add_argument("--pdf", required=True, help="path of the NG12 PDF")
    build.add_argument("--out", required=True, help="JSON file to write (atomically)")
    build.add_argument("--workers", type=int, default=None, help="page-parsing processes (default: up to 2)")
    build.set_defaults(func=_build_kb)
    worker = sub.add_parser("worker", help="run the Celery ingestion worker (Redis broker)")
    worker.set_defaults(func=_worker)
    return parser


def _worker(_: argparse.Namespace) -> int:
    from ingestion.worker import run_worker

    run_worker()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
