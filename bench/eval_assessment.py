"""`make eval-dev` (assessment part): score the 25 development cases on the REAL path.

Starts a real retrieval server (repo-root conftest `start_retrieval`), ingests the NG12 PDF into
it with the real ingestion pipeline, then posts every case to the assessment app in-process
(POST /assess with the case's record). Prints per-case results and: must-cite recall (each
must_cite_any group counts as one), must-not-cite violations, top-action accuracy and
no_criteria_met accuracy.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = Path(
    os.environ.get("ASSESSMENT_DEV_CASES", REPO.parent / "shared" / "eval-dev" / "assessment_dev.json")
)


def main() -> int:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from fastapi.testclient import TestClient

    from assessment.app import create_app
    from assessment.dev_eval import case_record, score_case, summary
    from assessment.settings import AssessmentSettings
    from ingestion.pipeline import ingest_pdf
    from tests.support import find_pdf, start_retrieval, stop_process

    cases = json.loads(CASES.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="eval-assessment-") as tmp_dir:
        tmp = Path(tmp_dir)
        proc, port, _metrics, log_path = start_retrieval(tmp)
        try:
            started = time.perf_counter()
            ingest_pdf(find_pdf(), f"127.0.0.1:{port}", kb_dir=tmp / "kb")
            print(f"retrieval on :{port}, NG12 indexed in {time.perf_counter() - started:.1f}s")
            settings = AssessmentSettings(
                retrieval_addr=f"127.0.0.1:{port}",
                patients_file=REPO / "data" / "patients.json",
                retrieval_timeout_seconds=10.0,
                environment="test",
            )
            scores = []
            with TestClient(create_app(settings)) as client:
                for case in cases:
                    reply = client.post("/assess", json=case_record(case))
                    if reply.status_code != 200:
                        print(f"{case['patient_id']}: HTTP {reply.status_code} {reply.text[:300]}")
                        return 1
                    body = reply.json()
                    s = score_case(case, body)
                    scores.append(s)
                    matched = [m["recommendation_id"] for m in body["assessment"]["matched_recommendations"]]
                    flag = "ok " if s.correct else "BAD"
                    print(
                        f"{flag} {s.case_id:7} top={s.top_action:34} matched={','.join(matched) or '-'}"
                        + (f" missing={s.missing}" if s.missing else "")
                        + (f" violations={s.violations}" if s.violations else "")
                    )
        finally:
            stop_process(proc)  # type: ignore[arg-type]
    result = summary(scores)
    print(
        f"cases {result['cases']}, fully correct {result['fully_correct']}/{result['cases']}; "
        f"must-cite recall {result['must_cite_recall']:.3f} ({result['must_cite_items']} items); "
        f"must-not-cite violations {result['must_not_cite_violations']}; "
        f"top-action accuracy {result['top_action_accuracy']:.3f}; "
        f"no_criteria_met accuracy {result['no_criteria_met_accuracy']:.3f} "
        f"({result['no_criteria_met_cases']} cases)"
    )
    _ = log_path
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
