"""Readiness drain on SIGTERM, with real processes (ng12_common.http_app.serve, as every FastAPI
service runs): /readyz turns 503 at once while other requests are still served, the request in
flight finishes with 200, and only then does the process stop accepting and exit. With one
uvicorn process and with two workers under uvicorn's supervisor."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support import free_port, start_process, wait_for

DRAIN_SECONDS = 2.0
SLOW_SECONDS = 3.5


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_drains_readiness_then_finishes_in_flight_requests(tmp_path: Path, workers: int) -> None:
    port = free_port()
    env = {**os.environ, "SHUTDOWN_DRAIN_SECONDS": str(DRAIN_SECONDS), "LOG_LEVEL": "INFO"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    code = (
        "from ng12_common.http_app import serve; "
        f"serve('tests.drain_app:app', '127.0.0.1', {port}, {workers})"
    )
    log_path = tmp_path / "drain.log"
    proc = start_process(["-c", code], env, log_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/readyz", timeout=1).status_code == 200, 60, what="/readyz 200")
        if workers > 1:  # every worker answers before the signal (each must drain)
            time.sleep(1.0)

        slow: dict[str, object] = {}

        def _slow() -> None:
            try:
                response = httpx.get(f"{url}/slow", params={"seconds": SLOW_SECONDS}, timeout=30)
                slow["status"] = response.status_code
            except httpx.HTTPError as exc:  # recorded: the assertion below names it
                slow["error"] = repr(exc)
            slow["ended"] = time.monotonic()

        thread = threading.Thread(target=_slow)
        thread.start()
        time.sleep(0.5)  # the slow request is in flight
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)

        ready = wait_for(
            lambda: (r := httpx.get(f"{url}/readyz", timeout=1)).status_code == 503 and r,
            2.0,
            interval=0.05,
            what="/readyz 503 after SIGTERM",
        )
        assert ready.json()["status"] == "draining"
        assert time.monotonic() - signalled < DRAIN_SECONDS, "/readyz turned 503 only after the drain period"
        # still serving while draining: the load balancer has not taken it out yet
        assert httpx.get(f"{url}/fast", timeout=2).status_code == 200

        thread.join(timeout=30)
        assert slow.get("status") == 200, f"the in-flight request did not finish: {slow}"
        proc.wait(timeout=30)
        exited = time.monotonic()
        assert exited - signalled >= DRAIN_SECONDS, "the process stopped before the drain period ended"
        assert float(slow["ended"]) <= exited + 0.5  # type: ignore[arg-type]
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/readyz", timeout=1)
        assert proc.returncode in (0, -signal.SIGTERM), f"exit code {proc.returncode}"
        log = log_path.read_text(encoding="utf-8", errors="replace")
        assert log.count("drain_started") == workers, log[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
