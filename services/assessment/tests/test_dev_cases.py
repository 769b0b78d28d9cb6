"""The 25 development cases (../shared/eval-dev/assessment_dev.json) through the real API: all correct."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from assessment.dev_eval import case_record, score_case, summary
from tests.support import find_eval_dev

CASES_FILE = find_eval_dev("assessment_dev.json")
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))


def test_every_dev_case_is_fully_correct(live_client: TestClient) -> None:
    scores = []
    for case in CASES:
        reply = live_client.post("/assess", json=case_record(case))
        assert reply.status_code == 200, (case["patient_id"], reply.text)
        scores.append(score_case(case, reply.json()))
    wrong = [(s.case_id, s.missing, s.violations, s.top_action) for s in scores if not s.correct]
    assert not wrong, wrong
    result = summary(scores)
    assert result["must_cite_recall"] == 1.0 and result["must_not_cite_violations"] == 0
