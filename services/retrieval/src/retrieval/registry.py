"""The index registry: which versions exist, their metadata, and which one is served.

Persisted as one JSON file in the index directory and replaced atomically (temp file, fsync,
os.replace), so a crash at any instant leaves either the old or the new registry on disk, never a
mix, and a reader in another process opens one or the other whole. The active pointer lives only
here. With several retrieval replicas the index directory is shared (a volume all of them mount):
the one writer saves the registry, and replicas re-read it (`reload_if_changed`) when the writer
announces a change and on a timer (serving.IndexManager, replication.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

Status = Literal["building", "ready", "active", "retired", "failed"]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def collection_name(version: str) -> str:
    """The Chroma collection holding a version's embedded chunks."""
    return f"ng12-chunks-{version}"


class VersionRecord(BaseModel):
    version: str
    status: Status
    guideline: dict[str, str | int] = Field(default_factory=dict)
    embedder_id: str
    embedding_dim: int
    chunk_counts: dict[str, int] = Field(default_factory=dict)
    expected_counts: dict[str, int] = Field(default_factory=dict)
    recommendation_count: int = 0
    created_at: str = Field(default_factory=now_iso)
    activated_at: str = ""
    error: str = ""
    description: str = ""
    stale_criteria: list[str] = Field(default_factory=list)
    unused_criteria: list[str] = Field(default_factory=list)
    has_source_pdf: bool = False
    source_filename: str = ""

    @property
    def collection_name(self) -> str:
        return collection_name(self.version)

    @property
    def seq(self) -> int:
        digits = self.version.lstrip("v")
        return int(digits) if digits.isdigit() else 0


class RegistryState(BaseModel):
    next_seq: int = 1
    active: str | None = None
    previous: str | None = None
    versions: dict[str, VersionRecord] = Field(default_factory=dict)
    # versions whose data (Chroma collection, folder) could not be removed when they failed or were
    # pruned (a full disk, say): storage retries on its maintenance pass and after later writes
    pending_removal: list[str] = Field(default_factory=list)


class Registry:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "registry.json"
        root.mkdir(parents=True, exist_ok=True)
        self._stamp: tuple[int, int, int] | None = None
        self.state = self._load()

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _load(self) -> RegistryState:
        self._stamp = self._file_stamp()
        if self._stamp is None:
            return RegistryState()
        return RegistryState.model_validate_json(self.path.read_text(encoding="utf-8"))

    def reload_if_changed(self) -> bool:
        """Re-read the file if another process replaced it since we last read or wrote it (a
        replica following the writer). os.replace gives the new file a new inode, so the stamp
        changes even within one mtime tick."""
        if self._file_stamp() == self._stamp:
            return False
        self.state = self._load()
        return True

    def save(self, state: RegistryState | None = None) -> None:
        """Write `state` (default: the one in memory) atomically. A caller that must not change
        memory unless the write succeeds saves a changed copy, then applies the change."""
        data = (self.state if state is None else state).model_dump_json(indent=2)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".registry-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._stamp = self._file_stamp()

    def new_version_name(self) -> str:
        name = f"v{self.state.next_seq}"
        self.state.next_seq += 1
        return name

    def get(self, version: str) -> VersionRecord | None:
        return self.state.versions.get(version)

    def ordered(self) -> list[VersionRecord]:
        return sorted(self.state.versions.values(), key=lambda r: r.seq)


def write_json_atomic(path: Path, payload: object) -> None:
    """Write JSON next to its final place and rename it in (same filesystem)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
