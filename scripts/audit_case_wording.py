"""Audit the curated reading data for wording copied from development cases.

For every term of the curated lexicon, lay terms, findings NG12 does not use, clinical words,
ConText triggers, explanations and compositions, and every rewrite rule, list the development
cases (eval/blind/assessment_dev.json, assessment_dev2.json, ../shared/eval-dev) whose record
contains it verbatim (after the reader's normalisation). Multi-word terms found in a case are the
ones to review by hand: a general synonym stays (with its source), a case's own fragment goes.
The locked sets are never read.

Usage: python scripts/audit_case_wording.py [--all] [--min-words N]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ng12_common.lexicon_match import normalise_phrase

REPO = Path(__file__).resolve().parents[1]
CASE_FILES = [
    REPO / "eval" / "blind" / "assessment_dev.json",
    REPO / "eval" / "blind" / "assessment_dev2.json",
    REPO / "eval" / "blind" / "assessment_dev3.json",
    REPO.parent / "shared" / "eval-dev" / "assessment_dev.json",
]
READING = REPO / "libs" / "ng12_common" / "src" / "ng12_common" / "reading" / "data"
KB = REPO / "services" / "ingestion" / "src" / "ingestion" / "kb" / "data"
TERM_FILES = [
    KB / "lay_terms.yaml",
    KB / "lexicon.yaml",
    READING / "other_findings.yaml",
    READING / "compositions.yaml",
    READING / "context_rules.yaml",
    READING / "explanations.yaml",
    READING / "clinical_words.yaml",
]
SKIP_KEYS = {"source", "reason", "concept", "name", "group", "category", "direction", "diagnosis", "kind"}


def case_texts() -> list[tuple[str, str]]:
    """(case id, normalised text) for every free-text entry of every development case."""
    out: list[tuple[str, str]] = []
    for path in CASE_FILES:
        if "locked" in path.name or not path.exists():
            continue
        for case in json.loads(path.read_text()):
            pid = case["patient_id"]
            entries: list[str] = []
            for key in ("symptoms", "history", "exam_findings"):
                entries += [str(e) for e in case.get(key) or []]
            for k, v in (case.get("test_results") or {}).items():
                entries.append(f"{k} {v}")
            for e in entries:
                out.append((pid, " " + normalise_phrase(e, keep_stop_words=True) + " "))
    return out


def strings(node: Any, key: str | None = None) -> Iterator[str]:
    """Every term string in a YAML tree, skipping source/reason/label-like keys."""
    if key in SKIP_KEYS:
        return
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from strings(item, key)
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(v, str(k))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also single-word terms")
    ap.add_argument("--min-words", type=int, default=2)
    args = ap.parse_args()
    texts = case_texts()
    for path in TERM_FILES:
        seen: set[str] = set()
        for raw in strings(yaml.safe_load(path.read_text())):
            term = normalise_phrase(raw, keep_stop_words=True)
            if not term or term in seen:
                continue
            seen.add(term)
            if not args.all and len(term.split()) < args.min_words:
                continue
            hits = sorted({pid for pid, t in texts if f" {term} " in t})
            if hits:
                print(f"{path.name}\t{raw}\t{len(hits)}\t{' '.join(hits[:6])}")
    for rule in yaml.safe_load((READING / "rewrites.yaml").read_text()):
        pat = re.compile(rule["pattern"])
        hits = sorted({pid for pid, t in texts if pat.search(t.strip())})
        if hits:
            print(f"rewrites.yaml\t{rule['pattern'][:70]}\t{len(hits)}\t{' '.join(hits[:6])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
