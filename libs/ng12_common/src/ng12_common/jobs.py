"""The contract between whoever enqueues an ingestion job (the gateway) and the workers.

The gateway does not import the ingestion package: it sends the task by name through Celery.
The worker reports progress with `update_state(state="PROGRESS", meta={"stage", "progress"})`.
The caller's request id travels in a task header so the worker's logs carry it.
"""

from __future__ import annotations

INGEST_TASK_NAME = "ingestion.ingest_pdf"  # kwargs: pdf_path (str | None), activate (bool)
REQUEST_ID_TASK_HEADER = "request_id"  # the worker binds it to its log lines (ingestion.celery_app)
PROGRESS_STATE = "PROGRESS"  # custom Celery state while running; meta = {stage, progress}
