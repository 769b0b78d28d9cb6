"""Ingestion jobs: enqueue the Celery task by name and read its state from the result backend.

The gateway never imports the ingestion package (see ng12_common.jobs for the contract).
Each enqueued job also gets a small record in Redis so that an unknown job id is a 404
rather than Celery's indistinguishable PENDING. Celery's client calls block, so they run
in a worker thread with bounded broker retries: a Redis outage is a quick 503.

One ingestion at a time: `claim()` takes the `{prefix}:running` key and, in the same script, writes
a pending job record that lives `pending_ttl_seconds`; `enqueue()` replaces it with the full
record (only while the claim still names the job). A claim whose job record is gone is stale
(`running()` releases it): its gateway died between claim and enqueue, or the enqueue failed
and `abandon()` removed the record. So a crash there blocks ingestion for the pending TTL at
most, not for the running TTL.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from celery import Celery
from kombu.exceptions import KombuError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.admin_models import JobStatus
from ng12_common.jobs import INGEST_TASK_NAME, PROGRESS_STATE, REQUEST_ID_TASK_HEADER
from ng12_common.logs import current_request_id, get_logger
from ng12_common.redis_client import redis_location

log = get_logger("gateway.jobs")
#: May the failed action have taken effect? (the audit record of a failed call: gateway.failures)
Outcome = Literal["not_done", "unknown"]


class JobsUnavailable(Exception):
    """The broker/result backend (Redis) cannot be reached. `outcome` (for the audit trail):
    `unknown` when the task may have been published before the error, else `not_done`."""

    def __init__(self, message: str, outcome: Outcome = "not_done") -> None:
        super().__init__(message)
        self.outcome = outcome


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
# KEYS: running, record. ARGV: job id, running ttl, pending record, pending ttl. The claim and its
# pending record together, or neither.
_CLAIM = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'EX', tonumber(ARGV[2])) then
  redis.call('set', KEYS[2], ARGV[3], 'EX', tonumber(ARGV[4]))
  return 1
end
return 0
"""
# KEYS: running, record, recent list. ARGV: job id, record, record ttl, listed. The full record
# only while the claim still names this job (1), else nothing (0).
_QUEUED = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('set', KEYS[2], ARGV[2], 'EX', tonumber(ARGV[3]))
redis.call('lpush', KEYS[3], ARGV[1])
redis.call('ltrim', KEYS[3], 0, tonumber(ARGV[4]) - 1)
return 1
"""
# KEYS: running, record, recent list. ARGV: job id. The job never queued: no record, not listed,
# its claim released (unless another job holds it).
_ABANDON = """
redis.call('del', KEYS[2])
redis.call('lrem', KEYS[3], 0, ARGV[1])
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end
return 1
"""
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
        pending_ttl_seconds: int = 300,
    ) -> None:
        self.celery = make_celery(redis_url)
        self._redis = redis
        self._ttl = record_ttl_seconds
        self._running_ttl = running_ttl_seconds
        self._pending_ttl = pending_ttl_seconds
        self._prefix = key_prefix
        self._queue = queue
        self._where = redis_location(redis_url)

    def _key(self, job_id: str) -> str:
        return f"{self._prefix}:{job_id}"

    def _unavailable(self, exc: Exception, outcome: Outcome = "not_done") -> JobsUnavailable:
        return JobsUnavailable(
            f"The job queue (Redis at {self._where}) is unavailable ({type(exc).__name__}); retry shortly.",
            outcome,
        )

    @property
    def _running_key(self) -> str:
        return f"{self._prefix}:running"

    @property
    def _list_key(self) -> str:
        return f"{self._prefix}:recent"

    async def running(self) -> str | None:
        """The job that holds the one-ingestion-at-a-time claim and has not ended, if any. A claim
        without its job record (never queued: see the module doc) or whose job ended is released."""
        try:
            holder = await self._redis.get(self._running_key)
            if holder is None:
                return None
            job_id = holder.decode() if isinstance(holder, bytes) else str(holder)
            if not await self._redis.exists(self._key(job_id)):
                # claimed but never queued: release the claim, unless another job took it meanwhile
                await self._redis.eval(_RELEASE, 1, self._running_key, job_id)  # type: ignore[misc]
                log.warning("ingestion_claim_stale", job_id=job_id)
                return None
            meta: dict[str, Any] = await asyncio.to_thread(self.celery.backend.get_task_meta, job_id)
            if str(meta.get("status", "PENDING")) in TERMINAL_STATES:
                # ended: release the claim, unless another job took it meanwhile
                await self._redis.eval(_RELEASE, 1, self._running_key, job_id)  # type: ignore[misc]
                return None
            return job_id
        except (RedisError, KombuError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def claim(self) -> str:
        """A new job id holding the one-ingestion-at-a-time claim, with its pending job record;
        IngestionRunning if another holds it."""
        job_id = uuid.uuid4().hex
        pending = json.dumps({"pending": True})
        for _ in range(2):
            try:
                claimed = await self._redis.eval(  # type: ignore[misc]
                    _CLAIM,
                    2,
                    self._running_key,
                    self._key(job_id),
                    job_id,
                    self._running_ttl,
                    pending,
                    self._pending_ttl,
                )
            except (RedisError, OSError) as exc:
                raise self._unavailable(exc) from None
            if claimed:
                return job_id
            holder = await self.running()
            if holder is not None:
                raise IngestionRunning(holder)
        raise IngestionRunning(await self.running() or "unknown")

    async def abandon(self, job_id: str) -> None:
        """The claimed job will not be queued (or its enqueue failed): remove its record and list
        entry and give the claim back. Best effort: a claim left behind without its record is
        released by the next `running()`."""
        keys = (self._running_key, self._key(job_id), self._list_key)
        try:
            await self._redis.eval(_ABANDON, 3, *keys, job_id)  # type: ignore[misc]
        except (RedisError, OSError) as exc:
            log.warning("ingestion_claim_not_released", job_id=job_id, error=repr(exc))

    async def enqueue(
        self,
        job_id: str,
        pdf_path: str | None,
        activate: bool,
        *,
        force: bool = False,
        filename: str | None = None,
    ) -> str:
        """Queue the ingestion task claim() gave `job_id`: its record first (IngestionRunning if the
        claim was lost meanwhile), then the task. On a failure the caller `abandon`s the job."""
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
        keys = (self._running_key, self._key(job_id), self._list_key)
        try:
            held = await self._redis.eval(  # type: ignore[misc]
                _QUEUED, 3, *keys, job_id, json.dumps(record), self._ttl, LISTED_JOBS
            )
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        if not held:
            raise IngestionRunning(await self.running() or "unknown")
        try:
            await asyncio.to_thread(
                self.celery.send_task,
                INGEST_TASK_NAME,
                kwargs=kwargs,
                task_id=job_id,
                headers=headers,
                queue=self._queue,
            )
        except (RedisError, KombuError, OSError) as exc:  # the broker may have taken it before failing
            raise self._unavailable(exc, "unknown") from None
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
