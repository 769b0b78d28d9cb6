"""Uploaded guideline PDFs: checked before anything is queued, then stored for the worker.

The gateway and the ingestion worker share UPLOAD_DIR (a volume in compose, `var/uploads` for
`make run`). A file is validated in the temporary file the multipart parser spooled it to
(size cap, `%PDF-` magic bytes, the PDF opens with pdfplumber and has pages), hashed, and only
then copied into UPLOAD_DIR under a temporary name and renamed to `<job_id>.pdf`, so the worker
never sees a half-written file and a refused file leaves nothing behind. The worker deletes it
when the job ends (retrieval keeps the version's own copy).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
PDF_MAGIC = b"%PDF-"


class UploadRefused(Exception):
    """A file that must not be queued; `status` and `code` are the HTTP answer."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class CheckedPdf:
    sha256: str
    size: int
    pages: int


def _size(fh: BinaryIO) -> int:
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    fh.seek(0)
    return size


def check_pdf(fh: BinaryIO, content_type: str | None, max_bytes: int) -> CheckedPdf:
    """Validate an uploaded file (blocking: run it in a thread). Raises UploadRefused."""
    size = _size(fh)
    if size == 0:
        raise UploadRefused(422, "empty_file", "The uploaded file is empty; choose the NG12 PDF.")
    if size > max_bytes:
        raise UploadRefused(
            413, "file_too_large", f"The PDF is {size} bytes; the limit is {max_bytes} bytes."
        )
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in PDF_TYPES:
        raise UploadRefused(
            415,
            "unsupported_media_type",
            f"The file was sent as {media or 'no content type'}; upload a PDF (application/pdf).",
        )
    if fh.read(len(PDF_MAGIC)) != PDF_MAGIC:
        raise UploadRefused(415, "not_a_pdf", "The file does not start with %PDF-: it is not a PDF.")
    fh.seek(0)
    digest = hashlib.sha256()
    while piece := fh.read(1024 * 1024):
        digest.update(piece)
    fh.seek(0)
    pages = _page_count(fh)
    fh.seek(0)
    return CheckedPdf(digest.hexdigest(), size, pages)


def _page_count(fh: BinaryIO) -> int:
    import pdfplumber

    try:
        with pdfplumber.open(fh) as pdf:  # type: ignore[arg-type]  # any binary file object works
            pages = len(pdf.pages)
    except Exception as exc:  # noqa: BLE001 - any parser failure means the file cannot be ingested
        raise UploadRefused(
            422,
            "unreadable_pdf",
            f"The PDF cannot be opened ({type(exc).__name__}); it may be truncated or encrypted.",
        ) from None
    if pages == 0:
        raise UploadRefused(422, "unreadable_pdf", "The PDF has no pages.")
    return pages


def store_pdf(fh: BinaryIO, upload_dir: Path, job_id: str) -> Path:
    """Copy the checked file to UPLOAD_DIR/<job_id>.pdf atomically (blocking)."""
    upload_dir.mkdir(parents=True, exist_ok=True)
    target = upload_dir / f"{job_id}.pdf"
    fd, tmp = tempfile.mkstemp(dir=upload_dir, prefix=".upload-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            fh.seek(0)
            shutil.copyfileobj(fh, out, 1024 * 1024)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # the worker may run as another user on the shared volume
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def safe_filename(name: str | None) -> str:
    """The client's file name, for display only (never used as a path)."""
    base = Path(name or "upload.pdf").name
    cleaned = "".join(ch for ch in base if ch.isprintable() and ch not in '/\\"')[:200]
    return cleaned or "upload.pdf"
