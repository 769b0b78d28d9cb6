"""Parse the guideline PDF in a child process, with limits.

A PDF is input from outside: a damaged, hostile or simply huge file must not hang the worker or
take its memory. So before parsing, the file size is capped (checked here, no child needed);
then a child process (multiprocessing "spawn": a clean interpreter, no threads inherited from
the worker) caps its own address space (RLIMIT_AS), refuses a PDF with too many pages, builds the
knowledge base and writes it as JSON to a temporary file the worker reads back. The worker waits
at most the wall-time limit, then kills the child.

Every limit breach is a `ParseLimitExceeded` (a `KnowledgeBaseError`: bad input, not worth a
retry) whose message names the limit and the setting that raises it.
"""

from __future__ import annotations

import errno
import multiprocessing
import resource
import signal
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from ingestion.kb.errors import KnowledgeBaseError
from ng12_common.knowledge import KnowledgeBase
from ng12_common.logs import get_logger

log = get_logger("ingestion.parse_guard")
MB = 1024 * 1024


class ParseLimitExceeded(KnowledgeBaseError):
    """The PDF broke one of the parsing limits (size, pages, wall time, memory)."""


@dataclass(frozen=True)
class ParseLimits:
    max_bytes: int = 50 * MB  # INGESTION_MAX_PDF_MB: NG12 is ~1 MB
    max_pages: int = 400  # INGESTION_MAX_PDF_PAGES: NG12 has 95
    wall_seconds: float = 600.0  # INGESTION_PARSE_TIMEOUT_SECONDS: NG12 takes ~10-40 s
    memory_bytes: int = 1024 * MB  # INGESTION_PARSE_MEMORY_MB: address space of the child (NG12: ~100 MB)
    workers: int | None = None  # page-extraction processes inside the child (None: the default)


def _child(pdf_path: str, out_path: str, limits: ParseLimits, conn: Connection) -> None:
    """Runs in the child process: limit memory, count pages, build, write JSON, report."""
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        import pdfplumber

        from ingestion.kb.builder import build_knowledge_base, write_knowledge_base

        try:
            with pdfplumber.open(pdf_path) as pdf:
                pages = len(pdf.pages)
        except Exception:  # noqa: BLE001 - unreadable: build_knowledge_base says exactly why
            pages = 0
        if pages > limits.max_pages:
            conn.send(
                (
                    "limit",
                    f"the PDF has {pages} pages, over the limit of {limits.max_pages} "
                    "(INGESTION_MAX_PDF_PAGES)",
                )
            )
            return
        kb = build_knowledge_base(pdf_path, workers=limits.workers)
        write_knowledge_base(kb, Path(out_path))
        conn.send(("ok", ""))
    except KnowledgeBaseError as exc:
        conn.send(("kb", str(exc)))
    except MemoryError:
        conn.send(("limit", _memory_message(limits)))
    except (ImportError, OSError) as exc:
        # under RLIMIT_AS, loading an extension module fails to mmap ("failed to map segment from
        # shared object", ENOMEM) rather than raising MemoryError
        out_of_memory = "failed to map segment" in str(exc) or getattr(exc, "errno", None) == errno.ENOMEM
        conn.send(
            ("limit", _memory_message(limits)) if out_of_memory else ("error", f"{type(exc).__name__}: {exc}")
        )
    except Exception as exc:  # noqa: BLE001 - reported to the worker, which fails the job with it
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _memory_message(limits: ParseLimits) -> str:
    return (
        f"parsing the PDF needed more than {limits.memory_bytes // MB} MB of memory "
        "(INGESTION_PARSE_MEMORY_MB)"
    )


def check_size(pdf_path: Path, limits: ParseLimits) -> None:
    if not pdf_path.is_file():
        raise KnowledgeBaseError(
            f"NG12 PDF not found at {pdf_path}. Download it from "
            "https://www.nice.org.uk/guidance/ng12 (set NG12_PDF to its path)."
        )
    size = pdf_path.stat().st_size
    if size > limits.max_bytes:
        raise ParseLimitExceeded(
            f"{pdf_path} is {size / MB:.1f} MB, over the limit of {limits.max_bytes / MB:.0f} MB "
            "(INGESTION_MAX_PDF_MB)"
        )


def parse_pdf_guarded(pdf_path: Path, limits: ParseLimits | None = None) -> KnowledgeBase:
    """The knowledge base of `pdf_path`, parsed in a limited child process."""
    limits = limits or ParseLimits()
    check_size(pdf_path, limits)
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="ng12-parse-") as tmp:
        out = Path(tmp) / "kb.json"
        receiver, sender = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_child, args=(str(pdf_path), str(out), limits, sender), name="ng12-parse", daemon=True
        )
        proc.start()
        sender.close()
        try:
            if not receiver.poll(limits.wall_seconds):
                raise ParseLimitExceeded(
                    f"parsing {pdf_path.name} took longer than {limits.wall_seconds:g} s "
                    "(INGESTION_PARSE_TIMEOUT_SECONDS)"
                )
            try:
                kind, message = receiver.recv()
            except EOFError:  # the child died without a word: killed (OOM killer, a signal)
                proc.join(5)
                code = proc.exitcode
                if code is not None and code < 0:
                    raise ParseLimitExceeded(
                        f"the PDF parsing process was killed ({signal.Signals(-code).name}); the usual "
                        "cause is running out of memory: " + _memory_message(limits)
                    ) from None
                raise KnowledgeBaseError(
                    f"the PDF parsing process ended without a result (exit {code})"
                ) from None
        finally:
            receiver.close()
            if proc.is_alive():
                proc.kill()
            proc.join(10)
        if kind == "ok":
            return KnowledgeBase.model_validate_json(out.read_bytes())
        if kind == "kb":
            raise KnowledgeBaseError(message)
        if kind == "limit":
            raise ParseLimitExceeded(message)
        raise KnowledgeBaseError(f"parsing {pdf_path.name} failed: {message}")


def limits_from_settings(
    max_pdf_mb: float, max_pdf_pages: int, parse_timeout_seconds: float, parse_memory_mb: int
) -> ParseLimits:
    return ParseLimits(
        max_bytes=int(max_pdf_mb * MB),
        max_pages=max_pdf_pages,
        wall_seconds=parse_timeout_seconds,
        memory_bytes=parse_memory_mb * MB,
    )


__all__ = ["ParseLimitExceeded", "ParseLimits", "check_size", "limits_from_settings", "parse_pdf_guarded"]
