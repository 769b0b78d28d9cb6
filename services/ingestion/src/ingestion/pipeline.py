"""The ingestion pipeline: NG12 PDF -> knowledge base (checkpoint file) -> new retrieval index."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pdfplumber

from ng12_common.knowledge import GuidelineMeta, KBReport, KnowledgeBase
from ng12_common.logs import get_logger
from ingestion.index_upload import Progress, upload_index
from ingestion.page_chunker import page_chunks

log = get_logger("ingestion.pipeline")


class IngestionInputError(ValueError):
    """The PDF to ingest is missing or unusable; the message says what to fix."""


def build_kb(pdf_path: Path) -> KnowledgeBase:
    if not pdf_path.is_file():
        raise IngestionInputError(
            f"NG12 PDF not found at {pdf_path}. Download it from "
            "https://www.nice.org.uk/guidance/ng12 (set NG12_PDF to its path)."
        )
    data = pdf_path.read_bytes()
    with pdfplumber.open(pdf_path) as pdf:
        page_count = len(pdf.pages)
    chunks = page_chunks(pdf_path)
    return KnowledgeBase(
        guideline=GuidelineMeta(
            title="Suspected cancer: recognition and referral", published="2015-06-23",
            last_updated="2026-01-12", page_count=page_count, source_sha256=hashlib.sha256(data).hexdigest(),
        ),
        recommendations=[], symptom_rows=[], chunks=chunks, lexicon=[],
        report=KBReport(counts={"page_text": len(chunks)}),
    )


def ingest_pdf(
    pdf_path: Path,
    retrieval_addr: str,
    *,
    kb_dir: Path | None = None,
    activate: bool = True,
    batch_size: int = 64,
    timeout: float = 600.0,
    progress: Progress = lambda stage, fraction: None,
) -> dict[str, Any]:
    progress("parse", 0.0)
    kb = build_kb(pdf_path)
    progress("parse", 1.0)
    if kb_dir is not None:
        kb_dir.mkdir(parents=True, exist_ok=True)
        out = kb_dir / f"ng12-{kb.guideline.source_sha256[:12]}.json"
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(kb.model_dump_json(), encoding="utf-8")
        tmp.replace(out)
    result = upload_index(
        retrieval_addr, kb, activate=activate, batch_size=batch_size, timeout=timeout,
        description=f"{pdf_path.name} sha256:{kb.guideline.source_sha256[:12]}", progress=progress,
    )
    result["report"] = kb.report.model_dump()
    log.info("ingestion_done", version=result["version"], status=result["status"])
    return result
