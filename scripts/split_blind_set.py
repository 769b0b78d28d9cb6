"""Split checked blind cases into a development part and a locked part (eval/blind/README.md).

Deterministic: within each stratum (assessment: primary section and top action; chat: case type and,
for refusals, the first turn's refuse_kind) the cases are ordered by the sha256 of their group id and
the first `--dev-share` of each stratum (rounded) go to the development part. An explained/not-explained
pair ("LA-009a", "LA-009b") shares a group id, so it never straddles the split.

    .venv/bin/python scripts/split_blind_set.py --kind assessment --dev-name dev4 --locked-name locked2 \
        /work/blind_new/assessment_A.json /work/blind_new/assessment_B.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

BLIND = Path(__file__).resolve().parents[1] / "eval" / "blind"


def case_id(case: dict[str, Any]) -> str:
    return str(case.get("patient_id") or case.get("id"))


def group_id(case: dict[str, Any]) -> str:
    """A pair's shared id: a trailing a/b after the number is dropped."""
    return re.sub(r"(\d)[ab]$", r"\1", case_id(case))


def stratum(case: dict[str, Any], kind: str) -> str:
    if kind == "assessment":
        return f"{case.get('primary_section')}|{case['expected']['top_action']}"
    first = case["turns"][0]
    return f"{case['type']}|{first.get('refuse_kind') or first.get('also_decline') or ''}"


def split(cases: list[dict[str, Any]], kind: str, dev_share: float) -> tuple[list[Any], list[Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        groups[group_id(case)].append(case)
    strata: dict[str, list[str]] = defaultdict(list)
    for gid, members in groups.items():
        strata[stratum(members[0], kind)].append(gid)
    dev: list[dict[str, Any]] = []
    locked: list[dict[str, Any]] = []
    for gids in strata.values():
        ordered = sorted(gids, key=lambda g: hashlib.sha256(g.encode()).hexdigest())
        n_dev = round(len(ordered) * dev_share)
        for i, gid in enumerate(ordered):
            (dev if i < n_dev else locked).extend(groups[gid])
    key = case_id
    return sorted(dev, key=key), sorted(locked, key=key)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["assessment", "chat"], required=True)
    parser.add_argument("--dev-name", required=True)
    parser.add_argument("--locked-name", required=True)
    parser.add_argument("--dev-share", type=float, default=0.4)
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    cases: list[dict[str, Any]] = []
    for path in args.files:
        cases.extend(json.loads(path.read_text(encoding="utf-8")))
    ids = [case_id(c) for c in cases]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate case ids across the input files")
    dev, locked = split(cases, args.kind, args.dev_share)
    for name, part in ((args.dev_name, dev), (args.locked_name, locked)):
        out = BLIND / f"{args.kind}_{name}.json"
        out.write_text(json.dumps(part, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{out.relative_to(BLIND.parents[1])}: {len(part)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
