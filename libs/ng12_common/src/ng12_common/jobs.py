"""The contract between whoever enqueues an ingestion job (the gateway) and the workers.

The gateway does not import the ingestion package: it sends the task by name through Celery.
The worker reports progress with `update_state(state="PROGRESS", meta={"stage", "progress"})`.
The caller's request id travels in a task header so the worker's logs carry it.
"""

from __future__ import annotations

import json
from typing import Any

INGEST_TASK_NAME = "ingestion.ingest_pdf"  # kwargs: pdf_path (str | None), activate (bool)
REQUEST_ID_TASK_HEADER = "request_id"  # the worker binds it to its log lines (ingestion.celery_app)
PROGRESS_STATE = "PROGRESS"  # custom Celery state while running; meta = {stage, progress}
#: Redis key of the worker's first-start ingestion ("ingest if nothing is served"): its task id.
BOOTSTRAP_LOCK = "ng12:ingestion:bootstrap-lock"
#: Where Celery's Redis result backend keeps a task's final state.
CELERY_RESULT_KEY = "celery-task-meta-{task_id}"


def first_ingestion_failure(client: Any, ignore_task_id: str | None = None) -> str | None:
    """Why the worker's first-start ingestion failed, or None (not started, running, succeeded,
    or the task `ignore_task_id`, e.g. one that a previous run left behind). `client` is a
    synchronous redis.Redis."""
    raw_id = client.get(BOOTSTRAP_LOCK)
    task_id = raw_id.decode() if isinstance(raw_id, bytes) else raw_id
    if not task_id or task_id == ignore_task_id:
        return None
    raw = client.get(CELERY_RESULT_KEY.format(task_id=task_id))
    if not raw:
        return None
    meta = json.loads(raw)
    if meta.get("status") != "FAILURE":
        return None
    result = meta.get("result") or {}
    message = result.get("exc_message") if isinstance(result, dict) else result
    if isinstance(message, list | tuple):
        message = "; ".join(str(m) for m in message)
    kind = result.get("exc_type", "error") if isinstance(result, dict) else "error"
    return f"{kind}: {message}"
