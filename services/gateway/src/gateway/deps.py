"""FastAPI dependencies: the per-app clients created in the lifespan (see gateway.app)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gateway.audit.recorder import AuditRecorder
from gateway.chat_sessions import ChatSessions
from gateway.jobs import IngestionJobs
from gateway.proxy import Downstream
from gateway.security.api_keys import ApiKeyStore
from ng12_common.redaction import Redactor as RedactorT
from ng12_common.retrieval_client import RetrievalClient


async def get_assessment(request: Request) -> Downstream:
    downstream: Downstream = request.app.state.assessment
    return downstream


async def get_chat(request: Request) -> Downstream:
    downstream: Downstream = request.app.state.chat
    return downstream


async def get_retrieval(request: Request) -> RetrievalClient:
    client: RetrievalClient = request.app.state.retrieval
    return client


async def get_jobs(request: Request) -> IngestionJobs:
    jobs: IngestionJobs = request.app.state.jobs
    return jobs


async def get_audit(request: Request) -> AuditRecorder:
    recorder: AuditRecorder = request.app.state.audit
    return recorder


async def get_sessions(request: Request) -> ChatSessions:
    sessions: ChatSessions = request.app.state.chat_sessions
    return sessions


async def get_api_keys(request: Request) -> ApiKeyStore:
    keys: ApiKeyStore = request.app.state.authenticator.api_keys
    return keys


async def get_redactor(request: Request) -> RedactorT:
    redactor: RedactorT = request.app.state.redactor
    return redactor


AssessmentService = Annotated[Downstream, Depends(get_assessment)]
ChatService = Annotated[Downstream, Depends(get_chat)]
Retrieval = Annotated[RetrievalClient, Depends(get_retrieval)]
Jobs = Annotated[IngestionJobs, Depends(get_jobs)]
Audit = Annotated[AuditRecorder, Depends(get_audit)]
Sessions = Annotated[ChatSessions, Depends(get_sessions)]
ApiKeys = Annotated[ApiKeyStore, Depends(get_api_keys)]
Redactor = Annotated[RedactorT, Depends(get_redactor)]
