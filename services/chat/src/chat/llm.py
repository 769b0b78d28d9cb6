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
is an exact substring of that recommendation's canonical text. `checked_sentences` keeps a
sentence of the prose only when every id it cites is among the selected recommendations, a
sentence stating a criterion (referral words, ages, timeframes, numbers) cites one, and every
number it states appears in a recommendation it cites. What is removed is counted
(`ng12_chat_llm_removed_total`, chat.metrics). The published answer is the kept prose followed
by the valid quotes, each tagged; with no valid quote or no kept sentence, the extractive
answer is used instead.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any, Protocol

from chat.answer import rec_tag, with_disclaimer
from chat.metrics import LLM_CALLS, LLM_REMOVED
from chat.selection import Selection
from ng12_common.logs import get_logger
from ng12_common.models import ChatTurn

log = get_logger("chat.llm")

PROMPT = (
    "You answer a GP's question using ONLY the NICE NG12 recommendations given. Do not add thresholds, "
    "ages, timeframes or advice that are not in them. If they do not answer the question, say so. "
    "End every sentence that states a criterion with the id of the recommendation it rests on in "
    'square brackets, e.g. [1.1.1]. Reply with JSON: {"answer": "<2-4 sentences>", "quotes": '
    '[{"recommendation_id": "<id>", "text": "<exact span copied from that recommendation>"}]}.'
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\[(\"'])")
_CITED = re.compile(r"\[(?:NG12\s+)?(\d+\.\d+\.\d+)(?:[^\]]*)\]")
_CRITERION_WORDS = re.compile(
    r"\b(refer\w*|aged?|over|under|older|younger|urgent\w*|within|weeks?|months?|days?|"
    r"offer\w*|consider\w*|pathway|test\w*|threshold|persistent|unexplained)\b",
    re.I,
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
_GUIDELINE_NAME = re.compile(r"\bNG\s?12\b", re.I)


class TextModel(Protocol):
    async def generate(self, prompt: str) -> str: ...


@dataclass
class Validated:
    answer: str  # the kept sentences, each citation tagged "[NG12 id, p.N]"
    quotes: list[tuple[str, str]]
    removed: int  # quotes removed
    removed_sentences: int = 0


def checked_sentences(answer: str, sel: Selection) -> tuple[list[str], int]:
    """The answer's sentences that are grounded in the selected recommendations (the rules are
    in the module docstring), with full citation tags; and how many were removed."""
    recs = {rec.id: rec for rec, _ in sel.recs}
    kept: list[str] = []
    removed = 0
    for sentence in _SENTENCE_END.split(answer.strip()):
        sentence = sentence.strip()
        if not sentence:
            continue
        cited = _CITED.findall(sentence)
        bare = _CITED.sub("", sentence)
        numbers = set(_NUMBER.findall(_GUIDELINE_NAME.sub("", bare)))
        grounded = all(rid in recs for rid in cited) and (
            bool(cited) or not (numbers or _CRITERION_WORDS.search(bare))
        )
        if grounded and numbers:
            cited_numbers = {n for rid in cited for n in _NUMBER.findall(recs[rid].text)}
            grounded = numbers <= cited_numbers
        if not grounded:
            removed += 1
            continue
        tags = " ".join(rec_tag(rid, recs[rid].page) for rid in dict.fromkeys(cited))
        text = " ".join(bare.split()).rstrip()
        if tags:
            end = text[-1] if text[-1:] in ".!?" else ""
            text = f"{text[: len(text) - len(end)].rstrip()} {tags}{end}"
        kept.append(text)
    return kept, removed


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
    sentences, removed_sentences = checked_sentences(data["answer"], sel)
    return Validated(
        answer=" ".join(sentences), quotes=kept, removed=removed, removed_sentences=removed_sentences
    )


async def _generate(model: TextModel, step: str, prompt: str) -> str | None:
    """The model's reply, or None after any failure (logged and counted: the caller falls back
    to the rules-only answer or rewrite)."""
    try:
        return await model.generate(prompt)
    except Exception as exc:  # noqa: BLE001 - any model failure means "fall back"
        log.warning("chat_llm_failed", step=step, error_type=type(exc).__name__)
        LLM_CALLS.labels(step=step, outcome="error").inc()
        return None


class AnswerWriter:
    def __init__(self, model: TextModel) -> None:
        self._model = model

    async def write(self, question: str, sel: Selection, extractive: str) -> str | None:
        """The grounded LLM answer, or None to keep the extractive one."""
        if not sel.recs:
            return None
        context = "\n\n".join(f"[{rec.id}, page {rec.page}]\n{rec.text}" for rec, _ in sel.recs)
        prompt = f"{PROMPT}\n\nRecommendations:\n{context}\n\nQuestion: {question}"
        raw = await _generate(self._model, "answer", prompt)
        if raw is None:
            return None
        checked = validate(raw, sel)
        if checked is None or not checked.quotes or not checked.answer:
            LLM_CALLS.labels(step="answer", outcome="invalid").inc()
            return None
        if checked.removed or checked.removed_sentences:
            log.info("chat_llm_output_removed", quotes=checked.removed, sentences=checked.removed_sentences)
        LLM_CALLS.labels(step="answer", outcome="used").inc()
        LLM_REMOVED.labels(kind="quote").inc(checked.removed)
        LLM_REMOVED.labels(kind="sentence").inc(checked.removed_sentences)
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

    async def rewrite(self, message: str, recent: list[ChatTurn]) -> str | None:
        turns = recent[-REWRITE_HISTORY_TURNS:]
        conversation = "\n".join(f"{t.role}: {t.content[:600]}" for t in turns)
        prompt = f"{REWRITE_PROMPT}\n\nConversation:\n{conversation}\n\nLast message: {message}"
        raw = await _generate(self._model, "rewrite", prompt)
        if raw is None:
            return None
        text = valid_rewrite(raw, message)
        if text is None:
            log.info("chat_rewrite_rejected")
        LLM_CALLS.labels(step="rewrite", outcome="invalid" if text is None else "used").inc()
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
