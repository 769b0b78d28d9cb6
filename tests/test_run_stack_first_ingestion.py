"""`make run`'s launcher reports a failed first-start ingestion at once (not at its ready timeout):
the whole stack as real processes, with NG12_PDF pointing at a file that is not a PDF."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import redis

from ng12_common.jobs import BOOTSTRAP_LOCK, CELERY_RESULT_KEY, first_ingestion_failure
from tests.support import load_launcher, stack_config

pytestmark = pytest.mark.e2e
REDIS_DB = 14  # its own database: e2e 13, tests 15, benches 10 and 12; flushed here


def test_a_failed_first_ingestion_is_reported_before_the_timeout(tmp_path: Path, redis_url: str) -> None:
    url = re.sub(r"/\d+$", f"/{REDIS_DB}", redis_url)
    client = redis.Redis.from_url(url)
    client.flushdb()
    # an earlier run's first ingestion that failed: the worker retries, the launcher ignores it
    client.set(BOOTSTRAP_LOCK, "task-of-an-earlier-run")
    client.set(
        CELERY_RESULT_KEY.format(task_id="task-of-an-earlier-run"),
        json.dumps(
            {
                "status": "FAILURE",
                "result": {"exc_type": "IngestionFailed", "exc_message": ["an old failure"]},
                "task_id": "task-of-an-earlier-run",
            }
        ),
    )
    not_a_pdf = tmp_path / "ng12.pdf"
    not_a_pdf.write_text("this is not the NG12 PDF", encoding="utf-8")
    launcher = load_launcher()
    cfg = stack_config(launcher, redis_url=url, ng12_pdf=not_a_pdf, var_dir=tmp_path / "var")
    stack = launcher.Stack(cfg)
    stack.start()
    try:
        timeout = 240.0
        started = time.monotonic()
        with pytest.raises(RuntimeError) as failed:
            stack.wait_ready(timeout)
        assert time.monotonic() - started < timeout  # reported, not timed out
    finally:
        stack.stop()
    message = str(failed.value)
    assert "the first ingestion of" in message and str(not_a_pdf) in message
    assert "PDF" in message and "an old failure" not in message  # the worker's reason, this run
    assert "ingestion-worker.log" in message
    task_id = client.get(BOOTSTRAP_LOCK).decode()
    assert task_id != "task-of-an-earlier-run"
    assert client.get(CELERY_RESULT_KEY.format(task_id=task_id))
    assert first_ingestion_failure(client, ignore_task_id=task_id) is None
    client.flushdb()
