"""The assessment HTTP API without retrieval: patients, errors, validation, readiness."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient


def test_list_and_get_patients(offline_client: TestClient) -> None:
    listed = offline_client.get("/patients")
    assert listed.status_code == 200
    assert len(listed.json()) == 10
    one = offline_client.get("/patients/PT-104")
    assert one.status_code == 200
    assert one.json()["name"] == "Sarah Connor" and one.json()["symptoms"] == ["dysphagia"]


def test_unknown_patient_is_404_with_code(offline_client: TestClient) -> None:
    for method, path in (("GET", "/patients/PT-999"), ("POST", "/assess/PT-999")):
        reply = offline_client.request(method, path)
        assert reply.status_code == 404, path
        error = reply.json()["error"]
        assert error["code"] == "patient_not_found"
        assert "No patient with id 'PT-999'" in error["message"]


def test_bad_patient_id_is_422_naming_it(offline_client: TestClient) -> None:
    reply = offline_client.get("/patients/bad%20id!")
    assert reply.status_code == 422
    assert reply.json()["error"]["fields"][0]["field"] == "patient_id"


def test_invalid_record_is_422_naming_fields(offline_client: TestClient) -> None:
    reply = offline_client.post("/assess", json={"age": 200, "gender": "Male", "symptoms": "cough"})
    assert reply.status_code == 422
    fields = {f["field"] for f in reply.json()["error"]["fields"]}
    assert fields == {"age", "symptoms"}


def test_unknown_record_field_is_refused(offline_client: TestClient) -> None:
    reply = offline_client.post("/assess", json={"age": 50, "gender": "Male", "symptoms": [], "bmi": 30})
    assert reply.status_code == 422
    assert reply.json()["error"]["fields"][0]["field"] == "bmi"


def test_malformed_json_is_422(offline_client: TestClient) -> None:
    reply = offline_client.post("/assess", content=b"{not json", headers={"content-type": "application/json"})
    assert reply.status_code == 422
    assert reply.json()["error"]["code"] == "invalid_json"


def test_retrieval_down_is_quick_503(offline_client: TestClient) -> None:
    start = time.perf_counter()
    reply = offline_client.post("/assess/PT-101")
    elapsed = time.perf_counter() - start
    assert reply.status_code == 503
    assert reply.json()["error"]["code"] == "retrieval_unavailable"
    assert elapsed < 3.0, f"took {elapsed:.2f}s, the retrieval deadline is 2s"


def test_readiness_reports_retrieval(offline_client: TestClient) -> None:
    reply = offline_client.get("/readyz")
    assert reply.status_code == 503
    checks = reply.json()["checks"]
    assert checks["patient_store"] == "ok"
    assert "not serving" in checks["retrieval"]
    assert offline_client.get("/livez").status_code == 200


def test_request_id_is_echoed(offline_client: TestClient) -> None:
    reply = offline_client.get("/patients/PT-999", headers={"X-Request-ID": "req-abc-123"})
    assert reply.headers["X-Request-ID"] == "req-abc-123"
    assert reply.json()["error"]["request_id"] == "req-abc-123"


def test_bad_records_are_422_naming_the_field(offline_client: TestClient) -> None:
    cases = [
        ({"age": -1, "gender": "Male", "symptoms": []}, "age"),
        ({"age": 200, "gender": "Male", "symptoms": []}, "age"),
        ({"age": 50, "gender": "Male"}, "symptoms"),
        ({"age": "fifty", "gender": "Male", "symptoms": []}, "age"),
        ({"age": 50, "gender": "Male", "symptoms": [1, 2]}, "symptoms"),
        ({"age": 50, "gender": "Male", "symptoms": [], "test_results": ["fit", 12]}, "test_results"),
    ]
    for body, field in cases:
        reply = offline_client.post("/assess", json=body)
        assert reply.status_code == 422, body
        error = reply.json()["error"]
        assert any(f["field"].split(".")[0] == field for f in error["fields"]), (body, error)
        assert field in error["message"], error["message"]


def test_retrieval_down_says_the_engine_needs_the_guideline(offline_client: TestClient) -> None:
    start = time.perf_counter()
    reply = offline_client.post("/assess", json={"age": 50, "gender": "Male", "symptoms": []})
    assert time.perf_counter() - start < 3.0
    assert reply.status_code == 503
    assert "needs the NG12 guideline knowledge" in reply.json()["error"]["message"]
