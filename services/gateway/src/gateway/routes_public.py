"""Public patient, assessment and chat routes: validated here, then proxied to the services.

Declared with the shared models so /docs documents the API; the handlers return the
downstream response as is.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from gateway.deps import AssessmentService, ChatService
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
    404: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
    503: {"model": ErrorResponse},
}


@router.get("/patients", response_model=list[Patient], responses=_ERRORS, tags=["patients"])
async def list_patients(assessment: AssessmentService) -> Response:
    return await assessment.forward("GET", "/patients")


@router.get("/patients/{patient_id}", response_model=Patient, responses=_ERRORS, tags=["patients"])
async def get_patient(patient_id: PatientId, assessment: AssessmentService) -> Response:
    return await assessment.forward("GET", f"/patients/{patient_id}")


@router.post(
    "/assess/{patient_id}", response_model=AssessmentResponse, responses=_ERRORS, tags=["assessment"]
)
async def assess_patient(patient_id: PatientId, assessment: AssessmentService) -> Response:
    return await assessment.forward("POST", f"/assess/{patient_id}")


@router.post("/assess", response_model=AssessmentResponse, responses=_ERRORS, tags=["assessment"])
async def assess_record(record: AssessRecord, assessment: AssessmentService) -> Response:
    return await assessment.forward("POST", "/assess", json=record.model_dump(mode="json"))


@router.post("/chat", response_model=ChatResponse, responses=_ERRORS, tags=["chat"])
async def chat(body: ChatRequest, chat_service: ChatService) -> Response:
    return await chat_service.forward("POST", "/chat", json=body.model_dump(mode="json"))


@router.get("/chat/{session_id}/history", response_model=ChatHistory, responses=_ERRORS, tags=["chat"])
async def chat_history(session_id: SessionId, chat_service: ChatService) -> Response:
    return await chat_service.forward("GET", f"/chat/{session_id}/history")


@router.delete(
    "/chat/{session_id}", status_code=204, response_class=Response, responses=_ERRORS, tags=["chat"]
)
async def delete_chat(session_id: SessionId, chat_service: ChatService) -> Response:
    return await chat_service.forward("DELETE", f"/chat/{session_id}")
