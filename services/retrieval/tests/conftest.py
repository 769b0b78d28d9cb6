"""Fixtures shared by retrieval's tests: the knowledge base the session's retrieval server was
built from (its ingestion checkpoint), for tests that build their own index versions from it."""

from __future__ import annotations

import pytest

from ng12_common.knowledge import KnowledgeBase
from tests.support import RetrievalProcess


@pytest.fixture(scope="module")
def real_kb(retrieval_server: RetrievalProcess) -> KnowledgeBase:
    (path,) = (retrieval_server.chroma_dir.parent / "kb").glob("ng12-*.json")
    return KnowledgeBase.model_validate_json(path.read_text(encoding="utf-8"))
