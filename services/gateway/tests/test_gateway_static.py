"""The frontend, /docs and the OpenAPI document served by the gateway."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_frontend_is_served_at_root(offline_gateway: TestClient) -> None:
    reply = offline_gateway.get("/")
    assert reply.status_code == 200
    assert "text/html" in reply.headers["content-type"]
    assert "NG12 Assessor" in reply.text and "/api/v1" in reply.text


def test_docs_and_openapi_document_the_api(offline_gateway: TestClient) -> None:
    assert offline_gateway.get("/docs").status_code == 200
    spec = offline_gateway.get("/openapi.json").json()
    expected = {
        "/api/v1/patients",
        "/api/v1/patients/{patient_id}",
        "/api/v1/assess/{patient_id}",
        "/api/v1/assess",
        "/api/v1/chat",
        "/api/v1/chat/{session_id}/history",
        "/api/v1/chat/{session_id}",
        "/api/v1/search",
    }
    assert expected <= set(spec["paths"])
    assess = spec["paths"]["/api/v1/assess"]["post"]
    assert assess["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/AssessRecord")
    ok = assess["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ok.endswith("/AssessmentResponse")
