"""HTTP routes of the assessment service (the gateway exposes them under /api/v1)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from assessment.errors import PatientNotFound
from assessment.graph import AssessmentRunner
from assessment.metrics import ASSESSMENTS
from assessment.patients import PatientStore
from ng12_common.api_params import PatientId
from ng12_common.http_app import model_response
from ng12_common.models import AssessmentResponse, AssessRecord, ErrorResponse, Patient

router = APIRouter()
_ERRORS: dict[int | str, dict[str, object]] = {
    404: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
    503: {"model": ErrorResponse},
}


async def get_store(request: Request) -> PatientStore:
    store: PatientStore = request.app.state.patient_store
    return store


async def get_runner(request: Request) -> AssessmentRunner:
    runner: AssessmentRunner = request.app.state.runner
    return runner


Store = Annotated[PatientStore, Depends(get_store)]
Runner = Annotated[AssessmentRunner, Depends(get_runner)]


def _answer(response: AssessmentResponse) -> Response:
    assessment = response.assessment
    ASSESSMENTS.labels(top_action=assessment.top_action, complete=str(assessment.complete).lower()).inc()
    return model_response(response)


@router.get("/patients", response_model=list[Patient])
async def list_patients(store: Store) -> list[Patient]:
    return store.list()


@router.get("/patients/{patient_id}", response_model=Patient, responses=_ERRORS)
async def get_patient(patient_id: PatientId, store: Store) -> Patient:
    patient = store.get(patient_id)
    if patient is None:
        raise PatientNotFound(patient_id)
    return patient


@router.post("/assess/{patient_id}", response_model=AssessmentResponse, responses=_ERRORS)
async def assess_patient(patient_id: PatientId, runner: Runner) -> Response:
    return _answer(await runner.run(patient_id=patient_id))


@router.post("/assess", response_model=AssessmentResponse, responses=_ERRORS)
async def assess_record(record: AssessRecord, runner: Runner) -> Response:
    return _answer(await runner.run(record=record))
