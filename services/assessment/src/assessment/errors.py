"""Assessment's own failures and how they appear over HTTP (a JSON ErrorResponse)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ng12_common.http_app import error_response


class PatientNotFound(Exception):
    def __init__(self, patient_id: str) -> None:
        super().__init__(patient_id)
        self.patient_id = patient_id


class AssessmentUnavailable(Exception):
    """The engine cannot assess without the guideline knowledge (retrieval down or unusable index)."""

    def __init__(self, code: str, message: str, status: int = 503) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


async def _patient_not_found(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PatientNotFound)
    return error_response(
        404,
        "patient_not_found",
        f"No patient with id '{exc.patient_id}' in the patient store; GET /patients lists the known ids, "
        "or POST /assess with the patient record in the body.",
    )


async def _unavailable(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AssessmentUnavailable)
    return error_response(exc.status, exc.code, exc.message)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PatientNotFound, _patient_not_found)
    app.add_exception_handler(AssessmentUnavailable, _unavailable)
