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
from datetime import UTC, datetime
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


class IngestionRunning(Exception):
    """Another ingestion job is queued or running; `job_id` names it."""

    def __init__(self, job_id: str) -> None:
        super().__init__(
            f"Ingestion job {job_id} is still running; wait for it to finish "
            f"(GET /api/v1/admin/ingestions/{job_id}) before starting another."
        )
        self.job_id = job_id


# delete the claim only while it still names this job (another job may have taken it since)
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
TERMINAL_STATES = frozenset({"SUCCESS", "FAILURE", "REVOKED"})
LISTED_JOBS = 50


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
        self,
        redis_url: str,
        redis: Redis,
        *,
        record_ttl_seconds: int,
        key_prefix: str,
        queue: str,
        running_ttl_seconds: int = 3 * 3600,
    ) -> None:
        self.celery = make_celery(redis_url)
        self._redis = redis
        self._ttl = record_ttl_seconds
        self._running_ttl = running_ttl_seconds
        self._prefix = key_prefix
        self._queue = queue
        self._where = redis_location(redis_url)

    def _key(self, job_id: str) -> str:
        return f"{self._prefix}:{job_id}"

    def _unavailable(self, exc: Exception) -> JobsUnavailable:
        return JobsUnavailable(
            f"The job queue (Redis at {self._where}) is unavailable ({type(exc).__name__}); retry shortly."
        )

    @property
    def _running_key(self) -> str:
        return f"{self._prefix}:running"

    @property
    def _list_key(self) -> str:
        return f"{self._prefix}:recent"

    async def running(self) -> str | None:
        """The job that holds the one-ingestion-at-a-time claim and has not ended, if any."""
        try:
            holder = await self._redis.get(self._running_key)
            if holder is None:
                return None
            job_id = holder.decode() if isinstance(holder, bytes) else str(holder)
            meta: dict[str, Any] = await asyncio.to_thread(self.celery.backend.get_task_meta, job_id)
            if str(meta.get("status", "PENDING")) in TERMINAL_STATES:
                # ended: release the claim, unless another job took it meanwhile
                await self._redis.eval(_RELEASE, 1, self._running_key, job_id)  # type: ignore[misc]
                return None
            return job_id
        except (RedisError, KombuError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def claim(self) -> str:
        """A new job id holding the one-ingestion-at-a-time claim; IngestionRunning if another holds it."""
        job_id = uuid.uuid4().hex
        for _ in range(2):
            try:
                if await self._redis.set(self._running_key, job_id, nx=True, ex=self._running_ttl):
                    return job_id
            except (RedisError, OSError) as exc:
                raise self._unavailable(exc) from None
            holder = await self.running()
            if holder is not None:
                raise IngestionRunning(holder)
        raise IngestionRunning(await self.running() or "unknown")

    async def release(self, job_id: str) -> None:
        """Give the claim back (the job was never queued)."""
        try:
            await self._redis.eval(_RELEASE, 1, self._running_key, job_id)  # type: ignore[misc]
        except (RedisError, OSError) as exc:
            log.warning("ingestion_claim_not_released", job_id=job_id, error=repr(exc))

    async def enqueue(
        self,
        pdf_path: str | None,
        activate: bool,
        *,
        force: bool = False,
        filename: str | None = None,
        job_id: str | None = None,
    ) -> str:
        """Queue the ingestion task; `job_id` is the id claim() returned (a new one otherwise)."""
        job_id = job_id or uuid.uuid4().hex
        kwargs: dict[str, Any] = {"pdf_path": pdf_path, "activate": activate}
        if force:
            kwargs["force"] = True
        if filename:
            kwargs["filename"] = filename
        rid = current_request_id()
        headers = {REQUEST_ID_TASK_HEADER: rid} if rid else {}
        record = {
            "task": INGEST_TASK_NAME,
            **kwargs,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        }
        try:
            await self._redis.set(self._key(job_id), json.dumps(record), ex=self._ttl)
            await self._redis.lpush(self._list_key, job_id)  # type: ignore[misc]
            await self._redis.ltrim(self._list_key, 0, LISTED_JOBS - 1)  # type: ignore[misc]
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
        log.info("ingestion_enqueued", job_id=job_id, activate=activate, force=force)
        return job_id

    async def recent(self) -> list[JobStatus]:
        """The last LISTED_JOBS jobs this gateway queued, newest first (expired records skipped)."""
        try:
            raw_ids = await self._redis.lrange(self._list_key, 0, LISTED_JOBS - 1)  # type: ignore[misc]
            ids = [i.decode() if isinstance(i, bytes) else str(i) for i in raw_ids]
            records = await self._redis.mget([self._key(i) for i in ids]) if ids else []

            def metas() -> list[dict[str, Any]]:
                return [self.celery.backend.get_task_meta(i) for i in ids]

            all_meta = await asyncio.to_thread(metas)
        except (RedisError, KombuError, OSError) as exc:
            raise self._unavailable(exc) from None
        out = []
        for job_id, raw, meta in zip(ids, records, all_meta, strict=True):
            if raw is None:
                continue
            out.append(self._with_record(_status_from_meta(job_id, meta), raw))
        return out

    @staticmethod
    def _with_record(status: JobStatus, raw: Any) -> JobStatus:
        try:
            record = json.loads(raw)
        except (TypeError, ValueError):
            return status
        status.created_at = str(record.get("created_at", ""))
        status.filename = record.get("filename") or None
        return status

    async def status(self, job_id: str) -> JobStatus | None:
        """None when this gateway never enqueued the job (or its record expired)."""
        try:
            raw = await self._redis.get(self._key(job_id))
            if raw is None:
                return None
            meta: dict[str, Any] = await asyncio.to_thread(self.celery.backend.get_task_meta, job_id)
        except (RedisError, KombuError, OSError) as exc:
            raise self._unavailable(exc) from None
        return self._with_record(_status_from_meta(job_id, meta), raw)

    def close(self) -> None:
        self.celery.close()
