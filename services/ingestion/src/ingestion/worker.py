"""Runs the Celery worker: JSON logs, a metrics HTTP port, the liveness heartbeat file
(ingestion.liveness), and the first-start ingest.

On start with INGEST_ON_START=if_empty, if retrieval has no active index, one ingestion of
NG12_PDF is enqueued (a Redis lock makes sure several workers enqueue it once).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from celery import states
from celery.signals import worker_ready
from prometheus_client import start_http_server

from ingestion.celery_app import app, settings
from ingestion.index_upload import has_active_index
from ingestion.liveness import HeartbeatStep
from ng12_common.jobs import BOOTSTRAP_LOCK
from ng12_common.logs import configure_logging, get_logger
from ng12_common.redis_client import make_sync_redis
from ng12_common.tracing import configure_tracing, shutdown_tracing

log = get_logger("ingestion.worker")
app.steps["worker"].add(HeartbeatStep)


def bootstrap_if_empty(wait_seconds: float = 120.0) -> str | None:
    """Enqueue the first ingestion when retrieval serves no index; returns the task id."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            if has_active_index(settings.retrieval_addr):
                log.info("bootstrap_skipped", reason="an index is already active")
                return None
            break
        except Exception as exc:  # noqa: BLE001 - retrieval may still be starting
            if time.monotonic() > deadline:
                log.error("bootstrap_gave_up", error=repr(exc))
                return None
            time.sleep(1.0)
    client = make_sync_redis(settings.redis_url)
    previous = client.get(BOOTSTRAP_LOCK)
    if previous is not None and app.AsyncResult(previous.decode()).state in states.READY_STATES:
        # the earlier bootstrap ended (e.g. failed on a missing PDF) and still nothing is served
        client.delete(BOOTSTRAP_LOCK)
    task_id = str(uuid.uuid4())
    if not client.set(BOOTSTRAP_LOCK, task_id, nx=True, ex=900):
        log.info("bootstrap_skipped", reason="another worker's bootstrap ingestion is under way")
        return None
    app.send_task(
        "ingestion.ingest_pdf",
        kwargs={"pdf_path": str(settings.ng12_pdf), "activate": True},
        task_id=task_id,
        queue=settings.ingestion_queue,
    )
    log.info("bootstrap_enqueued", task_id=task_id, pdf=str(settings.ng12_pdf))
    return task_id


@worker_ready.connect
def _on_ready(**_: Any) -> None:
    if settings.ingest_on_start == "if_empty":
        threading.Thread(target=bootstrap_if_empty, name="bootstrap", daemon=True).start()


def run_worker() -> None:
    configure_logging("ingestion-worker", settings.log_level)
    configure_tracing("ingestion-worker")  # solo pool: task spans are made in this process
    if settings.metrics_port:
        start_http_server(
            settings.metrics_port, addr="0.0.0.0" if settings.environment == "production" else "127.0.0.1"
        )
    app.worker_main(
        [
            "worker",
            "--loglevel",
            settings.log_level,
            "--pool",
            "solo",
            "--concurrency",
            "1",
            "--hostname",
            "ingestion@%h",
            "--without-gossip",
            "--without-mingle",
            "--queues",
            settings.ingestion_queue,
        ]
    )
    shutdown_tracing()


if __name__ == "__main__":
    run_worker()
