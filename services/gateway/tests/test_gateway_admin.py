"""Admin routes: the router-level key guard, ingestion jobs on a real Redis broker/backend."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

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
