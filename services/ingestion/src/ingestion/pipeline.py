"""The ingestion pipeline: NG12 PDF -> knowledge base (checkpoint file) -> new retrieval index.

The PDF is parsed in a child process with size, page, wall-time and memory limits
(ingestion.parse_guard); the upload's deadline is what is left of the task's time limit.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from ingestion.index_upload import Progress, active_source_sha256, upload_index
from ingestion.kb.builder import write_knowledge_base
from ingestion.parse_guard import ParseLimits, parse_pdf_guarded
from ng12_common.knowledge import KnowledgeBase
from ng12_common.logs import get_logger

log = get_logger("ingestion.pipeline")


def build_kb(pdf_path: Path, limits: ParseLimits | None = None) -> KnowledgeBase:
    """Parse the PDF into the knowledge base in a limited child process; KnowledgeBaseError says
    what is wrong with it (ParseLimitExceeded: which limit it broke)."""
    return parse_pdf_guarded(pdf_path, limits)


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
    limits: ParseLimits | None = None,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Parse, build and upload a new index version; the result is the job report: version,
    status, counts, warnings, criteria coverage (stale and unused ids). Unless `force`, a PDF
    whose sha256 is the served version's own builds nothing: {"status": "unchanged", version}.
    `deadline` (time.monotonic()): the parse and the upload must end by then."""
    if not force and pdf_path.is_file():
        served = active_source_sha256(retrieval_addr)
        if served is not None and served[1] == file_sha256(pdf_path):
            log.info("ingestion_unchanged", version=served[0])
            return {"status": "unchanged", "version": served[0], "activated": False}
    progress("parse", 0.0)
    if deadline is not None:
        base = limits or ParseLimits()
        remaining = max(1.0, deadline - time.monotonic())
        limits = ParseLimits(
            base.max_bytes, base.max_pages, min(base.wall_seconds, remaining), base.memory_bytes, base.workers
        )
    kb = build_kb(pdf_path, limits)
    progress("parse", 1.0)
    if deadline is not None:
        timeout = max(1.0, min(timeout, deadline - time.monotonic()))
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
