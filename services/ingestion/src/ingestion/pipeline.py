"""The ingestion pipeline: NG12 PDF -> knowledge base (checkpoint file) -> new retrieval index."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ingestion.index_upload import Progress, active_source_sha256, upload_index
from ingestion.kb.builder import build_knowledge_base, write_knowledge_base
from ingestion.kb.errors import KnowledgeBaseError
from ng12_common.knowledge import KnowledgeBase
from ng12_common.logs import get_logger

log = get_logger("ingestion.pipeline")


def build_kb(pdf_path: Path) -> KnowledgeBase:
    """Parse the PDF into the knowledge base; KnowledgeBaseError says what is wrong with it."""
    if not pdf_path.is_file():
        raise KnowledgeBaseError(
            f"NG12 PDF not found at {pdf_path}. Download it from "
            "https://www.nice.org.uk/guidance/ng12 (set NG12_PDF to its path)."
        )
    return build_knowledge_base(pdf_path)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while piece := fh.read(1024 * 1024):
            digest.update(piece)
    return digest.hexdigest()


def ingest_pdf(
    pdf_path: Path,
    retrieval_addr: str,
    *,
    kb_dir: Path | None = None,
    activate: bool = True,
    batch_size: int = 64,
    timeout: float = 600.0,
    progress: Progress = lambda stage, fraction: None,
    service_token: str = "",
    force: bool = False,
    source_filename: str = "",
) -> dict[str, Any]:
    """Parse, build and upload a new index version; the result is the job report: version,
    status, counts, warnings, criteria coverage (stale and unused ids). Unless `force`, a PDF
    whose sha256 is the served version's own builds nothing: {"status": "unchanged", version}."""
    if not force and pdf_path.is_file():
        served = active_source_sha256(retrieval_addr)
        if served is not None and served[1] == file_sha256(pdf_path):
            log.info("ingestion_unchanged", version=served[0])
            return {"status": "unchanged", "version": served[0], "activated": False}
    progress("parse", 0.0)
    kb = build_kb(pdf_path)
    progress("parse", 1.0)
    if kb_dir is not None:
        kb_dir.mkdir(parents=True, exist_ok=True)
        write_knowledge_base(kb, kb_dir / f"ng12-{kb.guideline.source_sha256[:12]}.json")
    result = upload_index(
        retrieval_addr,
        kb,
        activate=activate,
        batch_size=batch_size,
        timeout=timeout,
        description=f"{source_filename or pdf_path.name} sha256:{kb.guideline.source_sha256[:12]}",
        progress=progress,
        service_token=service_token,
        pdf_path=pdf_path,
        source_filename=source_filename or pdf_path.name,
    )
    result["counts"] = dict(kb.report.counts)
    result["warnings"] = list(kb.report.warnings)
    result["criteria"] = dict(kb.report.criteria_coverage)
    log.info("ingestion_done", version=result["version"], status=result["status"])
    return result
