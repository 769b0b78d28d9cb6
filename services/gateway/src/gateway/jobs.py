"""Ingestion jobs: enqueue the Celery task by name and read its state from the result backend.

The gateway never imports the ingestion package (see ng12_common.jobs for the contract).
Each enqueued job also gets a small record in Redis so that an unknown job id is a 404
rather than Celery's indistinguishable PENDING. Celery's client calls block, so they run
in a worker thread with bounded broker retries: a Redis outage is a quick 503.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from celery import Celery
from kombu.exceptions import KombuError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.admin_models import JobStatus
from ng12_common.jobs import INGEST_TASK_NAME, PROGRESS_STATE, REQUEST_ID_TASK_HEADER
from ng12_common.logs import current_request_id, get_logger
from ng12_common.redis_client import redis_location

log = get_logger("gateway.jobs")


class JobsUnavailable(Exception):
    """The broker/result backend (Redis) cannot be reached."""


def make_celery(redis_url: str) -> Celery:
    app = Celery("ng12-gateway", broker=redis_url, backend=redis_url, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        broker_connection_timeout=2,
        broker_connection_retry_on_startup=False,
        task_publish_retry=True,
        task_publish_retry_policy={
            "max_retries": 2,
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
        redis_socket_connect_timeout=2,
        redis_socket_timeout=2,
        result_backend_transport_options={"retry_policy": {"timeout": 2.0}},
    )
    return app


def _status_from_meta(job_id: str, meta: dict[str, Any]) -> JobStatus:
    state = str(meta.get("status", "PENDING"))
    info = meta.get("result")
    if state == PROGRESS_STATE and isinstance(info, dict):
        progress = info.get("progress")
        return JobStatus(
            job_id=job_id,
            state=state,
            stage=str(info.get("stage", "")),
            progress=float(progress) if isinstance(progress, int | float) else None,
        )
    if state == "SUCCESS":
        return JobStatus(job_id=job_id, state=state, stage="done", progress=1.0, result=info)
    if state in {"FAILURE", "REVOKED"}:
        error = f"{type(info).__name__}: {info}" if isinstance(info, BaseException) else str(info)
        return JobStatus(job_id=job_id, state=state, stage="failed", error=error)
    stage = {"PENDING": "queued", "STARTED": "started", "RETRY": "retrying"}.get(state, state.lower())
    return JobStatus(job_id=job_id, state=state, stage=stage)


class IngestionJobs:
    def __init__(
        self, redis_url: str, redis: Redis, *, record_ttl_seconds: int, key_prefix: str, queue: str
    ) -> None:
        self.celery = make_celery(redis_url)
        self._redis = redis
        self._ttl = record_ttl_seconds
        self._prefix = key_prefix
        self._queue = queue
        self._where = redis_location(redis_url)

    def _key(self, job_id: str) -> str:
        return f"{self._prefix}:{job_id}"

    def _unavailable(self, exc: Exception) -> JobsUnavailable:
        return JobsUnavailable(
            f"The job queue (Redis at {self._where}) is unavailable ({type(exc).__name__}); retry shortly."
        )

    async def enqueue(self, pdf_path: str | None, activate: bool) -> str:
        job_id = uuid.uuid4().hex
        kwargs = {"pdf_path": pdf_path, "activate": activate}
        rid = current_request_id()
        headers = {REQUEST_ID_TASK_HEADER: rid} if rid else {}
        try:
            await self._redis.set(
                self._key(job_id), json.dumps({"task": INGEST_TASK_NAME, **kwargs}), ex=self._ttl
            )
            await asyncio.to_thread(
                self.celery.send_task,
                INGEST_TASK_NAME,
                kwargs=kwargs,
                task_id=job_id,
                headers=headers,
                queue=self._queue,
            )
        except (RedisError, KombuError, OSError) as exc:
            raise self._unavailable(exc) from None
        log.info("ingestion_enqueued", job_id=job_id, activate=activate)
        return job_id

    async def status(self, job_id: str) -> JobStatus | None:
        """None when this gateway never enqueued the job (or its record expired)."""
        try:
            if not await self._redis.exists(self._key(job_id)):
                return None
            meta: dict[str, Any] = await asyncio.to_thread(self.celery.backend.get_task_meta, job_id)
        except (RedisError, KombuError, OSError) as exc:
            raise self._unavailable(exc) from None
        return _status_from_meta(job_id, meta)

    def close(self) -> None:
        self.celery.close()
