"""Clinical routes (patients, assessment, chat and its sessions): role-checked, audited, proxied.

Declared with the shared models so /docs documents the API; the handlers return the downstream
response as is, after writing the audit record of what was answered (gateway.audit.recorder).

What stores something is recorded first: a chat session is recorded before it is created and
deleted; a chat turn (stored by the chat service with its answer) is recorded as asked
(`phase: asked`, status 202) before it is forwarded, then as answered (`phase: answered`, the
status and outcome the caller gets). No first record, no turn: 503 before the chat service sees it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from typing import Any

import orjson
from fastapi import APIRouter, HTTPException, Request, Response

from gateway.audit.recorder import AuditRecorder
from gateway.chat_sessions import ChatSessionList, ChatSessionOut, ChatSessions
from gateway.deps import AssessmentService, Audit, ChatService, Redactor, Sessions
from gateway.proxy import DownstreamUnavailable
from gateway.security.authenticate import Clinical, ClinicalChat
from ng12_common.api_params import PatientId, SessionId
from ng12_common.models import (
    AssessmentResponse,
    AssessRecord,
    ChatHistory,
    ChatRequest,
    ChatResponse,
    ErrorResponse,
    Patient,
)

router = APIRouter()
_ERRORS: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorResponse},
    403: {"model": ErrorResponse},
    404: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
    429: {"model": ErrorResponse},
    503: {"model": ErrorResponse},
}
_SAFE_NAME = re.compile(r"^[A-Za-z0-9 _%/().+-]{1,40}$")


def record_summary(record: AssessRecord) -> dict[str, Any]:
    """What the audit keeps of a record: structure and numbers, never the free text."""
    return {
        "age": record.age,
        "sex": record.gender[:12].lower(),
        "smoking_given": bool(record.smoking_history),
        "symptoms": len(record.symptoms),
        "history": len(record.history),
        "exam_findings": len(record.exam_findings),
        "duration_days": record.symptom_duration_days,
        "test_names": sorted(n if _SAFE_NAME.match(n) else "(other)" for n in record.test_results)[:50],
    }


async def _audited(
    audit: AuditRecorder, request: Request, kind: Any, call: Awaitable[Response], summary: dict[str, Any]
) -> Response:
    """Run the downstream call and audit its outcome; a failed call is audited with its status."""
    raw = await request.body()
    try:
        reply = await call
    except DownstreamUnavailable:
        await audit.write(request, kind, 503, raw_input=raw, summary=summary)
        raise
    body = reply.body if isinstance(reply.body, bytes) else bytes(reply.body)
    await audit.write(request, kind, reply.status_code, raw_input=raw, summary=summary, reply=body)
    return reply


def _downstream_refused(reply: Response) -> HTTPException:
    """The chat service's own error answer, passed on as it is (status and ErrorResponse body)."""
    try:
        detail = orjson.loads(reply.body)["error"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        detail = {"code": "chat_error", "message": "The chat service refused; try again shortly."}
    return HTTPException(status_code=reply.status_code, detail=detail)


async def _own_session(sessions: ChatSessions, session_id: str, subject: str) -> None:
    if not await sessions.owned_by(session_id, subject):
        raise HTTPException(
            status_code=404,
            detail={
                "code": "session_not_found",
                "message": f"No chat session '{session_id}' of yours; "
                "create one with POST /api/v1/chat/sessions.",
            },
        )


@router.get("/patients", response_model=list[Patient], responses=_ERRORS, tags=["patients"])
async def list_patients(
    request: Request, user: Clinical, assessment: AssessmentService, audit: Audit
) -> Response:
    return await _audited(audit, request, "patient", assessment.forward("GET", "/patients"), {})


@router.get("/patients/{patient_id}", response_model=Patient, responses=_ERRORS, tags=["patients"])
async def get_patient(
    request: Request, patient_id: PatientId, user: Clinical, assessment: AssessmentService, audit: Audit
) -> Response:
    reply = assessment.forward("GET", f"/patients/{patient_id}")
    return await _audited(audit, request, "patient", reply, {"patient_id": patient_id})


@router.post(
    "/assess/{patient_id}", response_model=AssessmentResponse, responses=_ERRORS, tags=["assessment"]
)
async def assess_patient(
    request: Request, patient_id: PatientId, user: Clinical, assessment: AssessmentService, audit: Audit
) -> Response:
    reply = assessment.forward("POST", f"/assess/{patient_id}")
    return await _audited(audit, request, "assessment", reply, {"patient_id": patient_id})


@router.post("/assess", response_model=AssessmentResponse, responses=_ERRORS, tags=["assessment"])
async def assess_record(
    request: Request, record: AssessRecord, user: Clinical, assessment: AssessmentService, audit: Audit
) -> Response:
    reply = assessment.forward("POST", "/assess", json=record.model_dump(mode="json"))
    return await _audited(audit, request, "assessment", reply, record_summary(record))


@router.post(
    "/chat/sessions", status_code=201, response_model=ChatSessionOut, responses=_ERRORS, tags=["chat"]
)
async def create_chat_session(
    request: Request, user: ClinicalChat, sessions: Sessions, audit: Audit
) -> ChatSessionOut:
    created = sessions.new_session()
    async with audit.first(request, "session", 201, {"session_id": created.session_id, "action": "create"}):
        await sessions.store(created, user.subject)
    return created


@router.get("/chat/sessions", response_model=ChatSessionList, responses=_ERRORS, tags=["chat"])
async def list_chat_sessions(
    request: Request, user: Clinical, sessions: Sessions, audit: Audit
) -> ChatSessionList:
    async with audit.read(request, "session", {"action": "list"}) as facts:
        listed = await sessions.list(user.subject)
        facts["returned"] = len(listed.sessions)
    return listed


@router.post("/chat", response_model=ChatResponse, responses=_ERRORS, tags=["chat"])
async def chat(
    request: Request,
    body: ChatRequest,
    user: ClinicalChat,
    chat_service: ChatService,
    sessions: Sessions,
    audit: Audit,
    redactor: Redactor,
) -> Response:
    """One turn. The chat service stores it with its answer, so it is recorded as asked first."""
    summary = {"session_id": body.session_id, "message_chars": len(body.message), "top_k": body.top_k}
    async with audit.on_failure(request, "chat", summary):
        await _own_session(sessions, body.session_id, user.subject)
    await audit.write(
        request, "chat", 202, raw_input=await request.body(), summary={**summary, "phase": "asked"}
    )
    message = redactor.remembered(body.message)  # a repeated message: no analyser run, no thread hop
    if message is None:
        message = await asyncio.to_thread(redactor.redact, body.message)
    reply = chat_service.forward("POST", "/chat", json={**body.model_dump(mode="json"), "message": message})
    return await _audited(audit, request, "chat", reply, {**summary, "phase": "answered"})


@router.get("/chat/{session_id}/history", response_model=ChatHistory, responses=_ERRORS, tags=["chat"])
async def chat_history(
    request: Request,
    session_id: SessionId,
    user: Clinical,
    chat_service: ChatService,
    sessions: Sessions,
    audit: Audit,
) -> Response:
    summary = {"session_id": session_id, "action": "history"}
    async with audit.on_failure(request, "session", summary):
        await _own_session(sessions, session_id, user.subject)
    reply = chat_service.forward("GET", f"/chat/{session_id}/history")
    return await _audited(audit, request, "session", reply, summary)


@router.delete(
    "/chat/{session_id}", status_code=204, response_class=Response, responses=_ERRORS, tags=["chat"]
)
async def delete_chat(
    request: Request,
    session_id: SessionId,
    user: Clinical,
    chat_service: ChatService,
    sessions: Sessions,
    audit: Audit,
) -> Response:
    """Delete the session's history and ownership; recorded before anything is deleted."""
    summary = {"session_id": session_id, "action": "delete"}
    async with audit.on_failure(request, "session", summary):
        await _own_session(sessions, session_id, user.subject)
    async with audit.first(request, "session", 204, summary):
        reply = await chat_service.forward("DELETE", f"/chat/{session_id}")
        if reply.status_code not in (204, 404):  # the chat service refused: nothing was deleted
            raise _downstream_refused(reply)
        await sessions.forget(session_id, user.subject)
    return Response(status_code=204)
