"""The audit trail: what is recorded, the admin API and export, and the hash chain on SQLite and a
real PostgreSQL (`python -m gateway.audit verify` detects an edited or deleted record)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from gateway.audit.records import AuditEntry
from gateway.audit.store import AuditStore
from gateway.database import make_engine
from services.gateway.tests.conftest import REPO, bearer, fresh_postgres_database

CLINICIAN = bearer("gp-audit", "clinician")
ADMIN = bearer("admin-audit", "admin")
_SWAP = text("UPDATE audit_log SET record = replace(record, :a, :b) WHERE seq = 3")


def test_clinical_calls_are_audited_without_free_text(offline_gateway: TestClient) -> None:
    record = {
        "age": 63,
        "gender": "Male",
        "symptoms": ["blood in his pee, Mr John Smith"],
        "test_results": {"PSA": 3.8},
    }
    offline_gateway.post("/api/v1/assess", json=record, headers={**CLINICIAN, "X-Request-ID": "rid-audit-1"})
    offline_gateway.post("/api/v1/search", json={"query": "haematuria secret words"}, headers=CLINICIAN)
    page = offline_gateway.get("/api/v1/admin/audit", params={"user": "local:gp-audit"}, headers=ADMIN).json()
    kinds = [(r["kind"], r["route"], r["status"]) for r in page["records"]]
    assert kinds == [("assessment", "/api/v1/assess", 503), ("search", "/api/v1/search", 503)]
    first = page["records"][0]
    assert (
        first["actor"] == "local:gp-audit"
        and first["role"] == "clinician"
        and first["request_id"] == "rid-audit-1"
    )
    assert (
        first["summary"]["age"] == 63
        and first["summary"]["symptoms"] == 1
        and first["summary"]["test_names"] == ["PSA"]
    )
    assert len(first["input_sha256"]) == 64
    dumped = json.dumps(page)
    assert "pee" not in dumped and "John" not in dumped and "secret" not in dumped


def test_audit_filters_and_jsonl_export(offline_gateway: TestClient) -> None:
    offline_gateway.get("/api/v1/auth/me", headers=CLINICIAN)
    offline_gateway.post("/api/v1/chat/sessions", headers=CLINICIAN)
    sessions = offline_gateway.get("/api/v1/admin/audit", params={"kind": "session"}, headers=ADMIN).json()[
        "records"
    ]
    assert len(sessions) == 1 and sessions[0]["summary"]["action"] == "create"
    future = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert (
        offline_gateway.get("/api/v1/admin/audit", params={"since": future}, headers=ADMIN).json()["records"]
        == []
    )
    assert (
        offline_gateway.get("/api/v1/admin/audit", params={"kind": "nonsense"}, headers=ADMIN).status_code
        == 422
    )
    export = offline_gateway.get("/api/v1/admin/audit/export", headers=ADMIN)
    assert export.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert [r["seq"] for r in lines] == list(range(1, len(lines) + 1))
    assert all(len(r["hash"]) == 64 for r in lines)
    assert lines[1]["prev_hash"] == lines[0]["hash"]


@pytest.fixture(params=["sqlite", "postgresql"])
def audit_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('audit') / 'audit.sqlite3'}"
        return
    with fresh_postgres_database("ng12_audit") as url:
        yield url


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.audit", "--database-url", url, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def _untrigger(conn: Any) -> None:
    if conn.dialect.name == "sqlite":
        conn.execute(text("DROP TRIGGER IF EXISTS audit_log_no_update"))
    else:
        conn.execute(text("ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update"))


def _fill(store: AuditStore, n: int) -> None:
    for i in range(n):
        store.append(
            AuditEntry(
                actor=f"local:u{i % 3}",
                role="clinician",
                kind="assessment",
                method="POST",
                route="/api/v1/assess",
                status=200,
                recommendation_ids=["1.1.1"],
            )
        )


def test_chain_verifies_then_detects_edit_and_deletion(audit_url: str) -> None:
    engine = make_engine(audit_url)
    store = AuditStore(engine)
    _fill(store, 6)
    ok = _cli(audit_url, "verify")
    assert ok.returncode == 0, ok.stderr
    assert "6 records checked" in ok.stdout
    head = ok.stdout.strip().rsplit("head ", 1)[1]

    with engine.begin() as conn:  # the table refuses UPDATE ...
        with pytest.raises(Exception, match="append-only"):
            conn.execute(text("UPDATE audit_log SET actor = 'x' WHERE seq = 3"))
    with engine.begin() as conn:  # ... so a tamperer with DBA rights drops the trigger first
        _untrigger(conn)
        conn.execute(_SWAP, {"a": '"status":200', "b": '"status":201'})
    edited = _cli(audit_url, "verify")
    assert edited.returncode == 1 and "record 3 was altered" in edited.stderr

    with engine.begin() as conn:
        _untrigger(conn)  # (verify's make_engine put it back)
        conn.execute(_SWAP, {"a": '"status":201', "b": '"status":200'})
    assert _cli(audit_url, "verify").returncode == 0
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_log WHERE seq = 4"))
    deleted = _cli(audit_url, "verify")
    assert deleted.returncode == 1 and "record 4 is missing" in deleted.stderr

    with engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_log WHERE seq >= 4"))
    truncated = _cli(audit_url, "verify", "--expect-head", head)
    assert truncated.returncode == 1 and "deleted" in truncated.stderr
    engine.dispose()


def test_retention_purge_keeps_the_chain_verifiable(audit_url: str) -> None:
    engine = make_engine(audit_url)
    store = AuditStore(engine)
    _fill(store, 5)
    later = datetime.now(UTC) + timedelta(days=10)
    assert store.purge(retention_days=365, now=later) == 0
    assert store.purge(retention_days=5, now=later) == 5
    _fill(store, 2)
    result = store.verify()
    assert result.ok and result.checked == 2 and result.head_seq == 7
    engine.dispose()


def test_concurrent_writers_never_fork_the_chain(audit_url: str) -> None:
    import concurrent.futures

    engines = [make_engine(audit_url) for _ in range(3)]  # like three gateway workers
    stores = [AuditStore(e) for e in engines]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda i: _fill(stores[i % 3], 5), range(6)))
    result = stores[0].verify()
    assert result.ok and result.checked == 30
    for engine in engines:
        engine.dispose()


def test_gateway_on_postgres(make_gateway: Callable[..., TestClient], audit_url: str) -> None:
    with make_gateway(gateway_database_url=audit_url) as client:
        client.get("/api/v1/auth/me", headers=CLINICIAN)
        client.post("/api/v1/chat/sessions", headers=CLINICIAN)
        client.post("/api/v1/admin/api-keys", json={"name": "x", "roles": ["service"]}, headers=ADMIN)
        records = client.get("/api/v1/admin/audit", headers=ADMIN).json()["records"]
        assert [r["kind"] for r in records] == ["session", "admin"]
    assert _cli(audit_url, "verify").returncode == 0


def test_no_answer_without_its_audit_record(offline_gateway: TestClient) -> None:
    """If the trail cannot be written the caller gets a clear 503, not a 500 and not an unaudited answer."""
    with offline_gateway.app.state.engine.begin() as conn:  # type: ignore[attr-defined]
        conn.execute(text("DROP TABLE audit_log"))
    reply = offline_gateway.post("/api/v1/chat/sessions", headers=CLINICIAN)
    assert reply.status_code == 503, reply.text
    assert reply.json()["error"]["code"] == "audit_unavailable"


def test_redis_down_is_a_clear_503(make_gateway: Callable[..., TestClient]) -> None:
    from tests.support import free_port

    with make_gateway(session_redis_url=f"redis://127.0.0.1:{free_port()}/0") as client:
        reply = client.post("/api/v1/chat/sessions", headers=CLINICIAN)
        assert reply.status_code == 503 and reply.json()["error"]["code"] == "redis_unavailable"
        message = reply.json()["error"]["message"]
        assert "session store is unavailable" in message and "retry" in message
        assert "Error" not in message and "127.0.0.1" not in message  # no exception names, no hosts
        assert reply.headers["Retry-After"] == "5"


def test_export_since_starts_at_its_first_record(tmp_path_factory: pytest.TempPathFactory) -> None:
    """iter_all(since=...) finds where to start with the ts index: the statements it runs do not
    grow with the records before `since`, and it yields exactly the records from then on."""
    from sqlalchemy import event

    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('since') / 'audit.sqlite3'}")
    store = AuditStore(engine)
    _fill(store, 30)
    since = store.query_seq(26).ts  # type: ignore[union-attr]
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    rows = list(store.iter_all(batch=2, since=since))
    assert [seq for seq, *_ in rows] == [26, 27, 28, 29, 30]
    selects = [s for s in statements if "FROM audit_log" in s]
    assert len(selects) == 1 + 3 + 1  # where to start, three batches of <= 2, the empty end
    assert list(store.iter_all(since="2999-01-01")) == []
    assert len(list(store.iter_all(batch=7))) == 30
    engine.dispose()


def test_append_gives_up_at_once_when_the_database_is_gone(postgres_url: str) -> None:
    """Only contention is retried: with the database gone, append fails after one connection
    attempt (not 50), and every connection is made with a 3 s connect timeout."""
    from sqlalchemy import event
    from sqlalchemy.exc import OperationalError

    from services.gateway.tests.conftest import drop_database

    engine = make_engine(postgres_url)
    attempts: list[dict[str, Any]] = []
    event.listen(engine, "do_connect", lambda _d, _r, _a, cparams: attempts.append(dict(cparams)))
    engine.dispose()  # the connection that created the schema: the next one is made after the listener
    store = AuditStore(engine)
    _fill(store, 1)
    assert attempts and all(a["connect_timeout"] == 3 for a in attempts)
    drop_database(postgres_url)
    attempts.clear()
    with pytest.raises(OperationalError):
        _fill(store, 1)
    assert len(attempts) == 1, attempts
    engine.dispose()


def test_only_contention_is_retried() -> None:
    from sqlalchemy.exc import IntegrityError, OperationalError

    from gateway.audit.store import contention

    class PgError(Exception):
        def __init__(self, sqlstate: str | None) -> None:
            super().__init__("pg")
            self.sqlstate = sqlstate

    def op(orig: Exception) -> OperationalError:
        return OperationalError("INSERT", {}, orig)

    assert contention(IntegrityError("INSERT", {}, PgError("23505")))  # another writer took the seq
    assert contention(op(PgError("40P01"))) and contention(op(PgError("40001")))
    assert not contention(op(PgError(None)))  # connection refused, timed out
    assert not contention(op(PgError("3D000")))  # the database does not exist
    assert contention(op(Exception("database is locked")))  # SQLite
    assert not contention(op(Exception("no such table: audit_log")))
