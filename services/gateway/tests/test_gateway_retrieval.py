"""The public API through the gateway, real assessment and chat apps, and the REAL retrieval server."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from services.gateway.tests.conftest import bearer

CLINICIAN = bearer("live-tester", "clinician")


def test_ready_when_everything_is_up(live_stack: TestClient) -> None:
    reply = live_stack.get("/readyz")
    assert reply.status_code == 200, reply.text
    assert reply.json()["status"] == "ready"
    assert set(reply.json()["checks"].values()) == {"ok"}


def test_assess_through_the_gateway(live_stack: TestClient) -> None:
    reply = live_stack.post("/api/v1/assess/PT-110", headers={"X-Request-ID": "rid-live-assess", **CLINICIAN})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["patient"]["name"] == "Bruce Wayne"
    assert body["assessment"]["top_action"] == "suspected_cancer_pathway_referral"
    matched = {m["recommendation_id"] for m in body["assessment"]["matched_recommendations"]}
    assert {"1.6.4", "1.6.6"} <= matched
    assert body["citations"] and body["guideline"]["index_version"]
    assert reply.headers["X-Request-ID"] == "rid-live-assess"


def test_chat_through_the_gateway(live_stack: TestClient) -> None:
    sid = live_stack.post("/api/v1/chat/sessions", headers=CLINICIAN).json()["session_id"]
    reply = live_stack.post(
        "/api/v1/chat", json={"session_id": sid, "message": "dysphagia referral"}, headers=CLINICIAN
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["grounding"] == "sufficient"
    assert re.search(r"\[NG12 1\.\d+\.\d+, p\.\d+\]", reply.json()["answer"])
    turns = live_stack.get(f"/api/v1/chat/{sid}/history", headers=CLINICIAN).json()["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    assert live_stack.delete(f"/api/v1/chat/{sid}", headers=CLINICIAN).status_code == 204


def test_search(live_stack: TestClient) -> None:
    reply = live_stack.post(
        "/api/v1/search", json={"query": "visible haematuria", "top_k": 5, "mode": "chat"}, headers=CLINICIAN
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["query"] == "visible haematuria" and body["index_version"]
    assert 1 <= len(body["passages"]) <= 5
    first = body["passages"][0]
    assert first["excerpt"] and first["page"] >= 1 and first["chunk_id"]
    assert isinstance(first["boosts"], list)
    assert any("haematuria" in p["excerpt"].lower() for p in body["passages"])


def test_admin_indexes(live_stack: TestClient, admin_headers: dict[str, str]) -> None:
    listed = live_stack.get("/api/v1/admin/indexes", headers=admin_headers)
    assert listed.status_code == 200, listed.text
    body = listed.json()
    active = [v for v in body["versions"] if v["version"] == body["active_version"]]
    assert len(active) == 1 and active[0]["status"] == "active"
    assert active[0]["guideline"]["code"] == "NG12" and sum(active[0]["chunk_counts"].values()) > 0

    unknown = live_stack.post("/api/v1/admin/indexes/no-such-version/activate", headers=admin_headers)
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["error"]["code"] == "index_version_not_found"  # refused without asking retrieval


def test_personal_data_is_redacted_before_chat_stores_it(live_stack: TestClient) -> None:
    sid = live_stack.post("/api/v1/chat/sessions", headers=CLINICIAN).json()["session_id"]
    message = "Mrs Jane Smith, NHS number 943 476 5919, SW1A 1AA: is her haemoptysis a 2WW?"
    reply = live_stack.post("/api/v1/chat", json={"session_id": sid, "message": message}, headers=CLINICIAN)
    assert reply.status_code == 200, reply.text
    stored = live_stack.get(f"/api/v1/chat/{sid}/history", headers=CLINICIAN).json()["turns"][0]["content"]
    assert stored == "<PERSON>, NHS number <UK_NHS>, <UK_POSTCODE>: is her haemoptysis a 2WW?"
    assert reply.json()["citations"]  # still answered from the guideline


def test_guideline_recommendation_with_its_printed_lines(live_stack: TestClient, ng12_pdf: Path) -> None:
    import pdfplumber

    reply = live_stack.get("/api/v1/guideline/recommendations/1.1.1", headers=CLINICIAN)
    assert reply.status_code == 200, reply.text
    rec = reply.json()
    assert (rec["id"], rec["page"], rec["action"]) == ("1.1.1", 9, "suspected_cancer_pathway_referral")
    assert rec["index_version"] and len(rec["highlights"]) == 3
    with pdfplumber.open(ng12_pdf) as pdf:  # the boxes hold exactly the recommendation's printed words
        printed = " ".join(
            pdf.pages[b["page_index"]]
            .crop((b["x0"] - 0.5, b["top"] - 0.5, b["x1"] + 0.5, b["bottom"] + 0.5))
            .extract_text()
            .replace("•", "")
            for b in rec["highlights"]
        )

    def words(text: str) -> list[str]:  # bullet glyphs aside ("•" printed, "-" in the clean text)
        return [w for w in text.split() if w not in {"-", "•"}]

    assert words(printed) == words(rec["text"])
    assert live_stack.get("/api/v1/guideline/recommendations/1.99.1", headers=CLINICIAN).status_code == 404
    assert live_stack.get("/api/v1/guideline/recommendations/abc", headers=CLINICIAN).status_code == 422
    assert live_stack.get("/api/v1/guideline/recommendations/1.1.1").status_code == 401
