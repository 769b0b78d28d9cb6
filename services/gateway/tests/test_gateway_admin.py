"""Admin routes: the router-level key guard, ingestion jobs on a real Redis broker/backend."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from services.gateway.tests.conftest import bearer

ADMIN_ROUTES = [
    ("POST", "/api/v1/admin/ingestions", {"activate": False}),
    ("GET", "/api/v1/admin/ingestions/abc123", None),
    ("GET", "/api/v1/admin/indexes", None),
    ("POST", "/api/v1/admin/indexes/v1/activate", None),
    ("POST", "/api/v1/admin/indexes/rollback", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ROUTES)
def test_no_credentials_is_401(offline_gateway: TestClient, method: str, path: str, body: object) -> None:
    reply = offline_gateway.request(method, path, json=body)
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "not_authenticated"
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ROUTES)
def test_clinician_is_403(offline_gateway: TestClient, method: str, path: str, body: object) -> None:
    reply = offline_gateway.request(method, path, json=body, headers=bearer("gp", "clinician"))
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == "forbidden" and "admin" in reply.json()["error"]["message"]


def test_admin_passes_the_guard(offline_gateway: TestClient, admin_headers: dict[str, str]) -> None:
    reply = offline_gateway.get("/api/v1/admin/indexes", headers=admin_headers)
    assert reply.status_code == 503  # past the guard; retrieval is unreachable in this test
    assert reply.json()["error"]["code"] == "retrieval_unavailable"


def test_every_admin_route_is_guarded(offline_gateway: TestClient) -> None:
    spec = offline_gateway.get("/openapi.json").json()
    admin_paths = [p for p in spec["paths"] if p.startswith("/api/v1/admin")]
    assert len(admin_paths) >= 8
    for path in admin_paths:
        for method, operation in spec["paths"][path].items():
            schemes = {name for entry in operation["security"] for name in entry}
            assert schemes == {"OAuth2PasswordBearer", "APIKeyHeader"}, path
            concrete = (
                path.replace("{job_id}", "abc")
                .replace("{version}", "v1")
                .replace("{key_id}", "0" * 16)
                .replace("{a}", "v1")
                .replace("{b}", "v2")
                .replace("{chunk_id}", "ng12:rec:1.1.1")
            )
            reply = offline_gateway.request(method.upper(), concrete)
            assert reply.status_code == 401, (method, path, reply.status_code)


def test_ingestion_job_lifecycle(
    offline_gateway: TestClient, admin_headers: dict[str, str], key_prefix: str, redis_url: str
) -> None:
    started = offline_gateway.post(
        "/api/v1/admin/ingestions",
        json={"pdf_path": "/data/ng12.pdf", "activate": False},
        headers={**admin_headers, "X-Request-ID": "rid-ingest-1"},
    )
    assert started.status_code == 202, started.text
    job_id = started.json()["job_id"]
    assert started.json()["status"] == "queued"

    raw = redis.Redis.from_url(redis_url)
    job_ids = [job_id]
    try:
        messages = raw.lrange(f"{key_prefix}:queue", 0, -1)
        assert len(messages) == 1
        message = json.loads(messages[0])
        assert message["headers"]["task"] == "ingestion.ingest_pdf"
        assert message["headers"]["id"] == job_id
        assert message["headers"]["request_id"] == "rid-ingest-1"
        _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
        assert kwargs == {"pdf_path": "/data/ng12.pdf", "activate": False}

        status = offline_gateway.get(f"/api/v1/admin/ingestions/{job_id}", headers=admin_headers).json()
        assert status.pop("created_at").endswith("Z")
        assert status == {
            "job_id": job_id,
            "state": "PENDING",
            "stage": "queued",
            "progress": None,
            "result": None,
            "error": None,
            "filename": None,
        }
        # one job at a time: a second request while this one is queued is refused, naming it
        busy = offline_gateway.post("/api/v1/admin/ingestions", json={}, headers=admin_headers)
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "ingestion_running"
        assert busy.json()["error"]["job_id"] == job_id
        listed = offline_gateway.get("/api/v1/admin/ingestions", headers=admin_headers).json()["jobs"]
        assert [j["job_id"] for j in listed] == [job_id]

        # what the worker's update_state / return / failure write into the result backend
        backend = offline_gateway.app.state.jobs.celery.backend  # type: ignore[attr-defined]
        backend.store_result(job_id, {"stage": "embedding", "progress": 0.4}, "PROGRESS")
        status = offline_gateway.get(f"/api/v1/admin/ingestions/{job_id}", headers=admin_headers).json()
        assert (status["state"], status["stage"], status["progress"]) == ("PROGRESS", "embedding", 0.4)

        backend.store_result(job_id, {"version": "v-test", "activated": False}, "SUCCESS")
        status = offline_gateway.get(f"/api/v1/admin/ingestions/{job_id}", headers=admin_headers).json()
        assert status["state"] == "SUCCESS" and status["progress"] == 1.0
        assert status["result"] == {"version": "v-test", "activated": False}

        failed = offline_gateway.post("/api/v1/admin/ingestions", json={}, headers=admin_headers).json()[
            "job_id"
        ]
        job_ids.append(failed)
        backend.store_result(failed, ValueError("PDF has no pages"), "FAILURE")
        status = offline_gateway.get(f"/api/v1/admin/ingestions/{failed}", headers=admin_headers).json()
        assert status["state"] == "FAILURE" and status["error"] == "ValueError: PDF has no pages"
    finally:
        for done in job_ids:
            raw.delete(f"celery-task-meta-{done}")
        raw.close()


def test_default_body_and_bad_body(offline_gateway: TestClient, admin_headers: dict[str, str]) -> None:
    bad = offline_gateway.post("/api/v1/admin/ingestions", json={"activate": "maybe"}, headers=admin_headers)
    assert bad.status_code == 422 and bad.json()["error"]["fields"][0]["field"] == "activate"


def test_unknown_job_is_404(offline_gateway: TestClient, admin_headers: dict[str, str]) -> None:
    reply = offline_gateway.get("/api/v1/admin/ingestions/0123456789abcdef", headers=admin_headers)
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "job_not_found"


def test_queue_down_is_503(make_gateway: Callable[..., TestClient], admin_headers: dict[str, str]) -> None:
    from tests.support import free_port

    with make_gateway(redis_url=f"redis://127.0.0.1:{free_port()}/0") as client:
        reply = client.post("/api/v1/admin/ingestions", json={}, headers=admin_headers)
        assert reply.status_code == 503
        assert reply.json()["error"]["code"] == "queue_unavailable"
        status = client.get("/api/v1/admin/ingestions/abc", headers=admin_headers)
        assert status.status_code == 503


def _trail(client: TestClient) -> list[dict[str, Any]]:
    """The audit trail, read from the store (reading through the API would add records)."""
    store = client.app.state.audit.store  # type: ignore[attr-defined]
    return [r.model_dump() for r in store.query(limit=5000)]


def test_queue_down_at_the_claim_is_audited(
    make_gateway: Callable[..., TestClient], admin_headers: dict[str, str], redis_url: str
) -> None:
    from tests.support import free_port

    closed = f"redis://127.0.0.1:{free_port()}/0"
    with make_gateway(redis_url=closed, session_redis_url=redis_url) as client:
        reply = client.post("/api/v1/admin/ingestions", json={}, headers=admin_headers)
        assert reply.status_code == 503 and reply.json()["error"]["code"] == "queue_unavailable"
        (record,) = _trail(client)
    assert (record["status"], record["summary"]["action"]) == (503, "ingestion")
    assert record["summary"]["error"] == "queue_unavailable" and record["summary"]["outcome"] == "not_done"


@contextmanager
def own_redis() -> Iterator[tuple[redis.Redis, int]]:
    """A throwaway redis-server on a free port (its ACL users are this test's alone)."""
    from tests.support import free_port, wait_for

    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    try:
        wait_for(lambda: client.ping(), 10, 0.05, "the test's redis-server")
        yield client, port
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)


def test_a_failed_enqueue_supersedes_its_record_and_leaves_no_job(
    make_gateway: Callable[..., TestClient], admin_headers: dict[str, str], redis_url: str
) -> None:
    """The broker refuses the task (a Redis ACL user that may write the job records but not the
    Celery queue): the queued record is superseded by a 503 one, and neither the job record, the
    list entry nor the claim is left behind, so the next request is not told 409."""
    with own_redis() as (raw, port):
        raw.execute_command(
            "ACL", "SETUSER", "gw", "on", ">pw", "~q:jobs*", "~_kombu.*", "~celery-task-meta-*", "&*", "+@all"
        )
        broker = f"redis://gw:pw@127.0.0.1:{port}/0"
        settings = {"job_key_prefix": "q:jobs", "ingestion_queue": "q:queue"}
        with make_gateway(redis_url=broker, session_redis_url=redis_url, **settings) as client:
            for attempt in range(2):
                reply = client.post(
                    "/api/v1/admin/ingestions", json={"activate": False}, headers=admin_headers
                )
                assert reply.status_code == 503, reply.text
                assert reply.json()["error"]["code"] == "queue_unavailable"
                assert raw.keys("q:*") == [], attempt  # no record, list entry or claim; nothing queued
            trail = _trail(client)
            assert client.get("/api/v1/admin/ingestions", headers=admin_headers).json()["jobs"] == []
    assert [(r["status"], r["summary"]["action"]) for r in trail] == [
        (202, "ingestion"),
        (503, "ingestion"),
    ] * 2
    queued, failed = trail[:2]
    assert failed["request_id"] == queued["request_id"] and failed["summary"]["supersedes"] == queued["seq"]
    assert failed["summary"]["job_id"] == queued["summary"]["job_id"]
    assert failed["summary"]["error"] == "queue_unavailable"
    assert failed["summary"]["outcome"] == "unknown"  # the broker may have taken it before failing


def test_a_claim_without_its_job_record_is_stale(
    offline_gateway: TestClient, admin_headers: dict[str, str], key_prefix: str, redis_url: str
) -> None:
    """A gateway that died between claim and enqueue leaves a claim naming a job nobody queued:
    it does not block ingestion (here the claim an older gateway left, with no record at all)."""
    raw = redis.Redis.from_url(redis_url)
    try:
        raw.set(f"{key_prefix}:jobs:running", "0123456789abcdef", ex=3600)
        started = offline_gateway.post("/api/v1/admin/ingestions", json={}, headers=admin_headers)
        assert started.status_code == 202, started.text
        assert raw.get(f"{key_prefix}:jobs:running") == started.json()["job_id"].encode()
        raw.delete(f"celery-task-meta-{started.json()['job_id']}")
    finally:
        raw.close()


def test_a_crash_between_claim_and_enqueue_blocks_for_the_pending_time_only(
    redis_url: str, key_prefix: str
) -> None:
    """claim() writes the claim with a pending job record that expires; enqueue() replaces it.
    While pending, the claim holds (another request meanwhile is 409, not a second job); once
    the pending record has expired (its gateway died before enqueue) the claim is stale."""
    import asyncio

    from redis.asyncio import Redis

    from gateway.jobs import IngestionJobs, IngestionRunning

    async def scenario() -> None:
        client = Redis.from_url(redis_url)
        jobs = IngestionJobs(
            redis_url,
            client,
            record_ttl_seconds=3600,
            key_prefix=f"{key_prefix}:jobs",
            queue=f"{key_prefix}:queue",
            pending_ttl_seconds=1,
        )
        try:
            crashed = await jobs.claim()  # ... and never enqueued
            with pytest.raises(IngestionRunning) as running:
                await jobs.claim()
            assert running.value.job_id == crashed and await jobs.running() == crashed
            await asyncio.sleep(1.3)
            assert await jobs.running() is None
            after = await jobs.claim()
            assert after != crashed
            await jobs.enqueue(after, "/data/ng12.pdf", False)
            await asyncio.sleep(1.3)  # a queued job's record lives the record TTL: it still holds
            assert await jobs.running() == after
            await client.delete(f"celery-task-meta-{after}")
        finally:
            jobs.close()
            await client.aclose()

    asyncio.run(scenario())
