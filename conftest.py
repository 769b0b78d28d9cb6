"""Repository-wide pytest fixtures: the NG12 PDF, real Redis, a real retrieval server.

`retrieval_addr` starts `python -m retrieval` as a real process on a free port with a
temporary Chroma directory, ingests the real NG12 PDF into it through the real ingestion
pipeline (gRPC streaming), and yields "127.0.0.1:PORT". It is built once per test session.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.support import RetrievalProcess, find_pdf, start_retrieval, stop_process

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
