"""Chat against a REAL retrieval server with the NG12 PDF indexed (repo-root fixture)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient


def test_chat_answers_from_ng12_and_keeps_history(
    make_client: Callable[..., TestClient], retrieval_addr: str
) -> None:
    with make_client(retrieval_addr=retrieval_addr) as client:
        assert client.get("/readyz").status_code == 200
        reply = client.post(
            "/chat", json={"session_id": "live-1", "message": "When should I refer for haemoptysis?"}
        )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["grounding"] == "sufficient"
        assert body["query"] == {"strategy": "direct", "text": "When should I refer for haemoptysis?"}
        assert 1 <= len(body["citations"]) <= 5
        for c in body["citations"]:
            assert c["excerpt"].strip() in body["answer"]  # quoted verbatim
            assert f"[NG12 p.{c['page']}" in body["answer"]
        assert "[NG12 p." in body["answer"] and "not a diagnosis" in body["answer"]
        assert body["guideline"]["index_version"]

        second = client.post("/chat", json={"session_id": "live-1", "message": "And dysphagia?", "top_k": 2})
        assert second.status_code == 200 and len(second.json()["citations"]) <= 2
        turns = client.get("/chat/live-1/history").json()["turns"]
        assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
        assert turns[0]["content"] == "When should I refer for haemoptysis?"
        assert turns[1]["citations"] == body["citations"] and turns[1]["grounding"] == "sufficient"

        assert client.delete("/chat/live-1").status_code == 204
        assert client.get("/chat/live-1/history").json()["turns"] == []
