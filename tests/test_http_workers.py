"""HTTP_WORKERS > 1: a FastAPI service runs several uvicorn worker processes on one port, and its
/metrics (answered by whichever worker takes the connection) counts every worker's requests.

Real process: `python -m gateway` with two workers (the gateway answers /livez and serves the
frontend without its backends, so nothing else needs to run)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import REPO, free_port, start_process, wait_for

REQUESTS = 40


def _children(pid: int) -> list[int]:
    """Worker processes of a uvicorn supervisor (multiprocessing spawn; not its resource tracker)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in (stat.parent / "cmdline").read_bytes():
            out.append(int(stat.parent.name))
    return out


def _requests_counted(metrics: str) -> float:
    """All requests the gateway's HTTP metrics counted (/metrics and /livez are not counted)."""
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("ng12_http_requests_total{") and 'service="gateway"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.fixture
def two_worker_gateway(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, str]]:
    port, metrics_port = free_port(), free_port()
    env = {
        **os.environ,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "HTTP_WORKERS": "2",
        "ENVIRONMENT": "test",
        "LOG_LEVEL": "INFO",
        "ASSESSMENT_URL": f"http://127.0.0.1:{free_port()}",
        "CHAT_URL": f"http://127.0.0.1:{free_port()}",
        "RETRIEVAL_ADDR": f"127.0.0.1:{free_port()}",
        "REDIS_URL": os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"),
        "FRONTEND_DIR": str(REPO / "frontend"),
        "METRICS_PORT": str(metrics_port),
        "AUTH_DIR": str(tmp_path / "auth"),
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path / 'gateway.sqlite3'}",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    proc = start_process(["-m", "gateway"], env, tmp_path / "gateway.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/livez", timeout=1).status_code == 200, 60, what="gateway /livez")
        yield proc, url, f"http://127.0.0.1:{metrics_port}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


def test_two_workers_serve_one_port_and_metrics_sum_them(two_worker_gateway, tmp_path: Path) -> None:
    proc, url, metrics_url = two_worker_gateway
    workers = wait_for(lambda: len(_children(proc.pid)) >= 2 and _children(proc.pid), 30, what="2 workers")
    assert len(workers) == 2, f"expected 2 worker processes under the supervisor, found {workers}"
    for _ in range(REQUESTS):  # a new connection each time: the kernel spreads them over the workers
        assert httpx.get(f"{url}/", timeout=5).status_code == 200
    # /metrics is on the private port only, and it sums the requests of both workers
    assert httpx.get(f"{url}/metrics", timeout=5).status_code == 404
    for _ in range(3):
        text = httpx.get(f"{metrics_url}/metrics", timeout=5).text
        assert _requests_counted(text) == REQUESTS, text[:2000]
    # one JSON access line per request (ours, with the request id), never uvicorn's own as well
    log = (tmp_path / "gateway.log").read_text(encoding="utf-8")
    assert log.count('"event": "http_request"') >= REQUESTS
    assert "uvicorn.access" not in log


def test_supervisor_stops_workers_and_removes_metrics_files(two_worker_gateway, tmp_path: Path) -> None:
    proc, _url, _metrics = two_worker_gateway
    workers = wait_for(lambda: len(_children(proc.pid)) >= 2 and _children(proc.pid), 30, what="2 workers")
    environ = Path(f"/proc/{workers[0]}/environ").read_bytes().decode(errors="replace")
    match = re.search(r"PROMETHEUS_MULTIPROC_DIR=([^\x00]+)", environ)
    assert match, "workers run without PROMETHEUS_MULTIPROC_DIR"
    metrics_dir = Path(match.group(1))
    assert metrics_dir.is_dir()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert not any(Path(f"/proc/{w}").exists() for w in workers), "a worker outlived its supervisor"
    assert not metrics_dir.exists(), "the temporary metrics directory was left behind"
