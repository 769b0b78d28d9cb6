"""Fixtures of the assessment tests: the app on the real patient file, retrieval up or down."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from assessment.app import create_app
from assessment.knowledge import GuidelineKnowledge, fetch_knowledge
from assessment.settings import AssessmentSettings
from ng12_common.retrieval_client import RetrievalClient
from tests.support import free_port

REPO = Path(__file__).resolve().parents[3]
PATIENTS_FILE = REPO / "data" / "patients.json"


def _make_client(retrieval_addr: str) -> TestClient:
    settings = AssessmentSettings(
        retrieval_addr=retrieval_addr,
        patients_file=PATIENTS_FILE,
        retrieval_timeout_seconds=2.0,
        environment="test",
    )
    return TestClient(create_app(settings), raise_server_exceptions=False)


@pytest.fixture
def offline_client() -> Iterator[TestClient]:
    """Retrieval pointed at a closed port: everything that needs it must be a quick 503."""
    with _make_client(f"127.0.0.1:{free_port()}") as client:
        yield client


@pytest.fixture(scope="module")
def live_client(retrieval_addr: str) -> Iterator[TestClient]:
    """The app on a real retrieval server with the NG12 PDF indexed (repo-root `retrieval_addr`)."""
    with _make_client(retrieval_addr) as client:
        yield client


@pytest.fixture(scope="session")
def knowledge(retrieval_addr: str) -> GuidelineKnowledge:
    """The guideline knowledge as the service loads it: from the real retrieval server."""

    async def load() -> GuidelineKnowledge:
        client = RetrievalClient(retrieval_addr, timeout_seconds=10.0)
        try:
            return await fetch_knowledge(client)
        finally:
            await client.close()

    return asyncio.run(load())


def make_client_with(retrieval_addr: str, genai_client: object | None = None) -> TestClient:
    settings = AssessmentSettings(
        retrieval_addr=retrieval_addr,
        patients_file=PATIENTS_FILE,
        retrieval_timeout_seconds=2.0,
        llm_timeout_seconds=0.5,
        environment="test",
    )
    return TestClient(create_app(settings, genai_client=genai_client), raise_server_exceptions=False)  # type: ignore[arg-type]
