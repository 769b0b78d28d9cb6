"""Ingestion that survives faults, with real processes: a real Celery worker (`python -m ingestion
worker`) on real Redis, the real NG12 PDF, and the PDF parser's child process.

- a transient retrieval failure (nothing listens at RETRIEVAL_ADDR: UNAVAILABLE) is retried, at
  most INGESTION_MAX_RETRIES times, then the job is FAILED with the reason and not delivered again;
- a job delivered again after its worker died too often fails at once with the reason;
- the liveness heartbeat is rewritten while the worker runs and goes stale when it is frozen;
- the parser's limits: file size, page count, wall time, memory (each a clear ParseLimitExceeded).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from ingestion.kb.errors import KnowledgeBaseError
from ingestion.parse_guard import MB, ParseLimitExceeded, ParseLimits, parse_pdf_guarded

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
from tests.support import free_port, start_process, wait_for  # noqa: E402

MAX_RETRIES = 2
HEARTBEAT_MAX_AGE = 3.0


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, redis_url: str, ng12_pdf: Path
) -> Iterator[dict[str, object]]:
    tmp = tmp_path_factory.mktemp("worker")
    heartbeat = tmp / "heartbeat"
    env = {
        **os.environ,
        "ENVIRONMENT": "test",
        "REDIS_URL": redis_url,
        "RETRIEVAL_ADDR": f"127.0.0.1:{free_port()}",  # nothing listens: UNAVAILABLE
        "RETRIEVAL_TIMEOUT_SECONDS": "3",
        "METRICS_PORT": "0",
        "NG12_PDF": str(ng12_pdf),
        "KB_DIR": str(tmp / "kb"),
        "INGEST_ON_START": "never",
        "HEARTBEAT_FILE": str(heartbeat),
        "HEARTBEAT_INTERVAL_SECONDS": "0.5",
        "INGESTION_MAX_RETRIES": str(MAX_RETRIES),
        "INGESTION_RETRY_BACKOFF_SECONDS": "0.2",
    }
    log_path = tmp / "worker.log"
    proc = start_process(["-m", "ingestion", "worker"], env, log_path)
    client = Celery("test-client", broker=redis_url, backend=redis_url)
    try:
        wait_for(lambda: heartbeat.exists(), 60, what="the worker's first heartbeat")
        yield {
            "proc": proc,
            "client": client,
            "heartbeat": heartbeat,
            "log": log_path,
            "redis_url": redis_url,
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _attempts(redis_url: str, task_id: str) -> int:
    value = redis.Redis.from_url(redis_url).get(f"ng12:ingestion:attempts:{task_id}")
    return int(value) if value else 0


def test_transient_failures_are_retried_then_failed_with_the_reason(worker: dict[str, object]) -> None:
    client: Celery = worker["client"]  # type: ignore[assignment]
    task_id = str(uuid.uuid4())
    client.send_task("ingestion.ingest_pdf", kwargs={"pdf_path": None, "activate": True}, task_id=task_id)
    result = client.AsyncResult(task_id)
    result.get(timeout=180, propagate=False)
    assert result.state == "FAILURE", result.state
    message = str(result.result)
    assert "UNAVAILABLE" in message and f"attempt {MAX_RETRIES + 1} of {MAX_RETRIES + 1}" in message, message
    assert _attempts(str(worker["redis_url"]), task_id) == MAX_RETRIES + 1
    time.sleep(1.5)  # acknowledged: it is not delivered again
    assert _attempts(str(worker["redis_url"]), task_id) == MAX_RETRIES + 1
    log = Path(str(worker["log"])).read_text(encoding="utf-8", errors="replace")
    assert log.count("ingest_retrying") >= MAX_RETRIES


def test_a_job_whose_worker_kept_dying_fails_at_once_with_the_reason(worker: dict[str, object]) -> None:
    client: Celery = worker["client"]  # type: ignore[assignment]
    redis_url = str(worker["redis_url"])
    task_id = str(uuid.uuid4())
    # as if it had been delivered MAX_RETRIES + 1 times and its worker died each time
    redis.Redis.from_url(redis_url).set(f"ng12:ingestion:attempts:{task_id}", MAX_RETRIES + 1, ex=600)
    started = time.monotonic()
    client.send_task("ingestion.ingest_pdf", kwargs={"pdf_path": None, "activate": True}, task_id=task_id)
    result = client.AsyncResult(task_id)
    result.get(timeout=60, propagate=False)
    assert result.state == "FAILURE"
    assert f"gave up after {MAX_RETRIES + 1} attempts" in str(result.result), result.result
    assert time.monotonic() - started < 30, "it should not have parsed the PDF again"


def test_heartbeat_is_fresh_while_the_worker_runs_and_stale_when_it_is_frozen(
    worker: dict[str, object],
) -> None:
    proc: subprocess.Popen[bytes] = worker["proc"]  # type: ignore[assignment]
    heartbeat = str(worker["heartbeat"])
    probe = [sys.executable, "-m", "ng12_common.healthcheck", "heartbeat", heartbeat, str(HEARTBEAT_MAX_AGE)]
    assert subprocess.run(probe, check=False, timeout=30).returncode == 0
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        time.sleep(HEARTBEAT_MAX_AGE + 1.5)
        assert subprocess.run(probe, check=False, timeout=30).returncode == 1, "a frozen worker looked alive"
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    wait_for(
        lambda: subprocess.run(probe, check=False, timeout=30).returncode == 0, 15, what="fresh heartbeat"
    )


# ----------------------------------------------------------------------------- parse limits


def test_parse_in_child_builds_the_knowledge_base(ng12_pdf: Path) -> None:
    kb = parse_pdf_guarded(ng12_pdf, ParseLimits(memory_bytes=768 * MB, wall_seconds=300))
    assert len(kb.recommendations) == 109


def test_file_size_cap(ng12_pdf: Path) -> None:
    with pytest.raises(ParseLimitExceeded, match="INGESTION_MAX_PDF_MB"):
        parse_pdf_guarded(ng12_pdf, ParseLimits(max_bytes=100_000))


def test_page_count_cap(ng12_pdf: Path) -> None:
    with pytest.raises(
        ParseLimitExceeded, match=r"95 pages, over the limit of 50 \(INGESTION_MAX_PDF_PAGES\)"
    ):
        parse_pdf_guarded(ng12_pdf, ParseLimits(max_pages=50))


def test_wall_time_limit_kills_the_parser(ng12_pdf: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ParseLimitExceeded, match="INGESTION_PARSE_TIMEOUT_SECONDS"):
        parse_pdf_guarded(ng12_pdf, ParseLimits(wall_seconds=0.5))
    assert time.monotonic() - started < 15


def test_memory_limit_stops_the_parser(ng12_pdf: Path) -> None:
    with pytest.raises(ParseLimitExceeded, match="INGESTION_PARSE_MEMORY_MB"):
        parse_pdf_guarded(ng12_pdf, ParseLimits(memory_bytes=40 * MB))


def test_bad_input_is_still_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "not.pdf"
    bogus.write_bytes(b"hello, not a pdf")
    with pytest.raises(KnowledgeBaseError) as info:
        parse_pdf_guarded(bogus)
    assert not isinstance(info.value, ParseLimitExceeded)
    assert "not.pdf" in str(info.value)
