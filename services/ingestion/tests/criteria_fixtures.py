"""Session fixtures for the criteria and lexicon tests: the real PDF is parsed once per session.

Import with ``from criteria_fixtures import *`` after putting this directory on ``sys.path`` (the
repository runs pytest with ``--import-mode=importlib``, which does not add test directories).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from ng12_common.criteria import EvalContext, EvalResult, PatientFacts, evaluate_all
from ng12_common.knowledge import LexiconEntry, Recommendation

NG12_PDF = Path(os.environ.get("NG12_PDF", "/work/shared/ng12/ng12.pdf"))
DEV_CASES = Path(os.environ.get("NG12_DEV_CASES", "/work/shared/eval-dev/assessment_dev.json"))


@lru_cache(maxsize=1)
def _parsed() -> tuple[Recommendation, ...]:
    from ingestion.kb.part_a import parse_recommendations

    return tuple(parse_recommendations(NG12_PDF))


def fresh_recommendations() -> list[Recommendation]:
    """Deep copies of the parsed recommendations (parsed once per process)."""
    if not NG12_PDF.exists():
        pytest.skip(f"NG12 PDF not found at {NG12_PDF} (set NG12_PDF)")
    return [r.model_copy(deep=True) for r in _parsed()]


@lru_cache(maxsize=1)
def _attached() -> tuple[tuple[Recommendation, ...], dict[str, Any]]:
    from ingestion.kb.criteria import attach_criteria

    recs = fresh_recommendations()
    report = attach_criteria(recs)
    return tuple(recs), report


@pytest.fixture(scope="session")
def ng12_recs() -> list[Recommendation]:
    """Parsed recommendations with curated criteria attached."""
    return list(_attached()[0])


@pytest.fixture(scope="session")
def coverage_report() -> dict[str, Any]:
    return _attached()[1]


@pytest.fixture(scope="session")
def kb_lexicon(ng12_recs: list[Recommendation]) -> list[LexiconEntry]:
    from ingestion.kb.lexicon import build_lexicon

    return build_lexicon(ng12_recs)


@pytest.fixture(scope="session")
def eval_ctx(ng12_recs: list[Recommendation], kb_lexicon: list[LexiconEntry]) -> EvalContext:
    return EvalContext({r.id: r.criteria for r in ng12_recs}, {e.concept: e.label for e in kb_lexicon})


def results(ctx: EvalContext, **facts: Any) -> dict[str, EvalResult]:
    """Evaluate every recommendation for a patient given as PatientFacts keyword arguments."""
    return evaluate_all(PatientFacts(**facts), ctx)


def met_ids(ctx: EvalContext, **facts: Any) -> set[str]:
    return {rid for rid, r in results(ctx, **facts).items() if r.met}


def dev_cases() -> list[dict[str, Any]]:
    if not DEV_CASES.exists():
        pytest.skip(f"dev cases not found at {DEV_CASES}")
    data: list[dict[str, Any]] = json.loads(DEV_CASES.read_text(encoding="utf-8"))
    return data


__all__ = [
    "coverage_report",
    "dev_cases",
    "eval_ctx",
    "fresh_recommendations",
    "kb_lexicon",
    "met_ids",
    "ng12_recs",
    "results",
]
