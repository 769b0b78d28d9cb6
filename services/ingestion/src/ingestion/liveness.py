"""The worker's liveness: a heartbeat file that the container probe reads.

The metrics exporter answers on any path whatever the worker does, so it proves nothing. The
heartbeat proves that the Celery consumer is turning: a worker bootstep rewrites the file from
the worker's own event loop every HEARTBEAT_INTERVAL_SECONDS. The worker runs one task at a time
in that same loop (solo pool, so its metrics stay in the process that serves them), so while a
task runs the loop is busy: the task then beats from a thread, but only until its time limit
(INGESTION_TASK_TIME_LIMIT_SECONDS). A stuck consumer or a task past its limit stops the beats;
`python -m ng12_common.healthcheck heartbeat FILE MAX_AGE` then fails, the orchestrator restarts
the worker, and the job is redelivered and counted against its attempts (ingestion.tasks).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from celery import bootsteps
from prometheus_client import Gauge

from ingestion.celery_app import settings
from ng12_common.logs import get_logger
from ng12_common.metrics import record_redis_memory
from ng12_common.redis_client import make_sync_redis

log = get_logger("ingestion.liveness")

HEARTBEAT = Gauge(
    "ng12_ingestion_worker_heartbeat_timestamp_seconds",
    "When the worker last proved it is alive (Unix time): its consumer loop, or a task within its limit.",
)


def beat(path: Path | None = None) -> None:
    """Rewrite the heartbeat file (atomically) and the gauge; never raises."""
    target = path or settings.heartbeat_file
    now = time.time()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_text(f"{now:.3f}\n", encoding="ascii")
        tmp.replace(target)
    except OSError as exc:
        log.warning("heartbeat_not_written", path=str(target), error=repr(exc))
    HEARTBEAT.set(now)


_broker: redis.Redis | None = None


def consumer_beat() -> None:
    """The consumer loop's beat: the heartbeat, and the broker Redis's memory for its alert."""
    global _broker
    beat()
    try:
        if _broker is None:
            _broker = make_sync_redis(settings.redis_url, timeout_seconds=1.0, retries=0)
        record_redis_memory("broker", _broker.info("memory"))
    except redis.RedisError as exc:
        log.warning("broker_memory_not_read", error=repr(exc))


class HeartbeatStep(bootsteps.StartStopStep):
    """Worker bootstep: beat from the worker's timer (its event loop) while the worker runs."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.tref: Any = None

    def start(self, parent: Any) -> None:
        consumer_beat()
        self.tref = parent.timer.call_repeatedly(settings.heartbeat_interval_seconds, consumer_beat)

    def stop(self, parent: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None


@contextmanager
def beating_until(deadline: float) -> Iterator[None]:
    """While a task runs (the event loop is busy): beat from a thread until `deadline`
    (time.monotonic()), then stop, so a task past its time limit makes the worker unhealthy."""
    done = threading.Event()

    def _run() -> None:
        while not done.is_set() and time.monotonic() < deadline:
            beat()
            done.wait(min(settings.heartbeat_interval_seconds, max(0.0, deadline - time.monotonic())))
        if not done.is_set():
            log.error("task_over_time_limit", limit_seconds=settings.ingestion_task_time_limit_seconds)

    thread = threading.Thread(target=_run, name="task-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=1.0)
        beat()
