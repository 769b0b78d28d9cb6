"""HTTP routes of the chat service (the gateway exposes them under /api/v1)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from chat.graph import ChatRunner
from chat.history import HistoryStore
from chat.metrics import ANSWERS
from ng12_common.api_params import SessionId
from ng12_common.http_app import model_response
from ng12_common.models import ChatHistory, ChatRequest, ChatResponse, ErrorResponse

router = APIRouter()
_ERRORS: dict[int | str, dict[str, object]] = {422: {"model": ErrorResponse}, 503: {"model": ErrorResponse}}


async def get_runner(request: Request) -> ChatRunner:
    runner: ChatRunner = request.app.state.runner
    return runner


async def get_history(request: Request) -> HistoryStore:
    store: HistoryStore = request.app.state.history
    return store


Runner = Annotated[ChatRunner, Depends(get_runner)]
History = Annotated[HistoryStore, Depends(get_history)]


@router.post("/chat", response_model=ChatResponse, responses=_ERRORS)
async def chat(body: ChatRequest, runner: Runner) -> Response:
    answer = await runner.run(body)
    ANSWERS.labels(grounding=answer.grounding).inc()
    return model_response(answer)


@router.get("/chat/{session_id}/history", response_model=ChatHistory, responses=_ERRORS)
async def chat_history(session_id: SessionId, history: History) -> ChatHistory:
    meta = await history.get_meta(session_id)
    return ChatHistory(session_id=session_id, turns=await history.get(session_id), topic=meta.topic)


@router.delete("/chat/{session_id}", status_code=204, response_class=Response, responses=_ERRORS)
async def delete_chat(session_id: SessionId, history: History) -> Response:
    await history.delete(session_id)
    return Response(status_code=204)
