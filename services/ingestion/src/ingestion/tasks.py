"""Celery tasks. `ingestion.ingest_pdf` is the public task name the gateway enqueues by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery import Task

from ingestion.celery_app import app, settings
from ingestion.pipeline import ingest_pdf as run_pipeline
from ng12_common.logs import get_logger

log = get_logger("ingestion.tasks")


@app.task(bind=True, name="ingestion.ingest_pdf")
def ingest_pdf(self: Task, pdf_path: str | None = None, activate: bool = True) -> dict[str, Any]:
    path = Path(pdf_path) if pdf_path else settings.ng12_pdf

    def progress(stage: str, fraction: float) -> None:
        self.update_state(state="PROGRESS", meta={"stage": stage, "progress": round(fraction, 3)})

    log.info("ingest_started", pdf=str(path), activate=activate)
    return run_pipeline(
        path,
        settings.retrieval_addr,
        kb_dir=settings.kb_dir,
        activate=activate,
        batch_size=settings.upload_batch_size,
        timeout=settings.retrieval_timeout_seconds,
        progress=progress,
    )
