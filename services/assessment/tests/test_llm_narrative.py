"""The optional Gemini steps, with a fake standing in for the genai client's `models.generate_content`.

No network: the fake records the calls and returns canned responses shaped like the SDK's
(`.text` for JSON output, `.function_calls` for tool calls).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from assessment.llm import PATIENT_TOOL, LlmNarrative

from .conftest import make_client_with


class FakeModels:
    def __init__(self, narrate: Callable[[dict[str, Any]], Any], tool_id: Callable[[str], Any]) -> None:
        self.calls: list[dict[str, Any]] = []
        self._narrate = narrate
        self._tool_id = tool_id

    def generate_content(self, *, model: str, contents: Any, config: Any = None) -> Any:
        self.calls.append({"model": model, "contents": contents, "config": config})
        if config and config.get("tools"):
            asked = str(contents).split("patient ")[1].split(" ")[0]
            return self._tool_id(asked)
        return self._narrate(json.loads(contents))


class FakeGenai:
    def __init__(self, models: FakeModels) -> None:
        self.models = models


def _tool_call(patient_id: str) -> Any:
    return SimpleNamespace(
        function_calls=[SimpleNamespace(name=PATIENT_TOOL, args={"patient_id": patient_id})]
    )


def _narrative(ids: list[str]) -> Callable[[dict[str, Any]], Any]:
    def answer(payload: dict[str, Any]) -> Any:
        text = LlmNarrative(
            reasoning=f"The patient meets {', '.join(m['id'] for m in payload['matched_recommendations'])}.",
            cited_recommendation_ids=[m["id"] for m in payload["matched_recommendations"]] + ids,
        ).model_dump_json()
        return SimpleNamespace(text=text)

    return answer


@pytest.fixture
def llm_app(retrieval_addr: str) -> Iterator[Callable[[FakeModels], TestClient]]:
    clients: list[TestClient] = []

    def make(models: FakeModels) -> TestClient:
        client = make_client_with(retrieval_addr, FakeGenai(models))
        clients.append(client.__enter__())
        return client

    yield make
    for c in clients:
        c.__exit__(None, None, None)


def test_llm_writes_reasoning_and_uses_the_patient_tool(llm_app: Callable[[FakeModels], TestClient]) -> None:
    models = FakeModels(_narrative([]), _tool_call)
    body = llm_app(models).post("/assess/PT-104").json()
    assessment = body["assessment"]
    assert assessment["engine"] == "rules+llm"
    assert assessment["reasoning"].startswith("The patient meets 1.2.1")
    assert assessment["needs_review"] == []
    tool_calls = [c for c in models.calls if c["config"].get("tools")]
    assert len(tool_calls) == 1 and "PT-104" in tool_calls[0]["contents"]
    schema_calls = [c for c in models.calls if c["config"].get("response_schema") is LlmNarrative]
    assert len(schema_calls) == 1


def test_llm_claim_the_engine_did_not_make_goes_to_review(
    llm_app: Callable[[FakeModels], TestClient],
) -> None:
    models = FakeModels(_narrative(["1.2.3"]), _tool_call)
    before = _llm_calls("narrative", "invalid")
    assessment = llm_app(models).post("/assess/PT-104").json()["assessment"]
    matched = [m["recommendation_id"] for m in assessment["matched_recommendations"]]
    assert "1.2.3" not in matched
    flagged = [r for r in assessment["needs_review"] if r["kind"] == "llm_unsupported_claim"]
    assert [r["recommendation_id"] for r in flagged] == ["1.2.3"]
    # grounded or silent: the narrative that claims 1.2.3 is not shown; the rules-only one is
    assert assessment["engine"] == "rules" and "1.2.3" not in assessment["reasoning"]
    assert not assessment["reasoning"].startswith("The patient meets 1.2.1")
    assert _llm_calls("narrative", "invalid") == before + 1


def _llm_calls(step: str, outcome: str) -> float:
    from prometheus_client import REGISTRY

    labels = {"step": step, "outcome": outcome}
    return REGISTRY.get_sample_value("ng12_assessment_llm_calls_total", labels) or 0.0


@pytest.mark.parametrize(
    "bad",
    [
        lambda _p: SimpleNamespace(text="not json"),
        lambda _p: SimpleNamespace(text=json.dumps({"cited_recommendation_ids": []})),
        lambda _p: SimpleNamespace(text=None),
        lambda _p: (_ for _ in ()).throw(RuntimeError("quota exceeded")),
        lambda _p: time.sleep(2) or SimpleNamespace(text="{}"),  # past the 0.5 s timeout
    ],
    ids=["not-json", "schema", "empty", "error", "timeout"],
)
def test_llm_failure_falls_back_to_rules(llm_app: Callable[[FakeModels], TestClient], bad: Any) -> None:
    rules = llm_app(FakeModels(_narrative([]), lambda _id: SimpleNamespace(function_calls=[])))
    reply = rules.post("/assess/PT-104")
    assert reply.status_code == 200
    broken = llm_app(FakeModels(bad, _tool_call)).post("/assess/PT-104")
    assert broken.status_code == 200, broken.text
    assessment = broken.json()["assessment"]
    assert assessment["engine"] == "rules"
    assert assessment["reasoning"].startswith("Assessed against NICE NG12")
    assert [m["recommendation_id"] for m in assessment["matched_recommendations"]] == ["1.2.1", "1.2.7"]


def test_tool_asking_for_another_patient_falls_back_to_direct_lookup(
    llm_app: Callable[[FakeModels], TestClient],
) -> None:
    models = FakeModels(_narrative([]), lambda _id: _tool_call("PT-101"))
    body = llm_app(models).post("/assess/PT-104").json()
    assert body["patient"]["patient_id"] == "PT-104"


def test_what_gemini_sees_is_redacted() -> None:
    from assessment.narrative import llm_payload
    from ng12_common.models import AssessRecord

    record = AssessRecord(
        patient_id="PT-1",
        name="Jane Smith",
        age=63,
        gender="Female",
        smoking_history="Ex-Smoker",
        symptoms=["haemoptysis x2 this week", "NHS 943 476 5919, call 020 7946 0958"],
        history=["seen by Dr Patel for COPD"],
        test_results={"Hb": "118 g/L", "CXR": "reported by Dr Patel, call 020 7946 0958", "PSA": 2.1},
    )
    matched = SimpleNamespace(
        recommendation_id="1.1.1", action="a", criteria_met=["haemoptysis: 'seen by Dr Patel'"], text="t"
    )
    outcome = SimpleNamespace(
        matched=[matched],
        near_misses=[],
        safety_netting=[],
        unrecognised=["ring 020 7946 0958 about it"],
        top_action="x",
    )
    payload = llm_payload(record, outcome)  # type: ignore[arg-type]
    patient = payload["patient"]
    assert "name" not in patient and "patient_id" not in patient
    assert patient["symptoms"] == ["haemoptysis x2 this week", "NHS <UK_NHS>, call <PHONE_NUMBER>"]
    assert patient["history"] == ["seen by <PERSON> for COPD"]
    # every free-text field: a test result's worded value too; numbers stay as they are
    assert patient["test_results"] == {
        "Hb": "118 g/L",
        "CXR": "reported by <PERSON>, call <PHONE_NUMBER>",
        "PSA": 2.1,
    }
    assert patient["age"] == 63
    # the decision's lines that quote the record are redacted like the record
    assert payload["matched_recommendations"][0]["criteria_met"] == ["haemoptysis: 'seen by <PERSON>'"]
    assert payload["unrecognised"] == ["ring <PHONE_NUMBER> about it"]
