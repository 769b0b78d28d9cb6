"""Fixtures of the gateway tests: gateway apps on real Redis, real downstream apps served by uvicorn."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from tests.support import free_port, wait_for

REPO = Path(__file__).resolve().parents[3]
JWT_SECRET = "test-jwt-secret-0123456789abcdef0123456789"


def security_settings(tmp: Path, prefix: str) -> dict[str, Any]:
    """A gateway's identity, audit and limit settings isolated to one test (tmp dir, key prefix)."""
    return {
        "auth_dir": tmp / "auth",
        "auth_jwt_secret": JWT_SECRET,
        "gateway_database_url": f"sqlite:///{tmp / 'gateway.sqlite3'}",
        "rate_limit_prefix": f"{prefix}:rl",
        "session_key_prefix": f"{prefix}:gw",
    }


def bearer(subject: str, *roles: str, secret: str = JWT_SECRET, ttl: int = 900) -> dict[str, str]:
    """Authorization header with a gateway token for a user with these roles."""
    from gateway.security.principal import Role
    from gateway.security.tokens import TokenIssuer

    token = TokenIssuer(secret, ttl).issue(subject, [Role(r) for r in roles])
    return {"Authorization": f"Bearer {token}"}


def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free port in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 90  # a first gateway in the process builds the redactor (~5 s)
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def key_prefix(redis_url: str) -> Iterator[str]:
    """A unique prefix for this test's Redis keys (job records, Celery queue); only they are deleted."""
    prefix = f"test:gateway:{uuid.uuid4().hex}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()


@pytest.fixture
def make_gateway(redis_url: str, key_prefix: str, tmp_path: Path) -> Callable[..., TestClient]:
    def _make(**overrides: Any) -> TestClient:
        values: dict[str, Any] = {
            **security_settings(tmp_path, key_prefix),
            "assessment_url": closed_url(),
            "chat_url": closed_url(),
            "retrieval_addr": f"127.0.0.1:{free_port()}",
            "redis_url": redis_url,
            "frontend_dir": REPO / "frontend",
            "downstream_timeout_seconds": 5.0,
            "downstream_connect_timeout_seconds": 1.0,
            "retrieval_timeout_seconds": 2.0,
            "job_key_prefix": f"{key_prefix}:jobs",
            "ingestion_queue": f"{key_prefix}:queue",
            "environment": "test",
        }
        values.update(overrides)
        return TestClient(create_app(GatewaySettings(**values)), raise_server_exceptions=False)

    return _make


@pytest.fixture
def offline_gateway(make_gateway: Callable[..., TestClient]) -> Iterator[TestClient]:
    """Gateway whose assessment, chat and retrieval are all unreachable (real Redis)."""
    with make_gateway() as client:
        yield client


@pytest.fixture
def assessment_url() -> Iterator[str]:
    """The REAL assessment app (reference patients; retrieval unreachable) served over HTTP."""
    from assessment.app import create_app as create_assessment
    from assessment.settings import AssessmentSettings

    settings = AssessmentSettings(
        retrieval_addr=f"127.0.0.1:{free_port()}", patients_file=REPO / "data" / "patients.json"
    )
    with serve(create_assessment(settings)) as url:
        yield url


@pytest.fixture
def chat_url(redis_url: str, key_prefix: str) -> Iterator[str]:
    """The REAL chat app (real Redis, this test's key prefix; retrieval unreachable) over HTTP."""
    from chat.app import create_app as create_chat
    from chat.settings import ChatSettings

    settings = ChatSettings(
        redis_url=redis_url, retrieval_addr=f"127.0.0.1:{free_port()}", chat_key_prefix=f"{key_prefix}:chat"
    )
    with serve(create_chat(settings)) as url:
        yield url


@contextmanager
def live_gateway_settings(
    retrieval_addr: str, redis_url: str, tmp: Path, **overrides: Any
) -> Iterator[GatewaySettings]:
    """Settings of a gateway in front of the REAL assessment and chat apps (served over HTTP) and
    the real retrieval server; this run's Redis keys are removed afterwards."""
    from assessment.app import create_app as create_assessment
    from assessment.settings import AssessmentSettings
    from chat.app import create_app as create_chat
    from chat.settings import ChatSettings

    prefix = f"test:gateway:{uuid.uuid4().hex}"
    assessment = create_assessment(
        AssessmentSettings(retrieval_addr=retrieval_addr, patients_file=REPO / "data" / "patients.json")
    )
    chat = create_chat(
        ChatSettings(redis_url=redis_url, retrieval_addr=retrieval_addr, chat_key_prefix=prefix)
    )
    try:
        with serve(assessment) as a_url, serve(chat) as c_url:
            yield GatewaySettings(
                **{
                    "assessment_url": a_url,
                    "chat_url": c_url,
                    "retrieval_addr": retrieval_addr,
                    "redis_url": redis_url,
                    "frontend_dir": REPO / "frontend",
                    "job_key_prefix": f"{prefix}:jobs",
                    "ingestion_queue": f"{prefix}:queue",
                    "environment": "test",
                    **security_settings(tmp, prefix),
                    **overrides,
                }
            )
    finally:
        raw = redis.Redis.from_url(redis_url)
        for key in raw.scan_iter(match=f"{prefix}*"):
            raw.delete(key)
        raw.close()


@pytest.fixture(scope="module")
def live_stack(
    retrieval_addr: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    """Gateway -> real assessment and chat apps (HTTP) -> the REAL retrieval server (repo-root fixture)."""
    with live_gateway_settings(retrieval_addr, redis_url, tmp_path_factory.mktemp("gateway")) as settings:
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            ready = lambda: client.get("/readyz").json()["status"] == "ready"  # noqa: E731
            wait_for(ready, 120, 0.5, "the live stack to be ready")
            yield client


@pytest.fixture
def admin_headers() -> dict[str, str]:
    return bearer("admin", "admin")


@pytest.fixture
def clinician_headers() -> dict[str, str]:
    return bearer("clinician", "clinician")


PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@contextmanager
def fresh_postgres_database(prefix: str) -> Iterator[str]:
    """A new database on the real PostgreSQL at 127.0.0.1:5432 (trust auth), dropped afterwards."""
    from sqlalchemy import create_engine, text

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"the gateway tests need PostgreSQL at 127.0.0.1:5432 (trust auth): {exc}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh gateway database on the real PostgreSQL, dropped afterwards."""
    with fresh_postgres_database("ng12_gw") as url:
        yield url


def drop_database(url: str) -> None:
    """The gateway database goes away under a running gateway (its connections are terminated and
    every new one is refused), as when PostgreSQL is lost."""
    from sqlalchemy import create_engine, make_url, text

    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE {make_url(url).database} WITH (FORCE)"))
    finally:
        admin.dispose()
