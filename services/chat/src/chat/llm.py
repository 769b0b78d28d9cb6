"""Optional grounded LLM answer (Gemini on Vertex AI), switched on by settings, never in tests.

The model sees only the selected recommendations and must answer in JSON:
{"answer": "...", "quotes": [{"recommendation_id": "1.1.1", "text": "verbatim span"}]}.
`validate` keeps a quote only when its id is among the selected recommendations and its text
is an exact substring of that recommendation's canonical text; invalid quotes are removed and
counted. The published answer is the model's prose followed by the valid quotes, each tagged;
with no valid quote the extractive answer is used instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from chat.answer import rec_tag, with_disclaimer
from chat.selection import Selection
from ng12_common.logs import get_logger

log = get_logger("chat.llm")

PROMPT = (
    "You answer a GP's question using ONLY the NICE NG12 recommendations given. Do not add thresholds, "
    "ages, timeframes or advice that are not in them. If they do not answer the question, say so. "
    'Reply with JSON: {"answer": "<2-4 sentences>", "quotes": [{"recommendation_id": "<id>", '
    '"text": "<exact span copied from that recommendation>"}]}.'
)


class TextModel(Protocol):
    async def generate(self, prompt: str) -> str: ...


@dataclass
class Validated:
    answer: str
    quotes: list[tuple[str, str]]
    removed: int


def validate(raw: str, sel: Selection) -> Validated | None:
    try:
        data: Any = json.loads(raw.strip().removeprefix("```json").removesuffix("```"))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("answer"), str):
        return None
    texts = {rec.id: rec.text for rec, _ in sel.recs}
    kept: list[tuple[str, str]] = []
    removed = 0
    for q in data.get("quotes") or []:
        rid, text = (q.get("recommendation_id"), q.get("text")) if isinstance(q, dict) else (None, None)
        if isinstance(rid, str) and isinstance(text, str) and text.strip() and text in texts.get(rid, ""):
            kept.append((rid, text))
        else:
            removed += 1
    return Validated(answer=data["answer"].strip(), quotes=kept, removed=removed)


class AnswerWriter:
    def __init__(self, model: TextModel) -> None:
        self._model = model
        self.removed_quotes = 0

    async def write(self, question: str, sel: Selection, extractive: str) -> str | None:
        """The grounded LLM answer, or None to keep the extractive one."""
        if not sel.recs:
            return None
        context = "\n\n".join(f"[{rec.id}, page {rec.page}]\n{rec.text}" for rec, _ in sel.recs)
        try:
            raw = await self._model.generate(
                f"{PROMPT}\n\nRecommendations:\n{context}\n\nQuestion: {question}"
            )
        except Exception as exc:  # noqa: BLE001 - any model failure falls back to the extractive answer
            log.warning("chat_llm_failed", error_type=type(exc).__name__)
            return None
        checked = validate(raw, sel)
        if checked is None or not checked.quotes:
            return None
        self.removed_quotes += checked.removed
        if checked.removed:
            log.info("chat_llm_quotes_removed", removed=checked.removed)
        pages = {rec.id: rec.page for rec, _ in sel.recs}
        quotes = [f'> "{text}" {rec_tag(rid, pages[rid])}' for rid, text in checked.quotes]
        return with_disclaimer("\n".join([checked.answer, "", *quotes]))


class GeminiModel:
    """google-genai client on Vertex AI (imported lazily: only when configured)."""

    def __init__(self, project: str, location: str, model: str) -> None:
        from google import genai  # type: ignore[import-not-found,unused-ignore]

        self._client: Any = genai.Client(vertexai=True, project=project, location=location)
        self._model = model

    async def generate(self, prompt: str) -> str:
        reply = await self._client.aio.models.generate_content(model=self._model, contents=prompt)
        return str(reply.text or "")
