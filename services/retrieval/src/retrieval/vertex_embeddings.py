"""Vertex AI text embeddings: the cloud implementation of the embedding-provider interface.

Chosen with EMBEDDER=vertex (VERTEX_PROJECT, VERTEX_LOCATION, VERTEX_EMBEDDING_MODEL,
VERTEX_EMBEDDING_DIMENSION, VERTEX_TIMEOUT_SECONDS); the default stays the local MiniLM model,
and no test calls Vertex.
Calls go through google-cloud-aiplatform's `PredictionServiceClient.predict` on the publisher
model endpoint `projects/{project}/locations/{location}/publishers/google/models/{model}`:
documents are embedded with task type RETRIEVAL_DOCUMENT in batches of 16, queries with
RETRIEVAL_QUERY; vectors are L2-normalised (so cosine = dot product, as for MiniLM) and checked
against the configured dimension. The embedder id names model and dimension
(`vertex:text-embedding-005@768`), so an index built with one embedder is never searched with
another (retrieval answers FAILED_PRECONDITION naming both).

Authentication is Application Default Credentials (a service account in the deployment).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from google.protobuf import json_format, struct_pb2

from retrieval.embedding_types import EmbeddingError, Vector

DOCUMENT_TASK = "RETRIEVAL_DOCUMENT"
QUERY_TASK = "RETRIEVAL_QUERY"


class VertexTextEmbeddings:
    """Vertex AI text embeddings (e.g. text-embedding-005) through the PredictionService API."""

    batch_size = 16
    embeds_inline = False  # a network call: never on the serving thread

    def __init__(
        self,
        project: str,
        location: str,
        model: str,
        dimension: int,
        timeout_seconds: float = 30.0,
        client: Any | None = None,
    ) -> None:
        if not project:
            raise EmbeddingError("EMBEDDER=vertex needs VERTEX_PROJECT (the Vertex AI project id)")
        self.embedder_id = f"vertex:{model}@{dimension}"
        self.dimension = dimension
        self.endpoint = f"projects/{project}/locations/{location}/publishers/google/models/{model}"
        self.timeout_seconds = timeout_seconds
        self._client = client if client is not None else _prediction_client(location)

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        parts = [
            self._predict(texts[i : i + self.batch_size], DOCUMENT_TASK)
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts) if parts else np.zeros((0, self.dimension), dtype=np.float32)

    def embed_query(self, text: str) -> Vector:
        return self._predict([text], QUERY_TASK)[0]

    def _predict(self, texts: list[str], task: str) -> npt.NDArray[np.float32]:
        instances = [_value({"content": t, "task_type": task}) for t in texts]
        parameters = _value({"autoTruncate": True, "outputDimensionality": self.dimension})
        try:
            reply = self._client.predict(
                endpoint=self.endpoint,
                instances=instances,
                parameters=parameters,
                timeout=self.timeout_seconds,
            )
        except Exception as exc:
            raise EmbeddingError(f"Vertex AI embeddings at {self.endpoint} failed: {exc}") from exc
        predictions = json_format.MessageToDict(type(reply).pb(reply)).get("predictions", [])
        if len(predictions) != len(texts):
            raise EmbeddingError(
                f"Vertex AI returned {len(predictions)} embeddings for {len(texts)} texts ({self.endpoint})"
            )
        try:
            matrix = np.asarray([p["embeddings"]["values"] for p in predictions], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"Vertex AI returned an unexpected prediction shape: {exc!r}") from exc
        if matrix.shape[1] != self.dimension:
            raise EmbeddingError(
                f"Vertex AI returned {matrix.shape[1]}-d vectors; "
                f"VERTEX_EMBEDDING_DIMENSION is {self.dimension}"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return np.asarray(matrix / np.clip(norms, 1e-12, None), dtype=np.float32)


def _value(data: dict[str, Any]) -> struct_pb2.Value:
    return json_format.ParseDict(data, struct_pb2.Value())


def _prediction_client(location: str) -> Any:
    """The real client (imported lazily: google-cloud-aiplatform is the `vertex` extra)."""
    try:
        from google.cloud.aiplatform_v1.services.prediction_service import PredictionServiceClient
    except ImportError as exc:
        raise EmbeddingError(
            "EMBEDDER=vertex needs google-cloud-aiplatform: pip install 'ng12-retrieval[vertex]'"
        ) from exc
    try:
        return PredictionServiceClient(
            client_options={"api_endpoint": f"{location}-aiplatform.googleapis.com"}
        )
    except Exception as exc:
        raise EmbeddingError(f"cannot create the Vertex AI client ({type(exc).__name__}: {exc})") from exc
