"""The embedding interface every provider implements (local MiniLM, Vertex AI), and its error.

Apart from embeddings.py so that a provider module (vertex_embeddings.py) and the factory that
picks one (embeddings.build_provider) do not import each other.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


class EmbeddingError(RuntimeError):
    """The embedding model could not be loaded or failed to embed."""


class EmbeddingProvider(Protocol):
    embedder_id: str
    dimension: int
    #: True when embedding one query is a few milliseconds of local CPU that is better run on the
    #: serving thread than handed to a thread pool; False for remote providers (network waits).
    embeds_inline: bool

    def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]: ...

    def embed_query(self, text: str) -> Vector: ...
