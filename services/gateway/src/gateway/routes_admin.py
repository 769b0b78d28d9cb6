"""Admin routes (/api/v1/admin): ingestion jobs, index versions, API keys and the audit trail.

Admins only (the role check is on the router). Every call that reaches its handler is audited
(kind `admin`), reads included (reading the audit trail too). A change is recorded before it takes
effect (ingestions, index activation and rollback: `AuditRecorder.first`) or in the same
transaction (API keys: `AuditRecorder.write(within=...)`); no record, no change (503).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from pydantic import BaseModel, Field, ValidationError
from starlette.datastructures import UploadFile

from gateway.admin_models import (
    IndexVersionList,
    IndexVersionOut,
    IngestionRequest,
    IngestionUnchanged,
    JobAccepted,
    JobList,
    JobStatus,
)
from gateway.audit.records import AuditKind, AuditRecord
from gateway.audit.store import ActionRefused
from gateway.deps import ApiKeys, Audit, Jobs, Retrieval
from gateway.jobs import IngestionJobs, IngestionRunning, JobsUnavailable
from gateway.security.api_keys import ApiKeyInfo, CreatedApiKey
from gateway.security.authenticate import Admin, AdminIngestion, admin_guard
from gateway.security.principal import Role
from gateway.uploads import UploadRefused, check_pdf, safe_filename, store_pdf
from ng12_common.logs import get_logger
from ng12_common.models import ErrorDetail, ErrorResponse
from ng12_common.retrieval_client import NoActiveIndex, RetrievalClient, RetrievalNotFound

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

log = get_logger("gateway.routes_admin")

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


_INGESTION_BODY = {
    "requestBody": {
        "required": False,
        "content": {
            "application/json": {"schema": IngestionRequest.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["pdf"],
                    "properties": {
                        "pdf": {"type": "string", "format": "binary", "description": "the NG12 PDF"},
                        "activate": {"type": "string", "enum": ["true", "false"], "default": "true"},
                        "force": {"type": "string", "enum": ["true", "false"], "default": "false"},
                    },
                }
            },
        },
    }
}


def _running(exc: IngestionRunning) -> JSONResponse:
    from ng12_common.logs import current_request_id

    detail = ErrorDetail(
        code="ingestion_running", message=str(exc), request_id=current_request_id(), job_id=exc.job_id
    )
    return JSONResponse(status_code=409, content={"error": detail.model_dump(exclude_none=True)})


def _flag(form: Any, name: str, default: bool) -> bool:
    value = form.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    raise RequestValidationError(
        [{"type": "bool_parsing", "loc": ("body", name), "msg": "must be 'true' or 'false'", "input": value}]
    )


@router.post(
    "/ingestions",
    status_code=202,
    response_model=JobAccepted,
    openapi_extra=_INGESTION_BODY,
    responses={
        200: {
            "model": IngestionUnchanged,
            "description": "the PDF is the active version's own: nothing queued",
        },
        409: {"model": ErrorResponse, "description": "another ingestion is running (error.job_id)"},
        413: {"model": ErrorResponse},
        415: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
    },
)
async def start_ingestion(
    request: Request, user: AdminIngestion, jobs: Jobs, audit: Audit, retrieval: Retrieval
) -> Response:
    """Re-ingest: JSON `{pdf_path?, activate, force}` (a PDF the worker can read, default its
    NG12_PDF) or multipart `pdf` (an uploaded PDF, checked before anything is queued)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "multipart/form-data":
        return await _start_upload(request, jobs, audit, retrieval)
    if media not in ("", "application/json"):
        await _admin(audit, request, 415, action="ingestion", refused="unsupported_media_type")
        raise HTTPException(
            status_code=415,
            detail={
                "code": "unsupported_media_type",
                "message": "Send JSON (application/json) or a PDF upload (multipart/form-data, field pdf).",
            },
        )
    raw = await request.body()
    try:
        body = IngestionRequest.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e.get("loc", ()))} for e in exc.errors(include_url=False)]
        ) from None
    try:
        job_id = await jobs.claim()
    except IngestionRunning as exc:
        await _admin(audit, request, 409, action="ingestion", refused="ingestion_running", running=exc.job_id)
        return _running(exc)
    except JobsUnavailable:
        await _admin(audit, request, 503, action="ingestion", error="queue_unavailable", outcome="not_done")
        raise
    summary = {"action": "ingestion", "job_id": job_id, "activate": body.activate, "force": body.force}
    return await _queue(request, jobs, audit, summary, job_id, body.pdf_path, body.activate, body.force)


async def _queue(
    request: Request,
    jobs: IngestionJobs,
    audit: Any,
    summary: dict[str, Any],
    job_id: str,
    pdf_path: str | None,
    activate: bool,
    force: bool,
    filename: str | None = None,
) -> Response:
    """Queue the claimed job, audited before it is queued (a job that runs always has its record).
    If queueing fails, a second record supersedes the first (`AuditRecorder.first`) and the job
    is abandoned: no job record, no claim left behind."""
    try:
        async with audit.first(request, "admin", 202, summary):
            await jobs.enqueue(job_id, pdf_path, activate, force=force, filename=filename)
    except IngestionRunning as exc:  # the claim expired before the job was queued; another holds it
        await jobs.abandon(job_id)
        return _running(exc)
    except BaseException:
        await jobs.abandon(job_id)
        raise
    return JSONResponse(status_code=202, content=JobAccepted(job_id=job_id).model_dump())


def _store_failed(exc: OSError) -> HTTPException:
    reason = exc.strerror or type(exc).__name__
    return HTTPException(
        status_code=503,
        detail={
            "code": "upload_storage_unavailable",
            "message": f"The uploaded PDF could not be stored ({reason}), so nothing was queued. Check "
            "that UPLOAD_DIR (the uploads volume) is mounted, writable and has free space, then retry.",
        },
    )


async def _start_upload(
    request: Request, jobs: IngestionJobs, audit: Any, retrieval: RetrievalClient
) -> Response:
    settings = request.app.state.settings
    async with audit.on_failure(request, "admin", {"action": "ingestion_upload"}):
        running = await jobs.running()
    if running is not None:
        await _admin(
            audit, request, 409, action="ingestion_upload", refused="ingestion_running", running=running
        )
        return _running(IngestionRunning(running))
    form = await request.form(max_files=1, max_fields=4)
    try:
        upload = form.get("pdf")
        if not isinstance(upload, UploadFile):
            raise RequestValidationError(
                [{"type": "missing", "loc": ("body", "pdf"), "msg": "a PDF file is required", "input": None}]
            )
        activate = _flag(form, "activate", True)
        force = _flag(form, "force", False)
        filename = safe_filename(upload.filename)
        try:
            checked = await asyncio.to_thread(
                check_pdf, upload.file, upload.content_type, settings.max_upload_bytes
            )
        except UploadRefused as exc:
            await _admin(
                audit, request, exc.status, action="ingestion_upload", refused=exc.code, filename=filename
            )
            raise HTTPException(
                status_code=exc.status, detail={"code": exc.code, "message": exc.message}
            ) from None
        async with audit.on_failure(request, "admin", {"action": "ingestion_upload", "filename": filename}):
            try:
                active = await retrieval.active_index()
            except NoActiveIndex:
                active = None
        if active is not None and not force and active.guideline.source_sha256 == checked.sha256:
            unchanged = IngestionUnchanged(version=active.version, sha256=checked.sha256)
            await _admin(
                audit, request, 200, action="ingestion_upload", unchanged=active.version, filename=filename
            )
            return JSONResponse(status_code=200, content=unchanged.model_dump())
        try:
            job_id = await jobs.claim()
        except IngestionRunning as exc:
            await _admin(
                audit,
                request,
                409,
                action="ingestion_upload",
                refused="ingestion_running",
                running=exc.job_id,
            )
            return _running(exc)
        except JobsUnavailable:
            await _admin(
                audit,
                request,
                503,
                action="ingestion_upload",
                error="queue_unavailable",
                outcome="not_done",
                filename=filename,
            )
            raise
        try:
            stored = await asyncio.to_thread(store_pdf, upload.file, settings.upload_dir, job_id)
        except BaseException as exc:
            await jobs.abandon(job_id)
            if not isinstance(exc, OSError):
                raise
            log.error("upload_not_stored", job_id=job_id, error=repr(exc))
            await _admin(
                audit,
                request,
                503,
                action="ingestion_upload",
                error="upload_storage_unavailable",
                outcome="not_done",
                filename=filename,
            )
            raise _store_failed(exc) from None
        summary = {
            "action": "ingestion_upload",
            "job_id": job_id,
            "activate": activate,
            "force": force,
            "filename": filename,
            "sha256": checked.sha256,
            "size": checked.size,
        }
        queued = False
        try:
            reply = await _queue(
                request, jobs, audit, summary, job_id, str(stored), activate, force, filename
            )
            queued = reply.status_code == 202
            return reply
        finally:
            if not queued:  # nothing will read it
                stored.unlink(missing_ok=True)
    finally:
        await form.close()


@router.get("/ingestions", response_model=JobList)
async def list_ingestions(request: Request, user: Admin, jobs: Jobs, audit: Audit) -> JobList:
    """The last 50 ingestion jobs, newest first, with their state, stage and progress."""
    async with audit.read(request, "admin", {"action": "ingestions_list"}) as facts:
        listed = JobList(jobs=await jobs.recent())
        facts["returned"] = len(listed.jobs)
    return listed


@router.get("/ingestions/{job_id}", response_model=JobStatus, responses={404: {"model": ErrorResponse}})
async def ingestion_status(
    request: Request, job_id: JobId, user: Admin, jobs: Jobs, audit: Audit
) -> JobStatus:
    async with audit.read(request, "admin", {"action": "ingestion_status", "job_id": job_id}):
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
async def list_indexes(request: Request, user: Admin, retrieval: Retrieval, audit: Audit) -> IndexVersionList:
    async with audit.read(request, "admin", {"action": "indexes_list"}) as facts:
        listed = await retrieval.list_versions()
        facts["returned"] = len(listed.versions)
    return IndexVersionList(
        active_version=listed.active_version, versions=[_version_out(v) for v in listed.versions]
    )


@router.post(
    "/indexes/rollback",
    response_model=IndexVersionOut,
    responses={
        404: {"model": ErrorResponse},
        409: {"model": ErrorResponse, "description": "refused by retrieval: no previous version"},
    },
)
async def rollback_index(
    request: Request, user: Admin, retrieval: Retrieval, audit: Audit
) -> IndexVersionOut:
    """Serve the version that was active before the current one. Recorded before it is asked for
    (`from_version`: the one being replaced); the answer names the version now served."""
    async with audit.on_failure(request, "admin", {"action": "rollback"}):
        try:
            active = (await retrieval.active_index()).version
        except NoActiveIndex:
            active = ""
    async with audit.first(request, "admin", 200, {"action": "rollback", "from_version": active}):
        try:
            return _version_out(await retrieval.rollback())
        except NoActiveIndex as exc:  # no previous version, or it cannot be served here
            raise _change_refused(exc) from None


def _change_refused(exc: NoActiveIndex) -> HTTPException:
    """Retrieval's FAILED_PRECONDITION on an index change is a refusal (409, its reason), not an
    outage: the version is not ready (building, failed), there is no previous version, or it was
    built with another embedder."""
    return HTTPException(
        status_code=409,
        detail={"code": "index_change_refused", "message": f"Retrieval refused the change: {exc.detail}."},
    )


def _unknown_version(version: str) -> HTTPException:
    return HTTPException(
        status_code=404,
        detail={
            "code": "index_version_not_found",
            "message": f"No index version '{version}' (see GET /api/v1/admin/indexes).",
        },
    )


@router.post(
    "/indexes/{version}/activate",
    response_model=IndexVersionOut,
    responses={
        404: {"model": ErrorResponse},
        409: {"model": ErrorResponse, "description": "refused by retrieval: the version is not ready"},
    },
)
async def activate_index(
    request: Request, version: Version, user: Admin, retrieval: Retrieval, audit: Audit
) -> IndexVersionOut:
    """Serve `version`. An unknown version is refused (404) without asking retrieval; otherwise
    the activation is recorded before it is asked for."""
    async with audit.on_failure(request, "admin", {"action": "activate", "version": version}):
        listed = await retrieval.list_versions()
        if version not in {v.version for v in listed.versions}:
            raise _unknown_version(version)
    summary = {"action": "activate", "version": version, "from_version": listed.active_version}
    async with audit.first(request, "admin", 200, summary):
        try:
            return _version_out(await retrieval.activate(version))
        except RetrievalNotFound:  # removed since it was listed (retention of old versions)
            raise _unknown_version(version) from None
        except NoActiveIndex as exc:  # not ready (building, failed), or another embedder's
            raise _change_refused(exc) from None


@router.post("/api-keys", status_code=201, response_model=CreatedApiKey)
async def create_api_key(
    request: Request, body: ApiKeyRequest, user: Admin, keys: ApiKeys, audit: Audit
) -> CreatedApiKey:
    """Create a key; it and its audit record are committed in one transaction (both or neither)."""
    created = keys.new_key(body.name, body.roles, user.subject)
    await audit.write(
        request,
        "admin",
        201,
        summary={
            "action": "api_key_create",
            "key_id": created.key_id,
            "roles": [r.value for r in body.roles],
        },
        within=lambda conn: keys.insert(conn, created),
    )
    return created


@router.get("/api-keys", response_model=list[ApiKeyInfo])
async def list_api_keys(request: Request, user: Admin, keys: ApiKeys, audit: Audit) -> list[ApiKeyInfo]:
    async with audit.read(request, "admin", {"action": "api_keys_list"}) as facts:
        listed = await asyncio.to_thread(keys.list)
        facts["returned"] = len(listed)
    return listed


class _NoSuchKey(ActionRefused):
    pass


@router.delete("/api-keys/{key_id}", status_code=204, responses={404: {"model": ErrorResponse}})
async def revoke_api_key(request: Request, key_id: KeyId, user: Admin, keys: ApiKeys, audit: Audit) -> None:
    """Revoke a key; the revocation and its audit record are committed in one transaction."""

    def revoke(conn: Any) -> None:
        if not keys.revoke_on(conn, key_id):
            raise _NoSuchKey(key_id)

    try:
        await audit.write(
            request, "admin", 204, summary={"action": "api_key_revoke", "key_id": key_id}, within=revoke
        )
    except _NoSuchKey:
        await _admin(audit, request, 404, action="api_key_revoke", key_id=key_id, error="api_key_not_found")
        raise HTTPException(
            status_code=404,
            detail={"code": "api_key_not_found", "message": f"No active API key with id '{key_id}'."},
        ) from None
    finally:
        keys.forget_cached()


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
    summary = {"action": "audit_read", "since": since, "user": actor, "kind": kind, "limit": limit}
    async with audit.read(request, "admin", summary) as facts:
        records = await asyncio.to_thread(audit.store.query, since, actor, kind, limit)
        facts["returned"] = len(records)
    return AuditPage(records=records)


@router.get(
    "/audit/export",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
async def export_audit(request: Request, user: Admin, audit: Audit, since: Since = None) -> StreamingResponse:
    """The whole trail (or from `since`) as JSON lines with each record's hash. Recorded before the
    stream starts; with `since` only the records from then on are read (the `ts` index)."""
    await _admin(audit, request, 200, action="audit_export", since=since)
    store = audit.store

    async def lines() -> AsyncIterator[bytes]:
        iterator = store.iter_all(500, since)
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
