"""The optional Gemini steps of chat, with a fake google-genai client at the client boundary
(real Redis, real retrieval): tier-B query rewriting, its validation and its fallbacks."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chat.llm import REWRITE_PROMPT, valid_rewrite

LUNG_REWRITE = "Lung cancer referral criteria for haemoptysis in people aged 45"


class FakeModels:
    """`client.aio.models` of google-genai: answers rewrite prompts with `rewrite(prompt)`, and
    answer prompts with text that is not JSON (so the extractive answer is kept)."""

    def __init__(self, rewrite: Callable[[str], str], delay: float = 0.0) -> None:
        self.rewrite = rewrite
        self.delay = delay
        self.prompts: list[str] = []

    async def generate_content(self, *, model: str, contents: str) -> Any:
        self.prompts.append(contents)
        await asyncio.sleep(self.delay)
        if contents.startswith(REWRITE_PROMPT):
            return SimpleNamespace(text=self.rewrite(contents))
        return SimpleNamespace(text="no JSON here")


def fake_genai(models: FakeModels) -> Any:
    return SimpleNamespace(aio=SimpleNamespace(models=models))


@pytest.fixture
def llm_chat(
    make_client: Callable[..., TestClient], retrieval_addr: str
) -> Iterator[Callable[..., TestClient]]:
    opened: list[TestClient] = []

    def _open(models: FakeModels, **overrides: object) -> TestClient:
        client = make_client(retrieval_addr=retrieval_addr, genai_client=fake_genai(models), **overrides)
        opened.append(client.__enter__())
        # traffic only once ready, as in a deployment: the first start embeds the scope classifier's
        # training set, and a search racing it on a busy 2-core machine can miss its deadline
        deadline = time.monotonic() + 120
        while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        return client

    yield _open
    for client in opened:
        client.__exit__(None, None, None)


def ask(client: TestClient, sid: str, message: str) -> dict[str, Any]:
    reply = client.post("/chat", json={"session_id": sid, "message": message})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def test_rewrite_validation_keeps_numbers_and_length() -> None:
    assert valid_rewrite(f'"{LUNG_REWRITE}"\n', "what if they're 45?") == LUNG_REWRITE
    assert valid_rewrite("lung cancer referral aged 30", "what if they're 45?") is None  # number changed
    assert valid_rewrite(" ".join(["word"] * 21), "and then?") is None  # over 20 words
    assert valid_rewrite("line one\nline two", "and then?") is None
    assert valid_rewrite("   ", "and then?") is None


def test_follow_up_without_topic_is_rewritten_by_the_model(llm_chat: Callable[..., TestClient]) -> None:
    models = FakeModels(lambda _: LUNG_REWRITE)
    client = llm_chat(models)
    sid = f"llm-{uuid.uuid4().hex[:8]}"
    assert ask(client, sid, "Hello")["grounding"] == "smalltalk"  # history, but no topic
    body = ask(client, sid, "What if they're 45, NHS 943 476 5919?")
    assert body["query"] == {"strategy": "rewrite", "text": LUNG_REWRITE}
    rewrite_prompt = next(p for p in models.prompts if p.startswith(REWRITE_PROMPT))
    assert "user: Hello" in rewrite_prompt and "Last message: What if they're 45" in rewrite_prompt
    assert all("943 476 5919" not in p for p in models.prompts)  # no personal data to the cloud model
    assert body["grounding"] in ("sufficient", "weak")
    assert any(c["recommendation_id"].startswith("1.1.") for c in body["citations"])
    assert "[NG12 1.1." in body["answer"]  # the model's non-JSON answer fell back to the extractive one


@pytest.mark.parametrize(
    ("models", "overrides"),
    [
        (FakeModels(lambda _: "lung cancer referral criteria aged 30"), {}),  # changes the age
        (FakeModels(lambda _: LUNG_REWRITE, delay=1.0), {"chat_llm_timeout_seconds": 0.2}),  # too slow
    ],
    ids=["number-changed", "timeout"],
)
def test_unusable_rewrite_falls_back_to_the_clinical_state(
    llm_chat: Callable[..., TestClient], models: FakeModels, overrides: dict[str, object]
) -> None:
    client = llm_chat(models, **overrides)
    sid = f"llm-{uuid.uuid4().hex[:8]}"
    ask(client, sid, "Hello")
    body = ask(client, sid, "What if they're 45?")
    assert body["query"]["strategy"] == "rewrite"
    assert body["query"]["text"].endswith("What if they're 45?")  # the state rewrite keeps the message
    assert "aged 30" not in body["query"]["text"]
