"""The gateway validates input itself: 422 naming the field, without calling any service."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from services.gateway.tests.conftest import bearer

CLINICIAN = bearer("validation-tester", "clinician")


@pytest.mark.parametrize(
    ("method", "path", "body", "fields"),
    [
        ("POST", "/api/v1/assess", {"age": -1, "gender": "Male", "symptoms": []}, {"age"}),
        ("POST", "/api/v1/assess", {"age": 50, "symptoms": ["cough"]}, {"gender"}),
        ("POST", "/api/v1/assess", {"age": 50, "gender": "F", "symptoms": ["x"], "extra": 1}, {"extra"}),
        ("POST", "/api/v1/chat", {"session_id": "bad id", "message": "hi"}, {"session_id"}),
        ("POST", "/api/v1/chat", {"session_id": "a" * 129, "message": "hi"}, {"session_id"}),
        ("POST", "/api/v1/assess", {"age": 50, "gender": "F", "symptoms": ["x" * 1001]}, {"symptoms.0"}),
        ("POST", "/api/v1/assess", {"age": 50, "gender": "F", "symptoms": ["x"] * 51}, {"symptoms"}),
        ("POST", "/api/v1/search", {"query": "q" * 2001}, {"query"}),
        ("POST", "/api/v1/chat", {"session_id": "ok", "message": ""}, {"message"}),
        ("POST", "/api/v1/chat", {"session_id": "ok", "message": "x" * 4001}, {"message"}),
        ("POST", "/api/v1/search", {"query": "", "top_k": 100}, {"query", "top_k"}),
        ("GET", "/api/v1/patients/bad%20id", None, {"patient_id"}),
        ("POST", "/api/v1/assess/PT.101", None, {"patient_id"}),
        ("GET", "/api/v1/chat/bad%20id/history", None, {"session_id"}),
        ("DELETE", "/api/v1/chat/bad%20id", None, {"session_id"}),
    ],
)
def test_invalid_input_is_422_naming_the_field(
    offline_gateway: TestClient, method: str, path: str, body: object, fields: set[str]
) -> None:
    reply = offline_gateway.request(method, path, json=body, headers=CLINICIAN)
    assert reply.status_code == 422, reply.text  # not 503: the unreachable services were never called
    error = reply.json()["error"]
    assert error["code"] == "invalid_request"
    assert {f["field"] for f in error["fields"]} == fields
    for field in fields:
        assert field in error["message"]


@pytest.mark.parametrize("path", ["/api/v1/assess", "/api/v1/chat", "/api/v1/search"])
def test_malformed_json_is_422(offline_gateway: TestClient, path: str) -> None:
    reply = offline_gateway.post(
        path, content=b'{"age": 5,', headers={"content-type": "application/json", **CLINICIAN}
    )
    assert reply.status_code == 422
    assert reply.json()["error"]["code"] == "invalid_json"


def test_unknown_api_path_is_json_404(offline_gateway: TestClient) -> None:
    reply = offline_gateway.get("/api/v1/nothing-here")
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "not_found"
