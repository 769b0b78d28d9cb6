"""Assessment against a REAL retrieval server with the NG12 PDF indexed (repo-root fixture)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_assess_known_patient_cites_ng12(live_client: TestClient) -> None:
    reply = live_client.post("/assess/PT-101")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["patient"]["patient_id"] == "PT-101"
    assert body["assessment"]["top_action"] == "not_assessed"
    assert body["assessment"]["engine"] == "retrieval-only"
    assert body["assessment"]["matched_recommendations"] == []
    citations = body["citations"]
    assert 1 <= len(citations) <= 8
    for c in citations:
        assert c["source"] == "NG12" and c["page"] >= 1 and c["chunk_id"] and c["excerpt"].strip()
    scores = [c["score"] for c in citations]
    assert all(0.0 <= s <= 1.0 for s in scores)
    guideline = body["guideline"]
    assert guideline["index_version"] and guideline["code"] == "NG12"
    assert "cancer" in guideline["title"].lower()


def test_assess_record_in_body(live_client: TestClient) -> None:
    record = {
        "age": 60,
        "gender": "Male",
        "smoking_history": "Never Smoked",
        "symptoms": ["visible haematuria"],
        "symptom_duration_days": 2,
    }
    reply = live_client.post("/assess", json=record)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["patient"]["age"] == 60 and "patient_id" not in body["patient"]
    assert body["citations"], "expected NG12 passages for visible haematuria"
    assert any("haematuria" in c["excerpt"].lower() for c in body["citations"])


def test_record_without_symptoms_still_names_the_guideline(live_client: TestClient) -> None:
    reply = live_client.post("/assess", json={"age": 40, "gender": "Female", "symptoms": []})
    assert reply.status_code == 200, reply.text
    assert reply.json()["citations"] == []
    assert reply.json()["guideline"]["index_version"]


def test_ready_with_retrieval(live_client: TestClient) -> None:
    reply = live_client.get("/readyz")
    assert reply.status_code == 200, reply.text
    assert reply.json()["checks"] == {"retrieval": "ok", "patient_store": "ok"}
