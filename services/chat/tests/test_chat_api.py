"""The chat HTTP API on real Redis without retrieval: validation, history routes, outages."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from tests.support import free_port


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"session_id": "bad id!", "message": "hi"}, "session_id"),
        ({"session_id": "s" * 129, "message": "hi"}, "session_id"),
        ({"session_id": "ok", "message": ""}, "message"),
        ({"session_id": "ok", "message": "x" * 4001}, "message"),
        ({"session_id": "ok", "message": "hi", "top_k": 0}, "top_k"),
        ({"message": "hi"}, "session_id"),
    ],
)
def test_invalid_chat_request_is_422_naming_field(
    offline_client: TestClient, body: dict[str, object], field: str
) -> None:
    reply = offline_client.post("/chat", json=body)
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["code"] == "invalid_request"
    assert [f["field"] for f in error["fields"]] == [field]


def test_malformed_json_is_422(offline_client: TestClient) -> None:
    reply = offline_client.post(
        "/chat", content=b'{"session_id": ', headers={"content-type": "application/json"}
    )
    assert reply.status_code == 422 and reply.json()["error"]["code"] == "invalid_json"


def test_unknown_session_history_is_empty_and_delete_is_204(offline_client: TestClient) -> None:
    reply = offline_client.get("/chat/never-seen/history")
    assert reply.status_code == 200
    assert reply.json() == {"session_id": "never-seen", "turns": [], "topic": None}
    deleted = offline_client.delete("/chat/never-seen")
    assert deleted.status_code == 204 and deleted.content == b""


def test_bad_session_id_in_path_is_422(offline_client: TestClient) -> None:
    reply = offline_client.get("/chat/bad%20id/history")
    assert reply.status_code == 422 and reply.json()["error"]["fields"][0]["field"] == "session_id"


def test_retrieval_down_is_503_and_nothing_saved(offline_client: TestClient) -> None:
    start = time.perf_counter()
    reply = offline_client.post("/chat", json={"session_id": "s-down", "message": "What about haemoptysis?"})
    assert reply.status_code == 503
    assert reply.json()["error"]["code"] == "retrieval_unavailable"
    assert time.perf_counter() - start < 3.0
    assert offline_client.get("/chat/s-down/history").json()["turns"] == []


def test_redis_down_is_503_redis_unavailable(make_client: Callable[..., TestClient]) -> None:
    with make_client(redis_url_override=f"redis://127.0.0.1:{free_port()}/0") as client:
        start = time.perf_counter()
        for reply in (
            client.post("/chat", json={"session_id": "s", "message": "hi"}),
            client.get("/chat/s/history"),
            client.delete("/chat/s"),
        ):
            assert reply.status_code == 503, reply.text
            error = reply.json()["error"]
            assert error["code"] == "redis_unavailable"
            assert "Redis" in error["message"] and "try again" in error["message"]
        assert time.perf_counter() - start < 6.0
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert "unavailable" in ready.json()["checks"]["redis"]


def test_readiness_names_retrieval(offline_client: TestClient) -> None:
    reply = offline_client.get("/readyz")
    assert reply.status_code == 503
    checks = reply.json()["checks"]
    assert checks["redis"] == "ok" and "not serving" in checks["retrieval"]
    assert "redactor" in checks  # ready only once the personal-data redactor is built


def test_short_circuit_paths_do_not_touch_retrieval(offline_client: TestClient) -> None:
    """Retrieval is down here: smalltalk, meta, emergency and out-of-scope still answer."""
    for message, grounding in [
        ("hi", "smalltalk"),
        ("who are you?", "meta"),
        ("I want to kill myself", "emergency"),
        ("Life expectancy with stage 4 bowel cancer, roughly?", "out_of_scope"),
    ]:
        reply = offline_client.post("/chat", json={"session_id": "short", "message": message})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["grounding"] == grounding and body["citations"] == []
        assert body["answer"].endswith("not a diagnosis or a referral decision.")


def test_redactor_failure_is_503_and_nothing_stored(
    offline_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The redactor is fault-injected to fail: the turn is answered 503 naming it, and no text is
    stored unredacted (the history stays empty), never a 500."""
    from ng12_common.redaction import shared_redactor

    def broken(_text: str) -> str:
        raise RuntimeError("analyser crashed")

    monkeypatch.setattr(shared_redactor(), "redact", broken)
    reply = offline_client.post("/chat", json={"session_id": "s-redact", "message": "hi, NHS 943 476 5919"})
    assert reply.status_code == 503, reply.text
    error = reply.json()["error"]
    assert error["code"] == "redactor_unavailable" and "not stored" in error["message"]
    assert offline_client.get("/chat/s-redact/history").json()["turns"] == []
