"""Fixtures of the assessment tests: the app on the real patient file, retrieval up or down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from assessment.app import create_app
from assessment.settings import AssessmentSettings
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
