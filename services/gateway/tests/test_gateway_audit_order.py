"""Changes are audited before they take effect (or in the same transaction), reads are audited,
and a change whose record cannot be written does not happen: on the real gateway, real Redis, the
real chat app and the real retrieval server. The audit trail is made to fail with a database
trigger that refuses every insert, so what it holds can still be read afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis
from fastapi.testclient import TestClient
from sqlalchemy import text

from ng12_common.retrieval_client import RetrievalClient
from services.gateway.tests.conftest import bearer
from tests.support import RetrievalProcess, free_port

CLINICIAN = bearer("gp-order", "clinician")
ADMIN = bearer("admin-order", "admin")


@contextmanager
def audit_refused(client: TestClient) -> Iterator[None]:
    """Every audit insert fails while inside (as a full disk or a lost database would)."""
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TRIGGER audit_refused BEFORE INSERT ON audit_log "
                "BEGIN SELECT RAISE(ABORT, 'audit trail refused'); END"
            )
        )
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(text("DROP TRIGGER audit_refused"))


def records(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    """The trail, read from the store (reading through the API would add records of its own)."""
    store = client.app.state.audit.store  # type: ignore[attr-defined]
    return [r.model_dump() for r in store.query(limit=5000, **params)]


def _refused(reply: httpx.Response) -> None:
    assert reply.status_code == 503, reply.text
    assert reply.json()["error"]["code"] == "audit_unavailable"
    assert "audit trail cannot be written" in reply.json()["error"]["message"]


# --- API keys: the change and its record in one transaction ----------------------------------------


def test_api_key_changes_commit_with_their_record(offline_gateway: TestClient) -> None:
    engine = offline_gateway.app.state.engine  # type: ignore[attr-defined]

    def key_rows() -> int:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM api_keys")).scalar_one())

    with audit_refused(offline_gateway):
        _refused(
            offline_gateway.post(
                "/api/v1/admin/api-keys", json={"name": "x", "roles": ["service"]}, headers=ADMIN
            )
        )
    assert key_rows() == 0 and records(offline_gateway) == []  # neither the key nor a record

    created = offline_gateway.post(
        "/api/v1/admin/api-keys", json={"name": "EHR", "roles": ["service"]}, headers=ADMIN
    ).json()
    as_key = {"X-API-Key": created["api_key"]}
    with audit_refused(offline_gateway):
        _refused(offline_gateway.delete(f"/api/v1/admin/api-keys/{created['key_id']}", headers=ADMIN))
    assert offline_gateway.get("/api/v1/auth/me", headers=as_key).status_code == 200  # not revoked

    assert (
        offline_gateway.delete(f"/api/v1/admin/api-keys/{created['key_id']}", headers=ADMIN).status_code
        == 204
    )
    assert offline_gateway.get("/api/v1/auth/me", headers=as_key).status_code == 401
    again = offline_gateway.delete(f"/api/v1/admin/api-keys/{created['key_id']}", headers=ADMIN)
    assert again.status_code == 404
    trail = [(r["summary"]["action"], r["status"]) for r in records(offline_gateway)]
    assert trail == [("api_key_create", 201), ("api_key_revoke", 204), ("api_key_revoke", 404)]


# --- chat sessions and turns: recorded before they are stored ------------------------------------


def _session_keys(redis_url: str, key_prefix: str) -> list[bytes]:
    raw = redis.Redis.from_url(redis_url)
    try:
        return list(raw.scan_iter(match=f"{key_prefix}:gw:session:*"))
    finally:
        raw.close()


def test_no_session_without_its_record(offline_gateway: TestClient, redis_url: str, key_prefix: str) -> None:
    with audit_refused(offline_gateway):
        _refused(offline_gateway.post("/api/v1/chat/sessions", headers=CLINICIAN))
    assert _session_keys(redis_url, key_prefix) == [] and records(offline_gateway) == []

    made = offline_gateway.post("/api/v1/chat/sessions", headers=CLINICIAN)
    assert made.status_code == 201
    assert len(_session_keys(redis_url, key_prefix)) == 1
    listed = offline_gateway.get("/api/v1/chat/sessions", headers=CLINICIAN).json()["sessions"]
    assert [s["session_id"] for s in listed] == [made.json()["session_id"]]
    trail = [(r["kind"], r["summary"]["action"], r["status"]) for r in records(offline_gateway)]
    assert trail == [("session", "create", 201), ("session", "list", 200)]
    assert records(offline_gateway)[1]["summary"]["returned"] == 1


def test_a_session_store_failure_after_the_record_is_recorded_too(
    make_gateway: Callable[..., TestClient],
) -> None:
    """The record is written first; when Redis then fails, a second record says so (and may have)."""
    with make_gateway(session_redis_url=f"redis://127.0.0.1:{free_port()}/0") as client:
        reply = client.post("/api/v1/chat/sessions", headers=CLINICIAN)
        assert reply.status_code == 503 and reply.json()["error"]["code"] == "redis_unavailable"
        first, second = records(client)
    assert (first["status"], second["status"]) == (201, 503)
    assert first["request_id"] == second["request_id"] and second["summary"]["supersedes"] == first["seq"]
    assert second["summary"]["outcome"] == "unknown" and second["summary"]["error"] == "ConnectionError"
    assert second["summary"]["session_id"] == first["summary"]["session_id"]


def _history(chat_url: str, session_id: str) -> list[dict[str, Any]]:
    reply = httpx.get(f"{chat_url}/chat/{session_id}/history", timeout=30)  # the chat service itself
    assert reply.status_code == 200, reply.text
    turns: list[dict[str, Any]] = reply.json()["turns"]
    return turns


def test_a_chat_turn_is_recorded_before_the_chat_service_stores_it(
    make_gateway: Callable[..., TestClient], chat_url: str
) -> None:
    with make_gateway(chat_url=chat_url) as client:
        sid = client.post("/api/v1/chat/sessions", headers=CLINICIAN).json()["session_id"]
        body = {"session_id": sid, "message": "Hello"}
        answered = client.post("/api/v1/chat", json=body, headers=CLINICIAN)
        assert answered.status_code == 200, answered.text
        assert len(_history(chat_url, sid)) == 2  # the chat service stores the turn with its answer
        turn = [r for r in records(client, kind="chat")]
        assert [(r["summary"]["phase"], r["status"]) for r in turn] == [("asked", 202), ("answered", 200)]
        assert turn[0]["seq"] < turn[1]["seq"] and turn[0]["request_id"] == turn[1]["request_id"]
        assert turn[1]["grounding"] == answered.json()["grounding"]  # the outcome is on the second

        with audit_refused(client):
            _refused(client.post("/api/v1/chat", json={**body, "message": "Hello again"}, headers=CLINICIAN))
            _refused(client.delete(f"/api/v1/chat/{sid}", headers=CLINICIAN))
        assert len(_history(chat_url, sid)) == 2  # the refused turn never reached the chat service
        assert client.get(f"/api/v1/chat/{sid}/history", headers=CLINICIAN).status_code == 200  # not deleted

        assert client.delete(f"/api/v1/chat/{sid}", headers=CLINICIAN).status_code == 204
        assert _history(chat_url, sid) == []
        deleted = [r for r in records(client, kind="session") if r["summary"]["action"] == "delete"]
        assert [r["status"] for r in deleted] == [204]


# --- admin reads are audited -----------------------------------------------------------------------


def test_every_admin_read_is_audited(offline_gateway: TestClient) -> None:
    """Each admin GET in the OpenAPI document leaves a record with its route and the status
    answered, failures included (retrieval is unreachable here: 503)."""
    spec = offline_gateway.get("/openapi.json").json()
    reads = [p for p, ops in spec["paths"].items() if p.startswith("/api/v1/admin") and "get" in ops]
    assert len(reads) >= 8
    for path in reads:
        concrete = (
            path.replace("{job_id}", "abc")
            .replace("{version}", "v1")
            .replace("{a}", "v1")
            .replace("{b}", "v2")
            .replace("{chunk_id}", "ng12:rec:1.1.1")
        )
        before = len(records(offline_gateway))
        reply = offline_gateway.get(concrete, headers=ADMIN)
        after = records(offline_gateway)
        assert len(after) == before + 1, (path, reply.status_code)
        record = after[-1]
        assert (record["kind"], record["route"], record["status"]) == ("admin", path, reply.status_code), path
        assert record["actor"] == "local:admin-order" and record["summary"]["action"]


# --- index activation and rollback: recorded before retrieval is asked ----------------------------


async def _on_retrieval(addr: str, method: str, *args: Any) -> Any:
    client = RetrievalClient(addr, timeout_seconds=60)
    try:
        return await getattr(client, method)(*args)
    finally:
        await client.close()


def test_index_changes_are_recorded_before_they_take_effect(
    make_gateway: Callable[..., TestClient], retrieval_server: RetrievalProcess, tmp_path: Path
) -> None:
    from ingestion.index_upload import upload_index
    from ng12_common.knowledge import KnowledgeBase
    from services.gateway.tests.test_gateway_viewer import _modified_kb

    kb_file = next(Path(retrieval_server.chroma_dir.parent / "kb").glob("ng12-*.json"))
    kb = KnowledgeBase.model_validate_json(kb_file.read_text(encoding="utf-8"))
    other = upload_index(retrieval_server.addr, _modified_kb(kb), activate=False)["version"]

    def active() -> str:
        """The version retrieval serves, asked directly (not through a gateway: no audit record)."""
        return str(asyncio.run(_on_retrieval(retrieval_server.addr, "list_versions")).active_version)

    original = active()
    try:
        with make_gateway(retrieval_addr=retrieval_server.addr, retrieval_timeout_seconds=30.0) as client:
            with audit_refused(client):
                _refused(client.post(f"/api/v1/admin/indexes/{other}/activate", headers=ADMIN))
                _refused(client.post("/api/v1/admin/indexes/rollback", headers=ADMIN))
            assert records(client) == []
            assert active() == original  # neither happened

            unknown = client.post("/api/v1/admin/indexes/v999/activate", headers=ADMIN)
            assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "index_version_not_found"

            switched = client.post(f"/api/v1/admin/indexes/{other}/activate", headers=ADMIN)
            assert switched.status_code == 200, switched.text
            assert active() == other
            back = client.post("/api/v1/admin/indexes/rollback", headers=ADMIN)
            assert back.status_code == 200 and back.json()["version"] == original
            trail = [
                (r["summary"]["action"], r["status"], r["summary"].get("version")) for r in records(client)
            ]
            assert trail == [("activate", 404, "v999"), ("activate", 200, other), ("rollback", 200, None)]
            assert records(client)[1]["summary"]["from_version"] == original
            assert records(client)[2]["summary"]["from_version"] == other
    finally:
        if active() != original:  # leave the session's retrieval server as it was
            asyncio.run(_on_retrieval(retrieval_server.addr, "activate", original))
    assert active() == original


def _begin_build(addr: str) -> str:
    """A version left building on retrieval (BeginIndex with nothing uploaded yet)."""
    import grpc

    from ng12.retrieval.v1 import retrieval_pb2 as pb
    from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc

    with grpc.insecure_channel(addr) as channel:
        request = pb.BeginIndexRequest(description="refused activation")
        return str(pb_grpc.RetrievalStub(channel).BeginIndex(request, timeout=30).version)


def _abort_build(addr: str, version: str) -> None:
    import grpc

    from ng12.retrieval.v1 import retrieval_pb2 as pb
    from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc

    with grpc.insecure_channel(addr) as channel:
        request = pb.AbortIndexRequest(version=version, reason="test: refused activation")
        pb_grpc.RetrievalStub(channel).AbortIndex(request, timeout=30)


def test_refused_index_changes_are_409_with_retrievals_reason(
    make_gateway: Callable[..., TestClient], retrieval_server: RetrievalProcess
) -> None:
    """Retrieval refuses (FAILED_PRECONDITION) to activate a version still building or failed:
    409 `index_change_refused` with its reason, not 503 `no_active_index`; the first record is
    superseded by a 409 one (not done); the served version is unchanged."""
    addr = retrieval_server.addr
    original = str(asyncio.run(_on_retrieval(addr, "list_versions")).active_version)
    building = _begin_build(addr)
    try:
        with make_gateway(retrieval_addr=addr, retrieval_timeout_seconds=30.0) as client:
            refused = client.post(f"/api/v1/admin/indexes/{building}/activate", headers=ADMIN)
            assert refused.status_code == 409, refused.text
            error = refused.json()["error"]
            assert error["code"] == "index_change_refused"
            assert f"index version {building} is building; only ready versions activate" in error["message"]

            _abort_build(addr, building)
            failed = client.post(f"/api/v1/admin/indexes/{building}/activate", headers=ADMIN)
            assert failed.status_code == 409, failed.text
            assert f"index version {building} is failed" in failed.json()["error"]["message"]
            trail = [
                (r["status"], r["summary"].get("outcome"), r["summary"].get("error")) for r in records(client)
            ]
            assert trail == [(200, None, None), (409, "not_done", "index_change_refused")] * 2
            first, second = records(client)[:2]
            assert second["summary"]["supersedes"] == first["seq"]
    finally:
        listed = asyncio.run(_on_retrieval(addr, "list_versions"))
        if any(v.version == building and v.status == "building" for v in listed.versions):
            _abort_build(addr, building)
    assert str(asyncio.run(_on_retrieval(addr, "list_versions")).active_version) == original


def test_rollback_without_a_previous_version_is_409(
    make_gateway: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A retrieval server with no previous version (here a fresh, empty one) refuses a rollback:
    409 with its reason, recorded as not done."""
    from tests.support import start_retrieval, stop_process

    proc, port, _, _ = start_retrieval(tmp_path)
    try:
        with make_gateway(retrieval_addr=f"127.0.0.1:{port}", retrieval_timeout_seconds=30.0) as client:
            reply = client.post("/api/v1/admin/indexes/rollback", headers=ADMIN)
            assert reply.status_code == 409, reply.text
            assert reply.json()["error"]["code"] == "index_change_refused"
            assert "there is no previous index version to roll back to" in reply.json()["error"]["message"]
            first, second = records(client)
    finally:
        stop_process(proc)  # type: ignore[arg-type]
    assert (first["status"], first["summary"]["from_version"]) == (200, "")
    assert (second["status"], second["summary"]["outcome"]) == (409, "not_done")
