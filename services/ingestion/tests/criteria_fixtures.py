"""Session fixtures for the criteria and lexicon tests: the real PDF is parsed once per session.

The parse comes from the ingestion tests' ``ng12_parsed`` session fixture (conftest.py) when it is
available, otherwise from ``ingestion.kb.parse.parse_guideline`` cached for the process. Import
with ``from criteria_fixtures import *`` after putting this directory on ``sys.path`` (the
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
from ng12_common.knowledge import LexiconEntry, Recommendation, SymptomRow
from tests.support import find_eval_dev

NG12_PDF = Path(os.environ.get("NG12_PDF") or "/work/shared/ng12/ng12.pdf")
DEV_CASES = find_eval_dev("assessment_dev.json")

Parsed = tuple[tuple[Recommendation, ...], tuple[SymptomRow, ...]]


@lru_cache(maxsize=1)
def _parse_once() -> Parsed:
    from ingestion.kb.parse import parse_guideline

    parsed = parse_guideline(NG12_PDF)
    return tuple(parsed.recommendations), tuple(parsed.symptom_rows)


@pytest.fixture(scope="session")
def ng12_source(request: pytest.FixtureRequest) -> Parsed:
    """Parsed recommendations and Part B rows, untouched (copy before changing them)."""
    try:
        parsed = request.getfixturevalue("ng12_parsed")
        return tuple(parsed.recommendations), tuple(parsed.symptom_rows)
    except pytest.FixtureLookupError:
        if not NG12_PDF.exists():
            pytest.fail(f"the NG12 PDF is needed: set NG12_PDF (looked for {NG12_PDF})")
        return _parse_once()


@pytest.fixture
def fresh_recs(ng12_source: Parsed) -> list[Recommendation]:
    """Deep copies of the parsed recommendations, without criteria, for tests that alter them."""
    return [
        r.model_copy(deep=True, update={"criteria": None, "criteria_status": "none"}) for r in ng12_source[0]
    ]


@pytest.fixture(scope="session")
def attached(ng12_source: Parsed) -> tuple[list[Recommendation], dict[str, Any]]:
    from ingestion.kb.criteria import attach_criteria

    recs = [r.model_copy(deep=True) for r in ng12_source[0]]
    report = attach_criteria(recs)
    return recs, report


@pytest.fixture(scope="session")
def ng12_recs(attached: tuple[list[Recommendation], dict[str, Any]]) -> list[Recommendation]:
    """Parsed recommendations with curated criteria attached."""
    return attached[0]


@pytest.fixture(scope="session")
def coverage_report(attached: tuple[list[Recommendation], dict[str, Any]]) -> dict[str, Any]:
    return attached[1]


@pytest.fixture(scope="session")
def kb_lexicon(ng12_recs: list[Recommendation], ng12_source: Parsed) -> list[LexiconEntry]:
    from ingestion.kb.lexicon import build_lexicon

    return build_lexicon(ng12_recs, ng12_source[1])


@pytest.fixture(scope="session")
def eval_ctx(ng12_recs: list[Recommendation], kb_lexicon: list[LexiconEntry]) -> EvalContext:
    return EvalContext({r.id: r.criteria for r in ng12_recs}, {e.concept: e.label for e in kb_lexicon})


def results(ctx: EvalContext, **facts: Any) -> dict[str, EvalResult]:
    """Evaluate every recommendation for a patient given as PatientFacts keyword arguments."""
    return evaluate_all(PatientFacts(**facts), ctx)


def met_ids(ctx: EvalContext, **facts: Any) -> set[str]:
    return {rid for rid, r in results(ctx, **facts).items() if r.met}


def dev_cases() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(DEV_CASES.read_text(encoding="utf-8"))
    return data


__all__ = [
    "attached",
    "coverage_report",
    "dev_cases",
    "eval_ctx",
    "fresh_recs",
    "kb_lexicon",
    "met_ids",
    "ng12_recs",
    "ng12_source",
    "results",
]
