"""Attach curated structured criteria to parsed recommendations, pinned to their wording.

``data/curated_criteria.yaml`` holds one entry per recommendation id: the criteria tree (rule
language in ``ng12_common.criteria``), a note, and ``text_hash`` = ``text_hash(verbatim text)`` of the
text the criteria were written against. ``attach_criteria`` uses an entry only while that hash
still matches the parsed text: a changed recommendation is reported STALE and gets no criteria
until a person re-reads it and re-pins it.

Re-pinning is a reviewed, explicit step::

    python -m ingestion.kb.criteria pin --pdf PATH          # dry run: lists what changed
    python -m ingestion.kb.criteria pin --pdf PATH --write  # rewrites only the listed hashes

``--write`` refuses unless the changed ids are named with ``--ids`` or ``--all-listed`` is given, and
it prints every hash it rewrites, so nothing is re-pinned silently.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ingestion.kb.lexicon import known_concepts
from ng12_common.criteria import dump_criteria, parse_criteria, referenced_concepts, referenced_recs
from ng12_common.knowledge import Recommendation

CURATED_FILE = "curated_criteria.yaml"
SITE_SPECIFIC_SECTIONS = tuple(f"1.{n}" for n in range(1, 14))  # 1.1 ... 1.13
_ID = re.compile(r"^1\.\d{1,2}\.\d{1,2}$")


class CuratedEntry(BaseModel):
    """One curated criteria entry as written in the YAML."""

    model_config = ConfigDict(extra="forbid")
    text_hash: str = ""
    note: str = ""
    criteria: dict[str, Any]
    status: str = Field(default="curated", pattern="^(curated|derived)$")


def _data_path() -> Path:
    return Path(str(resources.files("ingestion.kb").joinpath("data", CURATED_FILE)))


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, CuratedEntry]:
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping of recommendation id -> entry")
    out: dict[str, CuratedEntry] = {}
    for rid, body in raw.items():
        rid = str(rid)
        if not _ID.match(rid):
            raise ValueError(f"{path}: bad recommendation id {rid!r}")
        out[rid] = CuratedEntry.model_validate(body)
    return out


def load_curated(path: str | Path | None = None) -> dict[str, CuratedEntry]:
    """The curated entries, keyed by recommendation id (YAML anchors resolved)."""
    return _load(str(path or _data_path()))


def validate_curated(
    entries: dict[str, CuratedEntry], known_rec_ids: Sequence[str] | None = None
) -> list[str]:
    """Problems with the curated data: rule-language errors, unknown concepts, unknown rec ids."""
    problems: list[str] = []
    concepts = known_concepts()
    for rid, entry in entries.items():
        try:
            tree = parse_criteria(entry.criteria)
        except ValidationError as exc:
            problems.append(
                f"{rid}: criteria do not parse: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}"
            )
            continue
        for kind, names in referenced_concepts(tree).items():
            for name in sorted(names):
                if name not in concepts:
                    problems.append(f"{rid}: unknown {kind} concept {name!r} (add it to lexicon.yaml)")
                elif kind == "test" and concepts[name] != "test":
                    problems.append(
                        f"{rid}: {name!r} is used as a test but the lexicon says {concepts[name]}"
                    )
        targets = set(entries) | set(known_rec_ids or [])
        for dep in sorted(referenced_recs(tree)):
            if dep not in targets:
                problems.append(f"{rid}: rec_applies refers to unknown recommendation {dep}")
        if known_rec_ids is not None and rid not in known_rec_ids:
            problems.append(f"{rid}: no such recommendation in the parsed guideline")
    return problems


def is_site_specific(rec_id: str) -> bool:
    return ".".join(rec_id.split(".")[:2]) in SITE_SPECIFIC_SECTIONS


def attach_criteria(
    recommendations: list[Recommendation], curated: dict[str, CuratedEntry] | None = None
) -> dict[str, Any]:
    """Set ``criteria``/``criteria_status`` on each recommendation (in place) and report coverage.

    curated entry with matching hash -> criteria, "curated"; hash differs -> no criteria, "stale";
    no entry -> "none". Returns {curated, derived, stale, none, unused, site_specific_total,
    site_specific_covered, site_specific_missing, problems}; `unused` are curated entries that
    match no recommendation of this guideline.
    """
    entries = curated if curated is not None else load_curated()
    problems = validate_curated(entries, [r.id for r in recommendations])
    bad = {p.split(":", 1)[0] for p in problems}
    counts = {"curated": 0, "derived": 0}
    stale: list[str] = []
    none: list[str] = []
    for rec in recommendations:
        entry = entries.get(rec.id)
        if entry is None or rec.id in bad:
            rec.criteria, rec.criteria_status = None, "none"
            none.append(rec.id)
        elif entry.text_hash != rec.text_hash:
            rec.criteria, rec.criteria_status = None, "stale"
            stale.append(rec.id)
        else:
            rec.criteria = dump_criteria(parse_criteria(entry.criteria))
            rec.criteria_status = "curated" if entry.status == "curated" else "derived"
            counts[rec.criteria_status] += 1
    site = [r for r in recommendations if is_site_specific(r.id)]
    covered = [r for r in site if r.criteria_status in ("curated", "derived")]
    return {
        "curated": counts["curated"],
        "derived": counts["derived"],
        "stale": stale,
        "none": none,
        "unused": sorted(set(entries) - {r.id for r in recommendations}),
        "site_specific_total": len(site),
        "site_specific_covered": len(covered),
        "site_specific_missing": [r.id for r in site if r.criteria_status not in ("curated", "derived")],
        "problems": problems,
    }


# --------------------------------------------------------------------------------------------
# pin: review and re-pin hashes
# --------------------------------------------------------------------------------------------


def pin_changes(
    recommendations: list[Recommendation], entries: dict[str, CuratedEntry]
) -> list[dict[str, str]]:
    """Entries whose pinned hash differs from the parsed text's hash (for review)."""
    by_id = {r.id: r for r in recommendations}
    out = []
    for rid, entry in entries.items():
        rec = by_id.get(rid)
        if rec is None:
            out.append(
                {"id": rid, "old": entry.text_hash, "new": "", "text": "(not in the parsed guideline)"}
            )
        elif entry.text_hash != rec.text_hash:
            out.append({"id": rid, "old": entry.text_hash, "new": rec.text_hash, "text": rec.text})
    return out


def rewrite_hashes(path: Path, new_hashes: dict[str, str]) -> list[str]:
    """Replace the ``text_hash`` line of the given entries in the YAML text (comments kept)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    current: str | None = None
    done: list[str] = []
    head = re.compile(r'^"?(1\.\d{1,2}\.\d{1,2})"?:\s*$')
    pin = re.compile(r'^(\s+text_hash:\s*)(".*?"|\S*)\s*$')
    for i, line in enumerate(lines):
        m = head.match(line)
        if m:
            current = m.group(1)
            continue
        p = pin.match(line)
        if p and current in new_hashes and current not in done:
            lines[i] = f'{p.group(1)}"{new_hashes[current]}"\n'
            done.append(current)
    path.write_text("".join(lines), encoding="utf-8")
    _load.cache_clear()
    return done


def _cli_pin(args: argparse.Namespace) -> int:
    from ingestion.kb.part_a import parse_recommendations  # heavy: only for the command

    recs = parse_recommendations(args.pdf)
    path = Path(args.file) if args.file else _data_path()
    entries = load_curated(path)
    changes = pin_changes(recs, entries)
    missing = [r.id for r in recs if is_site_specific(r.id) and r.id not in entries]
    if not changes:
        print("All curated entries match the parsed text.")
    for ch in changes:
        print(f"--- {ch['id']}: pinned {ch['old'] or '(unpinned)'} -> text now {ch['new'] or '-'}")
        print("    " + ch["text"].replace("\n", "\n    "))
    if missing:
        print(f"Site-specific recommendations with no curated entry: {', '.join(missing)}")
    if not args.write:
        if changes:
            print(
                f"\n{len(changes)} entr{'y' if len(changes) == 1 else 'ies'} changed. Re-read each text and "
                "its criteria, then run with --write --ids ... (or --all-listed)."
            )
        return 1 if changes else 0
    wanted = {c["id"] for c in changes if c["new"]}
    if args.ids:
        chosen = set(args.ids.split(","))
        unknown = chosen - wanted
        if unknown:
            print(
                f"Refusing: {', '.join(sorted(unknown))} did not change or are not parsed.", file=sys.stderr
            )
            return 2
        wanted = chosen
    elif not args.all_listed:
        print("Refusing to write: name the reviewed ids with --ids or pass --all-listed.", file=sys.stderr)
        return 2
    new = {c["id"]: c["new"] for c in changes if c["id"] in wanted}
    for rid in sorted(new):
        print(f"rewriting {rid}: text_hash {new[rid]}")
    rewrite_hashes(path, new)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ingestion.kb.criteria", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    pin = sub.add_parser("pin", help="compare pinned hashes with a PDF; optionally rewrite reviewed ones")
    pin.add_argument("--pdf", required=True)
    pin.add_argument("--file", help="curated YAML (default: the packaged one)")
    pin.add_argument("--write", action="store_true", help="rewrite the hashes of the listed entries")
    pin.add_argument("--ids", help="comma-separated ids reviewed for --write")
    pin.add_argument(
        "--all-listed", action="store_true", help="with --write: every listed entry was reviewed"
    )
    args = parser.parse_args(argv)
    if args.command == "pin":
        return _cli_pin(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
