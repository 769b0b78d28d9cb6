"""Proxying to the real assessment and chat apps; quick 503s when they are unreachable."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi.testclient import TestClient

from services.gateway.tests.conftest import bearer
from tests.support import free_port

CLINICIAN = bearer("proxy-tester", "clinician")


def test_unreachable_services_are_quick_503(offline_gateway: TestClient) -> None:
    sid = offline_gateway.post("/api/v1/chat/sessions", headers=CLINICIAN).json()["session_id"]
    for method, path, body, service in (
        ("GET", "/api/v1/patients", None, "assessment"),
        ("POST", "/api/v1/assess/PT-101", None, "assessment"),
        ("POST", "/api/v1/chat", {"session_id": sid, "message": "hi"}, "chat"),
        ("GET", f"/api/v1/chat/{sid}/history", None, "chat"),
        ("DELETE", f"/api/v1/chat/{sid}", None, "chat"),
    ):
        start = time.perf_counter()
        reply = offline_gateway.request(
            method, path, json=body, headers={"X-Request-ID": "rid-503", **CLINICIAN}
        )
        elapsed = time.perf_counter() - start
        assert reply.status_code == 503, (path, reply.text)
        error = reply.json()["error"]
        assert error["code"] == f"{service}_unavailable"
        assert "cannot be reached" in error["message"] and error["request_id"] == "rid-503"
        assert elapsed < 2.0, f"{path} took {elapsed:.2f}s"


def test_slow_service_times_out_as_503(make_gateway: Callable[..., TestClient]) -> None:
    import socket

    with socket.socket() as listener:  # accepts connections but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with make_gateway(assessment_url=url, downstream_timeout_seconds=0.5) as client:
            start = time.perf_counter()
            reply = client.get("/api/v1/patients", headers=CLINICIAN)
            elapsed = time.perf_counter() - start
    assert reply.status_code == 503
    assert reply.json()["error"]["code"] == "assessment_unavailable"
    assert "did not answer in time" in reply.json()["error"]["message"]
    assert elapsed < 2.0


def test_assessment_answers_pass_through(
    make_gateway: Callable[..., TestClient], assessment_url: str
) -> None:
    with make_gateway(assessment_url=assessment_url) as client:
        listed = client.get("/api/v1/patients", headers=CLINICIAN)
        assert listed.status_code == 200 and len(listed.json()) == 10
        assert client.get("/api/v1/patients/PT-102", headers=CLINICIAN).json()["name"] == "Jane Smith"

        missing = client.get(
            "/api/v1/patients/PT-999", headers={"X-Request-ID": "rid-passthrough-1", **CLINICIAN}
        )
        assert missing.status_code == 404
        error = missing.json()["error"]
        assert error["code"] == "patient_not_found" and "PT-999" in error["message"]
        assert error["request_id"] == "rid-passthrough-1"  # set by assessment: the id was forwarded
        assert missing.headers["X-Request-ID"] == "rid-passthrough-1"

        # assessment reaches no retrieval: its 503 body comes through unchanged
        down = client.post(
            "/api/v1/assess/PT-101", headers={"X-Request-ID": "rid-passthrough-2", **CLINICIAN}
        )
        assert down.status_code == 503
        assert down.json()["error"]["code"] == "retrieval_unavailable"
        assert down.json()["error"]["request_id"] == "rid-passthrough-2"


def test_chat_answers_pass_through(make_gateway: Callable[..., TestClient], chat_url: str) -> None:
    with make_gateway(chat_url=chat_url) as client:
        sid = client.post("/api/v1/chat/sessions", headers=CLINICIAN).json()["session_id"]
        history = client.get(f"/api/v1/chat/{sid}/history", headers=CLINICIAN)
        assert history.status_code == 200 and history.json()["turns"] == []
        down = client.post(
            "/api/v1/chat", json={"session_id": sid, "message": "haemoptysis?"}, headers=CLINICIAN
        )
        deleted = client.delete(f"/api/v1/chat/{sid}", headers=CLINICIAN)
        assert deleted.status_code == 204 and deleted.content == b""
        assert down.status_code == 503 and down.json()["error"]["code"] == "retrieval_unavailable"


def test_readiness_lists_every_dependency_and_stays_ready_degraded(offline_gateway: TestClient) -> None:
    """The services behind the gateway are advisory: all of them down, the gateway still serves
    sign-in, sessions and whatever answers, so /readyz stays 200 and says "degraded"."""
    reply = offline_gateway.get("/readyz")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "degraded"
    checks = body["checks"]
    assert set(checks) == {"assessment", "chat", "retrieval", "job_queue", "redis", "database"}
    assert checks["redis"] == "ok" and checks["database"] == "ok" and checks["job_queue"] == "ok"
    assert "cannot be reached" in checks["assessment"] and "cannot be reached" in checks["chat"]
    assert "retrieval" in checks["retrieval"] and checks["retrieval"] != "ok"
    assert body["advisory"] == ["assessment", "chat", "job_queue", "retrieval"]
    assert offline_gateway.get("/livez").status_code == 200


def test_not_ready_without_its_session_redis(make_gateway: Callable[..., TestClient], redis_url: str) -> None:
    """Its session Redis (SESSION_REDIS_URL: chat sessions, rate limits) is required: without it
    /readyz is 503, even while the broker Redis answers."""
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with make_gateway(redis_url=redis_url, session_redis_url=closed) as client:
        reply = client.get("/readyz")
    assert reply.status_code == 503, reply.text
    body = reply.json()
    assert body["status"] == "not_ready"
    assert "session store" in body["checks"]["redis"] and "unavailable" in body["checks"]["redis"]
    assert body["checks"]["database"] == "ok" and body["checks"]["job_queue"] == "ok"


def test_broker_redis_down_is_advisory(make_gateway: Callable[..., TestClient], redis_url: str) -> None:
    """The broker Redis (REDIS_URL) only carries ingestion jobs: without it the gateway stays
    ready (200 "degraded", the problem under checks.job_queue) and ingestion answers 503."""
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with make_gateway(redis_url=closed, session_redis_url=redis_url) as client:
        reply = client.get("/readyz")
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["status"] == "degraded" and "job_queue" in body["advisory"]
        assert body["checks"]["redis"] == "ok" and body["checks"]["database"] == "ok"
        assert "ingestion job queue" in body["checks"]["job_queue"]
        sessions = client.post("/api/v1/chat/sessions", headers=CLINICIAN)
        assert sessions.status_code == 201, sessions.text
        queued = client.post("/api/v1/admin/ingestions", json={}, headers=bearer("admin", "admin"))
        assert queued.status_code == 503 and queued.json()["error"]["code"] == "queue_unavailable"
