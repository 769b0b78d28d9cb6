"""Guideline pages as PNG, rendered from an index version's own source PDF (pypdfium2).

A recommendation's highlight boxes (PDF points, top-left origin, from ingestion's layout read)
are drawn as a semi-transparent fill with a dark outline, so the highlight shows in greyscale
too. Renders are cached on disk in the version's folder (`pages/`), one file per (page, scale,
highlight); a version never changes, so neither does its cached page. The cache is best effort:
a page whose write fails (a full disk) is still answered, and nothing is written for a version
pruned meanwhile. pdfium is not thread safe: every render runs on one dedicated thread. Nothing
here reads a file on the event loop: a version that is not the served one is read in a worker
thread, the source PDF and the cached page are found and read on the render thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ng12_common.logs import get_logger
from retrieval.records import IndexError_
from retrieval.serving import IndexManager

log = get_logger("retrieval.pages")

DEFAULT_SCALE = 1.5
MIN_SCALE, MAX_SCALE = 1.0, 3.0
FILL = (255, 213, 0, 96)  # amber, ~38 % opaque: the text stays readable through it
OUTLINE = (146, 64, 14, 255)  # dark brown: visible in greyscale and to colour-blind readers


@dataclass(frozen=True)
class RenderedPage:
    png: bytes
    version: str
    page_count: int
    etag: str
    boxes: int


def quantise_scale(scale: float) -> float:
    """0 -> the default; otherwise 1..3 rounded to a quarter (bounds the cache)."""
    if scale == 0:
        return DEFAULT_SCALE
    if not MIN_SCALE <= scale <= MAX_SCALE:
        raise IndexError_("invalid", f"scale must be {MIN_SCALE:g}-{MAX_SCALE:g}, got {scale:g}")
    return round(scale * 4) / 4


def _boxes_of(rec: dict[str, Any]) -> list[dict[str, Any]]:
    boxes = (rec.get("metadata") or {}).get("highlights") or []
    return [b for b in boxes if isinstance(b, dict)]


def _page_offset(canonical: dict[str, dict[str, Any]]) -> int:
    """printed page - 0-based PDF page index, as the highlight boxes show it (NG12: 1)."""
    offsets = Counter(
        int(b["page"]) - int(b["page_index"])
        for rec in canonical.values()
        for b in _boxes_of(rec)
        if "page" in b and "page_index" in b
    )
    return offsets.most_common(1)[0][0] if offsets else 1


def _draw(pdf_path: Path, page_index: int, scale: float, boxes: list[dict[str, Any]]) -> bytes:
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    pdf = pdfium.PdfDocument(str(pdf_path))
    try:
        if not 0 <= page_index < len(pdf):
            raise IndexError_("invalid", f"the PDF has {len(pdf)} pages; no page at index {page_index}")
        page = pdf[page_index]
        try:
            image = page.render(scale=scale).to_pil().convert("RGBA")
        finally:
            page.close()
    finally:
        pdf.close()
    if boxes:
        overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        pad = 1.5 * scale
        width = max(2, round(1.5 * scale))
        for b in boxes:
            rect = (
                float(b["x0"]) * scale - pad,
                float(b["top"]) * scale - pad,
                float(b["x1"]) * scale + pad,
                float(b["bottom"]) * scale + pad,
            )
            draw.rectangle(rect, fill=FILL, outline=OUTLINE, width=width)
        image = Image.alpha_composite(image, overlay)
    out = io.BytesIO()
    image.convert("RGB").save(out, format="PNG", compress_level=6)
    return out.getvalue()


def _write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in its folder. Only the last folder is
    created: the version's own folder must still be there (a pruned version's is not brought back)."""
    path.parent.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".png")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class PageRenderer:
    def __init__(self, index: IndexManager) -> None:
        self.index = index
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pdfium")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def render(self, version: str, page: int, highlight_id: str, scale: float) -> RenderedPage:
        # the served version is in memory; another one is read from disk, off the event loop
        data = (
            await asyncio.to_thread(self.index.version_data, version)
            if version
            else self.index.version_data("")
        )
        record = data.record
        scale = quantise_scale(scale)
        page_count = int(record.guideline.get("page_count", 0) or 0)
        if page_count and not 1 <= page <= page_count:
            raise IndexError_("invalid", f"page must be 1-{page_count}, got {page}")
        boxes: list[dict[str, Any]] = []
        if highlight_id:
            rec = data.canonical.get(highlight_id)
            if rec is None:
                raise IndexError_(
                    "not_found",
                    f"NG12 has no recommendation {highlight_id} in index {record.version}",
                    "recommendation",
                )
            boxes = [b for b in _boxes_of(rec) if int(b.get("page", -1)) == page]
        page_index = int(boxes[0]["page_index"]) if boxes else page - _page_offset(data.canonical)
        label = highlight_id if boxes else "none"
        key = f"{record.version}|{page}|{scale:g}|{label}"
        etag = '"' + hashlib.sha256(key.encode()).hexdigest()[:20] + '"'
        png = await asyncio.get_running_loop().run_in_executor(
            self._pool,
            self._cached_or_rendered,
            record.version,
            page_index,
            scale,
            boxes,
            f"p{page}-s{int(scale * 100)}-{label}.png",
        )
        return RenderedPage(png, record.version, page_count, etag, len(boxes))

    def _cached_or_rendered(
        self, version: str, page_index: int, scale: float, boxes: list[dict[str, Any]], name: str
    ) -> bytes:
        """The page's PNG from the version's page cache, else rendered from its source PDF and
        cached (blocking: the render thread)."""
        pdf_path = self.index.storage.source_pdf(version)
        if pdf_path is None:
            raise IndexError_(
                "not_found",
                f"index version {version} keeps no source PDF (built before PDFs were kept); "
                "re-ingest the PDF to render pages",
                "source_pdf",
            )
        cached = pdf_path.parent / "pages" / name
        try:
            return cached.read_bytes()
        except OSError:
            pass  # not cached yet (or unreadable): render it
        png = _draw(pdf_path, page_index, scale, boxes)
        self._keep(version, cached, png)
        return png

    def _keep(self, version: str, cached: Path, png: bytes) -> None:
        """Cache a rendered page, best effort: a write the disk refuses (full, read-only) costs a
        render next time, never the answer. Nothing is written for a version pruned meanwhile
        (the writer's registry no longer names it): that would bring its folder back."""
        storage = self.index.storage
        try:
            if not storage.writer:
                storage.registry.reload_if_changed()
            if storage.registry.get(version) is None:
                log.info("page_cache_skipped", version=version, reason="version pruned")
                return
            _write_atomic(cached, png)
        except OSError as exc:
            log.warning("page_cache_write_failed", version=version, path=str(cached), error=repr(exc))
