"""Optional LLM steps (Gemini on Vertex AI), switched on by settings; tests use a fake model.

Query rewrite (tier B): a follow-up without a session topic is rewritten by the model into one
standalone search query under 20 words, from the follow-up and up to 6 recent turns. The
rewrite is used only if it is one line of at most 20 words that keeps every number of the
follow-up (an age or a duration must never change on the way to retrieval); otherwise, and on
any model failure, the caller rewrites from the session's clinical state.

Grounded answer:

The model sees only the selected recommendations and must answer in JSON:
{"answer": "...", "quotes": [{"recommendation_id": "1.1.1", "text": "verbatim span"}]}.
`validate` keeps a quote only when its id is among the selected recommendations and its text
is an exact substring of that recommendation's canonical text; invalid quotes are removed and
counted. The published answer is the model's prose followed by the valid quotes, each tagged;
with no valid quote the extractive answer is used instead.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any, Protocol

from chat.answer import rec_tag, with_disclaimer
from chat.selection import Selection
from ng12_common.logs import get_logger
from ng12_common.models import ChatTurn

log = get_logger("chat.llm")

PROMPT = (
    "You answer a GP's question using ONLY the NICE NG12 recommendations given. Do not add thresholds, "
    "ages, timeframes or advice that are not in them. If they do not answer the question, say so. "
    'Reply with JSON: {"answer": "<2-4 sentences>", "quotes": [{"recommendation_id": "<id>", '
    '"text": "<exact span copied from that recommendation>"}]}.'
)


REWRITE_PROMPT = (
    "Rewrite the GP's last message into ONE standalone search query for the NICE NG12 guideline on "
    "suspected cancer, under 20 words. Keep medical terms, ages, durations and numbers exactly as "
    "written; take the cancer site or symptom the message refers to from the conversation. "
    "Reply with the query only."
)
REWRITE_MAX_WORDS = 20
REWRITE_HISTORY_TURNS = 6
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


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


def valid_rewrite(raw: str, message: str) -> str | None:
    """The model's rewrite if usable: one line, 1-20 words, every number of the message kept."""
    text = " ".join(raw.strip().strip('"').split())
    if not text or "\n" in raw.strip() or len(text.split()) > REWRITE_MAX_WORDS:
        return None
    if not set(_NUMBER.findall(message)) <= set(_NUMBER.findall(text)):
        return None
    return text


class QueryRewriter:
    """Tier-B query rewriting by the model, validated; None means "rewrite from state"."""

    def __init__(self, model: TextModel) -> None:
        self._model = model
        self.rejected = 0

    async def rewrite(self, message: str, recent: list[ChatTurn]) -> str | None:
        turns = recent[-REWRITE_HISTORY_TURNS:]
        conversation = "\n".join(f"{t.role}: {t.content[:600]}" for t in turns)
        try:
            raw = await self._model.generate(
                f"{REWRITE_PROMPT}\n\nConversation:\n{conversation}\n\nLast message: {message}"
            )
        except Exception as exc:  # noqa: BLE001 - any model failure falls back to the state rewrite
            log.warning("chat_rewrite_failed", error_type=type(exc).__name__)
            return None
        text = valid_rewrite(raw, message)
        if text is None:
            self.rejected += 1
            log.info("chat_rewrite_rejected")
        return text


class GeminiModel:
    """Gemini through a google-genai client (`client.aio.models.generate_content` only: the
    boundary tests replace with a fake), each call bounded by a timeout."""

    def __init__(self, client: Any, model: str, timeout_seconds: float) -> None:
        self._client = client
        self._model = model
        self.timeout = timeout_seconds

    @classmethod
    def on_vertex(cls, project: str, location: str, model: str, timeout_seconds: float) -> GeminiModel:
        """A google-genai client on Vertex AI (imported lazily: only when configured)."""
        from google import genai  # type: ignore[import-not-found,unused-ignore]

        return cls(genai.Client(vertexai=True, project=project, location=location), model, timeout_seconds)

    async def generate(self, prompt: str) -> str:
        call = self._client.aio.models.generate_content(model=self._model, contents=prompt)
        try:
            reply = await asyncio.wait_for(call, timeout=self.timeout)
        except TimeoutError:
            raise TimeoutError(f"Gemini did not answer within {self.timeout:g}s") from None
        return str(reply.text or "")
