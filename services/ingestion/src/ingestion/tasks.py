"""Celery tasks. `ingestion.ingest_pdf` is the public task name the gateway enqueues by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
from celery import Task
from prometheus_client import Counter, Histogram

from ingestion.celery_app import app, settings
from ingestion.pipeline import ingest_pdf as run_pipeline
from ng12_common.logs import get_logger

log = get_logger("ingestion.tasks")


INGESTIONS = Counter("ng12_ingestion_tasks_total", "Ingestion tasks run, by outcome.", ["outcome"])
INGESTION_SECONDS = Histogram(
    "ng12_ingestion_task_duration_seconds",
    "Time to parse the PDF, build and upload an index version.",
    buckets=(5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600),
)


class IngestionFailed(RuntimeError):
    """An ingestion that could not complete; the message is what the admin sees."""


def _is_upload(path: Path) -> bool:
    """A PDF the gateway stored for this job in UPLOAD_DIR (removed when the job ends)."""
    try:
        return path.resolve().parent == settings.upload_dir.resolve()
    except OSError:
        return False


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

    def progress(stage: str, fraction: float) -> None:
        try:
            self.update_state(
                task_id=task_id, state="PROGRESS", meta={"stage": stage, "progress": round(fraction, 3)}
            )
        except Exception as exc:  # noqa: BLE001 - progress reporting must never break an ingestion
            log.warning("progress_not_recorded", stage=stage, error=repr(exc))

    log.info("ingest_started", pdf=str(path), activate=activate)
    outcome = "failed"
    try:
        with INGESTION_SECONDS.time():
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
            )
        outcome = "succeeded"
        return result
    except grpc.RpcError as exc:  # gRPC errors do not pickle; report what retrieval said
        code = exc.code().name if hasattr(exc, "code") else "UNKNOWN"
        details = exc.details() if hasattr(exc, "details") else str(exc)
        raise IngestionFailed(f"retrieval refused the index build ({code}): {details}") from None
    finally:
        INGESTIONS.labels(outcome=outcome).inc()
        if _is_upload(path):  # retrieval keeps the version's own copy; a failure is not retried
            path.unlink(missing_ok=True)
