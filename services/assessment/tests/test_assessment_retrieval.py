"""Assessment against a REAL retrieval server with the NG12 PDF indexed (repo-root fixture)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_assess_known_patient_matches_and_cites_ng12(live_client: TestClient) -> None:
    reply = live_client.post("/assess/PT-101")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["patient"]["patient_id"] == "PT-101"
    assessment = body["assessment"]
    assert assessment["engine"] == "rules"
    matched = [m["recommendation_id"] for m in assessment["matched_recommendations"]]
    assert {"1.1.1", "1.1.2"} <= set(matched)
    assert "1.1.3" not in matched and "1.1.4" not in matched
    assert assessment["top_action"] in ("suspected_cancer_pathway_referral", "very_urgent_investigation")
    assert assessment["risk_level"] in ("urgent", "very_urgent")
    assert "lung" in assessment["cancer_types"]
    first = assessment["matched_recommendations"][0]
    assert first["text"] and first["page"] >= 1 and first["criteria_met"]
    citations = body["citations"]
    # matched recommendations first, in the same order, verbatim, then supporting passages
    assert [c["recommendation_id"] for c in citations[: len(matched)]] == matched
    for c in citations:
        assert c["source"] == "NG12" and c["page"] >= 1 and c["chunk_id"] and c["excerpt"].strip()
        assert c["recommendation_id"] not in ("1.1.3", "1.1.4"), "an unmet recommendation is cited"
    assert assessment["assumptions"] and assessment["reasoning"]
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
    matched = {m["recommendation_id"] for m in body["assessment"]["matched_recommendations"]}
    assert {"1.6.4", "1.6.6"} <= matched
    assert any("haematuria" in c["excerpt"].lower() for c in body["citations"])


def test_empty_symptoms_is_no_criteria_met_with_safety_netting(live_client: TestClient) -> None:
    reply = live_client.post("/assess", json={"age": 40, "gender": "Female", "symptoms": []})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assessment = body["assessment"]
    assert assessment["top_action"] == "no_criteria_met"
    assert assessment["risk_level"] == "no_criteria_met"
    assert assessment["matched_recommendations"] == []
    assert assessment["safety_netting"], "the 1.15 safety-netting texts must be quoted"
    assert {c["recommendation_id"] for c in body["citations"]} <= {
        c["recommendation_id"] for c in body["citations"] if c["recommendation_id"].startswith("1.15.")
    }
    assert [c["excerpt"] for c in body["citations"]] == assessment["safety_netting"]
    assert body["guideline"]["index_version"]


def test_ready_with_retrieval(live_client: TestClient) -> None:
    reply = live_client.get("/readyz")
    assert reply.status_code == 200, reply.text
    assert reply.json()["checks"] == {"retrieval": "ok", "patient_store": "ok"}


def test_same_answer_every_time(live_client: TestClient) -> None:
    first = live_client.post("/assess/PT-105").json()
    for _ in range(3):
        assert live_client.post("/assess/PT-105").json() == first
