"""The Celery application (Redis broker and result backend) and its request-id plumbing.

Reliability: tasks are acknowledged late and re-queued if a worker dies mid-task, one at a
time per worker (prefetch 1), so nothing acknowledged is lost. A job that fails or kills its
worker comes back at most INGESTION_MAX_RETRIES times, then is FAILED with the reason
(ingestion.tasks counts every delivery). The worker runs the solo pool (its metrics are served by
the same process), so Celery's own time limits would not be enforced: the task's time limit is
INGESTION_TASK_TIME_LIMIT_SECONDS, enforced by the parse limits and the upload deadline, and by the
heartbeat that stops past it (ingestion.liveness). A message whose worker vanished (SIGKILL, node
lost) is redelivered by the broker once its visibility timeout passes: the time limit plus
INGESTION_REDELIVERY_MARGIN_SECONDS (600), so a job still running is never handed to a second
worker; workers look for such jobs every few seconds (`redelivery_options`).

The request id travels in the task headers (`request_id`) and is bound to every log line while
the task runs; with tracing on, the trace context travels in the headers too (the Celery
instrumentation) and `ingest_pdf` puts the request id on the task's span.
"""

from __future__ import annotations

from typing import Any

from asgi_correlation_id.context import correlation_id
from celery import Celery
from celery.signals import before_task_publish, task_postrun, task_prerun

from ingestion.settings import IngestionSettings
from ng12_common.settings import load_settings

settings = load_settings(IngestionSettings, "ingestion")


def redelivery_options(time_limit_seconds: float, margin_seconds: float) -> dict[str, int]:
    """The Redis transport's redelivery of a vanished worker's job: its visibility timeout (the
    time limit plus INGESTION_REDELIVERY_MARGIN_SECONDS), and how often a worker scans for such
    jobs: every `unacked_restore_interval` seconds (half the margin, 1-10 s) with no throttle
    (kombu's default throttle scans only every tenth time, ~100 s)."""
    return {
        "visibility_timeout": int(time_limit_seconds + margin_seconds),
        "unacked_restore_interval": max(1, min(10, int(margin_seconds / 2))),
        "unacked_restore_throttle": 1,
    }


app = Celery("ingestion", broker=settings.redis_url, backend=settings.redis_url, include=["ingestion.tasks"])
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_track_started=True,
    result_extended=True,
    result_expires=7 * 24 * 3600,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    task_acks_on_failure_or_timeout=True,  # a FAILED job is acknowledged: it never comes back
    broker_transport_options=redelivery_options(
        settings.ingestion_task_time_limit_seconds, settings.ingestion_redelivery_margin_seconds
    ),
)


@before_task_publish.connect
def _stamp_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    rid = correlation_id.get()
    if headers is not None and rid and "request_id" not in headers:
        headers["request_id"] = rid


@task_prerun.connect
def _bind_request_id(task: Any = None, **_: Any) -> None:
    rid = getattr(task.request, "request_id", None) if task is not None else None
    if rid is None and task is not None:
        rid = (getattr(task.request, "headers", None) or {}).get("request_id")
    correlation_id.set(str(rid) if rid else (task.request.id if task is not None else None))


@task_postrun.connect
def _unbind_request_id(**_: Any) -> None:
    correlation_id.set(None)
