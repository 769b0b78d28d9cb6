"""FastAPI dependencies: the per-app clients created in the lifespan (see gateway.app)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gateway.jobs import IngestionJobs
from gateway.proxy import Downstream
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


AssessmentService = Annotated[Downstream, Depends(get_assessment)]
ChatService = Annotated[Downstream, Depends(get_chat)]
Retrieval = Annotated[RetrievalClient, Depends(get_retrieval)]
Jobs = Annotated[IngestionJobs, Depends(get_jobs)]
