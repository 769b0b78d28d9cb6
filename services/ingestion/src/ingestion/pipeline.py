"""The ingestion pipeline: NG12 PDF -> knowledge base (checkpoint file) -> new retrieval index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingestion.index_upload import Progress, upload_index
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
) -> dict[str, Any]:
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
        description=f"{pdf_path.name} sha256:{kb.guideline.source_sha256[:12]}",
        progress=progress,
        service_token=service_token,
    )
    result["report"] = kb.report.model_dump()
    log.info("ingestion_done", version=result["version"], status=result["status"])
    return result
