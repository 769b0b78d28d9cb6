"""Admin routes (/api/v1/admin): ingestion jobs, index versions, API keys and the audit trail.

Admins only (the role check is on the router). Every call is audited (kind `admin`); reading the
audit trail is audited too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.responses import StreamingResponse
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from pydantic import BaseModel, Field

from gateway.admin_models import IndexVersionList, IndexVersionOut, IngestionRequest, JobAccepted, JobStatus
from gateway.audit.records import AuditKind, AuditRecord
from gateway.deps import ApiKeys, Audit, Jobs, Retrieval
from gateway.security.api_keys import ApiKeyInfo, CreatedApiKey
from gateway.security.authenticate import Admin, AdminIngestion, admin_guard
from gateway.security.principal import Role
from ng12_common.models import ErrorResponse

router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(admin_guard)],
    responses={
        401: {"model": ErrorResponse},
        403: {"model": ErrorResponse},
        429: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
)

JobId = Annotated[
    str, Path(pattern=r"^[A-Za-z0-9-]{1,64}$", description="Id returned by POST /admin/ingestions.")
]
Version = Annotated[str, Path(pattern=r"^[A-Za-z0-9._:-]{1,128}$", description="An index version.")]
KeyId = Annotated[str, Path(pattern=r"^[0-9a-f]{16}$", description="Id returned by POST /admin/api-keys.")]


class ApiKeyRequest(BaseModel):
    name: str = Field(min_length=1, max_length=200, description="Who or what uses the key.")
    roles: list[Role] = Field(min_length=1, max_length=3)


class AuditPage(BaseModel):
    records: list[AuditRecord]


def _version_out(message: Message) -> IndexVersionOut:
    data = MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    return IndexVersionOut.model_validate(data)


async def _admin(audit: Any, request: Request, status: int, **summary: Any) -> None:
    await audit.write(request, "admin", status, summary=summary)


@router.post("/ingestions", status_code=202, response_model=JobAccepted)
async def start_ingestion(
    request: Request, body: IngestionRequest, user: AdminIngestion, jobs: Jobs, audit: Audit
) -> JobAccepted:
    accepted = JobAccepted(job_id=await jobs.enqueue(body.pdf_path, body.activate))
    await _admin(audit, request, 202, action="ingestion", job_id=accepted.job_id, activate=body.activate)
    return accepted


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
async def rollback_index(
    request: Request, user: Admin, retrieval: Retrieval, audit: Audit
) -> IndexVersionOut:
    out = _version_out(await retrieval.rollback())
    await _admin(audit, request, 200, action="rollback", version=out.version)
    return out


@router.post(
    "/indexes/{version}/activate", response_model=IndexVersionOut, responses={404: {"model": ErrorResponse}}
)
async def activate_index(
    request: Request, version: Version, user: Admin, retrieval: Retrieval, audit: Audit
) -> IndexVersionOut:
    out = _version_out(await retrieval.activate(version))
    await _admin(audit, request, 200, action="activate", version=version)
    return out


@router.post("/api-keys", status_code=201, response_model=CreatedApiKey)
async def create_api_key(
    request: Request, body: ApiKeyRequest, user: Admin, keys: ApiKeys, audit: Audit
) -> CreatedApiKey:
    created = await asyncio.to_thread(keys.create, body.name, body.roles, user.subject)
    await _admin(
        audit,
        request,
        201,
        action="api_key_create",
        key_id=created.key_id,
        roles=[r.value for r in body.roles],
    )
    return created


@router.get("/api-keys", response_model=list[ApiKeyInfo])
async def list_api_keys(keys: ApiKeys) -> list[ApiKeyInfo]:
    return await asyncio.to_thread(keys.list)


@router.delete("/api-keys/{key_id}", status_code=204, responses={404: {"model": ErrorResponse}})
async def revoke_api_key(request: Request, key_id: KeyId, user: Admin, keys: ApiKeys, audit: Audit) -> None:
    if not await asyncio.to_thread(keys.revoke, key_id):
        raise HTTPException(
            status_code=404,
            detail={"code": "api_key_not_found", "message": f"No active API key with id '{key_id}'."},
        )
    await _admin(audit, request, 204, action="api_key_revoke", key_id=key_id)


Since = Annotated[
    str | None,
    Query(max_length=40, pattern=r"^\d{4}-\d{2}-\d{2}[0-9T:.+-]*$", description="ISO date or time (UTC)"),
]
UserFilter = Annotated[str | None, Query(max_length=256, description="actor, e.g. local:clinician")]


@router.get("/audit", response_model=AuditPage)
async def read_audit(
    request: Request,
    user: Admin,
    audit: Audit,
    since: Since = None,
    actor: Annotated[UserFilter, Query(alias="user")] = None,
    kind: AuditKind | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> AuditPage:
    records = await asyncio.to_thread(audit.store.query, since, actor, kind, limit)
    await _admin(audit, request, 200, action="audit_read", returned=len(records))
    return AuditPage(records=records)


@router.get(
    "/audit/export",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
async def export_audit(request: Request, user: Admin, audit: Audit, since: Since = None) -> StreamingResponse:
    await _admin(audit, request, 200, action="audit_export")
    store = audit.store

    async def lines() -> AsyncIterator[bytes]:
        iterator = store.iter_all()
        while True:
            batch = await asyncio.to_thread(
                lambda: [row for _, row in zip(range(500), iterator, strict=False)]
            )
            if not batch:
                return
            for _, raw, _, digest in batch:
                record = orjson.loads(raw)
                if since and record.get("ts", "") < since:
                    continue
                yield orjson.dumps({**record, "hash": digest}, option=orjson.OPT_SORT_KEYS) + b"\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")
