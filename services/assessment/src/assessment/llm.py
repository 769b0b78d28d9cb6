"""Optional Gemini (Vertex AI, google-genai SDK) for the two LLM steps of the workflow.

- `fetch_patient_id`: the model is given a `get_patient_data` tool and asked to fetch the patient;
  the tool call it makes (function calling) names the id the store is then asked for.
- `narrate`: the model writes the narrative `reasoning` for what the engine decided, as JSON
  validated against `LlmNarrative`. It never decides: recommendation ids it cites that the engine
  did not match are reported by the caller under `needs_review`.

Only `client.models.generate_content` is used (the boundary tests replace with a fake). A timeout,
an exception or invalid output raises `LlmFailed`; the caller falls back to the rules-only path.
The client is created only when settings enable it (GEMINI_ENABLED and VERTEX_PROJECT).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from pydantic import BaseModel, Field, ValidationError

from assessment.settings import AssessmentSettings

PATIENT_TOOL = "get_patient_data"
SYSTEM_NARRATIVE = (
    "You write the reasoning section of a clinical decision support answer for a UK GP, based ONLY "
    "on the NICE NG12 assessment given to you. The deterministic engine has already decided which "
    "recommendations are met; do not add, remove or re-rank any. Explain in plain clinical English "
    "(at most 150 words) which criteria the patient meets, quoting NG12 wording, and what is missing "
    "for the near misses. Cite only recommendation ids present in the input. Return JSON only."
)


class LlmFailed(Exception):
    """The LLM step did not produce a usable answer (timeout, error or invalid output)."""


class LlmNarrative(BaseModel):
    """The structured output the model must return."""

    reasoning: str = Field(min_length=1, max_length=4000)
    cited_recommendation_ids: list[str] = Field(default_factory=list, max_length=40)


class _Models(Protocol):
    def generate_content(self, *, model: str, contents: Any, config: Any = None) -> Any: ...


class GenaiClient(Protocol):
    """The part of `google.genai.Client` used here."""

    @property
    def models(self) -> _Models: ...


def make_client(settings: AssessmentSettings) -> GenaiClient | None:
    """A Vertex AI genai client when enabled by settings, else None (rules only)."""
    if not (settings.gemini_enabled and settings.vertex_project):
        return None
    from google import genai  # imported only when enabled: the rules-only path needs no cloud SDK

    client: GenaiClient = genai.Client(
        vertexai=True, project=settings.vertex_project, location=settings.vertex_location
    )
    return client


class GeminiSteps:
    """The LLM steps, each bounded by a timeout."""

    def __init__(self, client: GenaiClient, model: str, timeout_seconds: float) -> None:
        self._client = client
        self.model = model
        self.timeout = timeout_seconds

    async def _generate(self, contents: Any, config: dict[str, Any]) -> Any:
        call = asyncio.to_thread(
            self._client.models.generate_content, model=self.model, contents=contents, config=config
        )
        try:
            return await asyncio.wait_for(call, timeout=self.timeout)
        except TimeoutError:
            raise LlmFailed(f"Gemini did not answer within {self.timeout:g}s") from None
        except Exception as exc:  # noqa: BLE001 - the SDK raises many types; all mean "fall back"
            raise LlmFailed(f"Gemini call failed: {type(exc).__name__}: {exc}") from None

    async def fetch_patient_id(self, patient_id: str) -> str:
        """Ask the model to call `get_patient_data`; return the id it asked for."""
        config: dict[str, Any] = {
            "temperature": 0,
            "tools": [
                {
                    "function_declarations": [
                        {
                            "name": PATIENT_TOOL,
                            "description": "Fetch a patient's record (age, sex, smoking, symptoms) by id.",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {"patient_id": {"type": "STRING"}},
                                "required": ["patient_id"],
                            },
                        }
                    ]
                }
            ],
            "tool_config": {
                "function_calling_config": {"mode": "ANY", "allowed_function_names": [PATIENT_TOOL]}
            },
            "automatic_function_calling": {"disable": True},
        }
        prompt = f"Fetch the record of patient {patient_id} so it can be assessed against NICE NG12."
        response = await self._generate(prompt, config)
        for call in getattr(response, "function_calls", None) or []:
            args = dict(getattr(call, "args", None) or {})
            if getattr(call, "name", "") == PATIENT_TOOL and isinstance(args.get("patient_id"), str):
                return str(args["patient_id"])
        raise LlmFailed(f"Gemini did not call {PATIENT_TOOL}")

    async def narrate(self, payload: dict[str, Any]) -> LlmNarrative:
        """The narrative for an engine outcome (payload: patient, matched, near misses...)."""
        config: dict[str, Any] = {
            "temperature": 0,
            "system_instruction": SYSTEM_NARRATIVE,
            "response_mime_type": "application/json",
            "response_schema": LlmNarrative,
        }
        response = await self._generate(json.dumps(payload, ensure_ascii=False, sort_keys=True), config)
        text = getattr(response, "text", None)
        if not isinstance(text, str) or not text.strip():
            raise LlmFailed("Gemini returned no text")
        try:
            return LlmNarrative.model_validate_json(text)
        except ValidationError as exc:
            raise LlmFailed(
                f"Gemini output does not match the schema: {exc.error_count()} error(s)"
            ) from None
