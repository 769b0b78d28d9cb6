"""Repository-wide pytest fixtures: the NG12 PDF, real Redis, a real retrieval server.

`retrieval_addr` starts `python -m retrieval` as a real process on a free port with a
temporary Chroma directory, ingests the real NG12 PDF into it through the real ingestion
pipeline (gRPC streaming), and yields "127.0.0.1:PORT". It is built once per test session.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.support import find_pdf, free_port, start_process, stop_process, wait_for

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture(scope="session")
def ng12_pdf() -> Path:
    try:
        return find_pdf()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.fail(f"tests need a real Redis at {REDIS_URL} (set TEST_REDIS_URL): {exc}")
    return REDIS_URL


@dataclass
class RetrievalProcess:
    addr: str
    port: int
    metrics_port: int
    chroma_dir: Path
    log_path: Path
    version: str


def start_retrieval(tmp: Path, port: int | None = None) -> tuple[object, int, int, Path]:
    port = port or free_port()
    metrics_port = free_port()
    env = {
        **os.environ,
        "GRPC_HOST": "127.0.0.1",
        "GRPC_PORT": str(port),
        "METRICS_PORT": str(metrics_port),
        "CHROMA_DIR": str(tmp / "chroma"),
        "LOG_LEVEL": "INFO",
        "ENVIRONMENT": "test",
    }
    log_path = tmp / "retrieval.log"
    proc = start_process(["-m", "retrieval"], env, log_path)
    from ng12_common.healthcheck import check_grpc

    def _up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"retrieval exited with {proc.returncode}; see {log_path}")
        import grpc

        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            grpc.channel_ready_future(ch).result(timeout=0.5)
        return True

    wait_for(_up, 120, 0.5, "retrieval gRPC port")
    _ = check_grpc  # health is SERVING only once an index is active
    return proc, port, metrics_port, log_path


@pytest.fixture(scope="session")
def retrieval_server(tmp_path_factory: pytest.TempPathFactory, ng12_pdf: Path) -> Iterator[RetrievalProcess]:
    from ingestion.pipeline import ingest_pdf

    tmp = tmp_path_factory.mktemp("retrieval")
    proc, port, metrics_port, log_path = start_retrieval(tmp)
    try:
        result = ingest_pdf(ng12_pdf, f"127.0.0.1:{port}", kb_dir=tmp / "kb")
        yield RetrievalProcess(
            f"127.0.0.1:{port}", port, metrics_port, tmp / "chroma", log_path, result["version"]
        )
    finally:
        stop_process(proc)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def retrieval_addr(retrieval_server: RetrievalProcess) -> str:
    return retrieval_server.addr
