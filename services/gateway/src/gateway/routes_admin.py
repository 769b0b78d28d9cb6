"""Admin routes (/api/v1/admin): ingestion jobs and index versions; guarded at the router."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from gateway.admin_auth import require_admin
from gateway.admin_models import IndexVersionList, IndexVersionOut, IngestionRequest, JobAccepted, JobStatus
from gateway.deps import Jobs, Retrieval
from ng12_common.models import ErrorResponse

router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(require_admin)],
    responses={401: {"model": ErrorResponse}, 403: {"model": ErrorResponse}, 503: {"model": ErrorResponse}},
)

JobId = Annotated[
    str, Path(pattern=r"^[A-Za-z0-9-]{1,64}$", description="Id returned by POST /admin/ingestions.")
]
Version = Annotated[str, Path(pattern=r"^[A-Za-z0-9._:-]{1,128}$", description="An index version.")]


def _version_out(message: Message) -> IndexVersionOut:
    data = MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    return IndexVersionOut.model_validate(data)


@router.post("/ingestions", status_code=202, response_model=JobAccepted)
async def start_ingestion(body: IngestionRequest, jobs: Jobs) -> JobAccepted:
    return JobAccepted(job_id=await jobs.enqueue(body.pdf_path, body.activate))


@router.get("/ingestions/{job_id}", response_model=JobStatus, responses={404: {"model": ErrorResponse}})
async def ingestion_status(job_id: JobId, jobs: Jobs) -> JobStatus:
    status = await jobs.status(job_id)
    if status is None:
        raise HTTPException(
            status_code=404,
            detail={
                "code": "job_not_found",
                "message": f"No ingestion job with id '{job_id}' (or it expired).",
            },
        )
    return status


@router.get("/indexes", response_model=IndexVersionList)
async def list_indexes(retrieval: Retrieval) -> IndexVersionList:
    listed = await retrieval.list_versions()
    return IndexVersionList(
        active_version=listed.active_version, versions=[_version_out(v) for v in listed.versions]
    )


@router.post("/indexes/rollback", response_model=IndexVersionOut, responses={404: {"model": ErrorResponse}})
async def rollback_index(retrieval: Retrieval) -> IndexVersionOut:
    return _version_out(await retrieval.rollback())


@router.post(
    "/indexes/{version}/activate", response_model=IndexVersionOut, responses={404: {"model": ErrorResponse}}
)
async def activate_index(version: Version, retrieval: Retrieval) -> IndexVersionOut:
    return _version_out(await retrieval.activate(version))
