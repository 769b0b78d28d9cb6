"""Celery tasks. `ingestion.ingest_pdf` is the public task name the gateway enqueues by name.

Faults (docs/deploy.md, "Ingestion limits"): every delivery of a job counts one attempt in Redis
(`ng12:ingestion:attempts:<job id>`), whether it is the first run, a retry after a transient
retrieval error (UNAVAILABLE, DEADLINE_EXCEEDED, ...: retried with a growing countdown), or a
redelivery after the worker running it died (acks_late + reject_on_worker_lost: the message is
not lost, it comes back). A job is tried at most 1 + INGESTION_MAX_RETRIES times; past that it
is marked FAILED with the reason and acknowledged, so no message loops forever. Bad input (not a
PDF, not NG12, over a parsing limit) fails at once: trying again cannot help.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import grpc
import redis
from celery import Task
from prometheus_client import Counter, Histogram

from ingestion.celery_app import app, settings
from ingestion.kb.errors import KnowledgeBaseError
from ingestion.liveness import beating_until
from ingestion.parse_guard import limits_from_settings
from ingestion.pipeline import ingest_pdf as run_pipeline
from ng12_common.logs import current_request_id, get_logger
from ng12_common.redis_client import make_sync_redis
from ng12_common.tracing import link_request_id

log = get_logger("ingestion.tasks")

INGESTIONS = Counter(
    "ng12_ingestion_tasks_total",
    "Ingestion task runs, by outcome: succeeded, failed (for good), retried (will run again).",
    ["outcome"],
)
INGESTION_SECONDS = Histogram(
    "ng12_ingestion_task_duration_seconds",
    "Time to parse the PDF, build and upload an index version.",
    buckets=(5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 1800),
)
ATTEMPTS_KEY = "ng12:ingestion:attempts:{task_id}"
ATTEMPTS_TTL_SECONDS = 7 * 24 * 3600
#: gRPC codes worth another try: retrieval restarting, overloaded or slow.
TRANSIENT_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
    }
)
_redis: redis.Redis | None = None


class IngestionFailed(RuntimeError):
    """An ingestion that could not complete; the message is what the admin sees."""


def _is_upload(path: Path) -> bool:
    """A PDF the gateway stored for this job in UPLOAD_DIR (removed when the job ends)."""
    try:
        return path.resolve().parent == settings.upload_dir.resolve()
    except OSError:
        return False


def max_attempts() -> int:
    return 1 + settings.ingestion_max_retries


def count_attempt(task_id: str) -> int:
    """This delivery's attempt number (1 for the first), kept in Redis across worker deaths."""
    global _redis
    if _redis is None:
        _redis = make_sync_redis(settings.redis_url)
    key = ATTEMPTS_KEY.format(task_id=task_id)
    pipe = _redis.pipeline()
    pipe.incr(key)
    pipe.expire(key, ATTEMPTS_TTL_SECONDS)
    attempt, _ = pipe.execute()
    return int(attempt)


def retry_countdown(attempt: int) -> float:
    return float(settings.ingestion_retry_backoff_seconds * (2 ** (attempt - 1)))


@app.task(bind=True, name="ingestion.ingest_pdf")
def ingest_pdf(
    self: Task,
    pdf_path: str | None = None,
    activate: bool = True,
    force: bool = False,
    filename: str | None = None,
) -> dict[str, Any]:
    path = Path(pdf_path) if pdf_path else settings.ng12_pdf
    task_id = self.request.id  # progress is also reported from gRPC's request-streaming thread
    link_request_id(current_request_id())  # on the Celery instrumentation's task span
    attempt = count_attempt(task_id)
    if attempt > max_attempts():
        INGESTIONS.labels(outcome="failed").inc()
        reason = (
            f"gave up after {max_attempts()} attempts: the job was delivered again {attempt - 1} times "
            "(its worker died or was restarted while running it, e.g. out of memory or over the "
            f"{settings.ingestion_task_time_limit_seconds:g} s time limit)"
        )
        log.error("ingest_gave_up", attempt=attempt, reason=reason)
        if _is_upload(path):
            path.unlink(missing_ok=True)
        raise IngestionFailed(reason)

    def progress(stage: str, fraction: float) -> None:
        try:
            self.update_state(
                task_id=task_id,
                state="PROGRESS",
                meta={"stage": stage, "progress": round(fraction, 3), "attempt": attempt},
            )
        except Exception as exc:  # noqa: BLE001 - progress reporting must never break an ingestion
            log.warning("progress_not_recorded", stage=stage, error=repr(exc))

    log.info("ingest_started", pdf=str(path), activate=activate, attempt=attempt, max_attempts=max_attempts())
    started = time.monotonic()
    deadline = started + settings.ingestion_task_time_limit_seconds
    outcome = "failed"
    try:
        with beating_until(deadline), INGESTION_SECONDS.time():
            result = run_pipeline(
                path,
                settings.retrieval_addr,
                kb_dir=settings.kb_dir,
                activate=activate,
                batch_size=settings.upload_batch_size,
                timeout=settings.retrieval_timeout_seconds,
                service_token=settings.retrieval_service_token,
                progress=progress,
                force=force,
                source_filename=filename or "",
                limits=limits_from_settings(
                    settings.ingestion_max_pdf_mb,
                    settings.ingestion_max_pdf_pages,
                    settings.ingestion_parse_timeout_seconds,
                    settings.ingestion_parse_memory_mb,
                ),
                deadline=deadline,
            )
        outcome = "succeeded"
        result["attempt"] = attempt
        return result
    except KnowledgeBaseError as exc:  # bad input or a parsing limit: another try cannot help
        raise IngestionFailed(str(exc)) from None
    except grpc.RpcError as exc:  # gRPC errors do not pickle; report what retrieval said
        code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
        details = exc.details() if hasattr(exc, "details") else str(exc)
        message = f"retrieval refused the index build ({code.name}): {details}"
        if code in TRANSIENT_CODES and attempt < max_attempts() and time.monotonic() < deadline:
            outcome = "retried"
            countdown = retry_countdown(attempt)
            log.warning("ingest_retrying", attempt=attempt, countdown_seconds=countdown, error=message)
            raise self.retry(exc=IngestionFailed(message), countdown=countdown, max_retries=None) from None
        raise IngestionFailed(f"{message} (attempt {attempt} of {max_attempts()})") from None
    finally:
        INGESTIONS.labels(outcome=outcome).inc()
        if outcome != "retried" and _is_upload(path):  # retrieval keeps the version's own copy
            path.unlink(missing_ok=True)
