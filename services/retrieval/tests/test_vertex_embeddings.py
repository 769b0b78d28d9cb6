"""The Vertex AI embeddings provider through the real google-cloud-aiplatform client and real
gRPC, against a fake Vertex PredictionService on localhost (the transport edge: Vertex itself
cannot be reached from tests)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import numpy as np
import pytest
from google.cloud.aiplatform_v1.services.prediction_service import PredictionServiceClient
from google.cloud.aiplatform_v1.services.prediction_service.transports import PredictionServiceGrpcTransport
from google.cloud.aiplatform_v1.types import PredictRequest, PredictResponse
from google.protobuf import json_format, struct_pb2

from retrieval.embeddings import EmbeddingError, build_provider
from retrieval.settings import RetrievalSettings
from retrieval.vertex_embeddings import VertexTextEmbeddings
from tests.support import free_port

DIM = 8


class FakeVertex:
    """google.cloud.aiplatform.v1.PredictionService/Predict: a deterministic vector per text."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.dimension = DIM
        self.fail: grpc.StatusCode | None = None

    def predict(self, request: PredictRequest, context: grpc.ServicerContext) -> PredictResponse:
        body = json_format.MessageToDict(PredictRequest.pb(request))
        self.requests.append(body)
        if self.fail is not None:
            context.abort(self.fail, "quota exceeded")
        raw = PredictResponse.pb()()
        for instance in body["instances"]:
            seed = sum(map(ord, instance["content"]))
            values = [float((seed * (i + 1)) % 7 + 1) for i in range(self.dimension)]
            raw.predictions.add().CopyFrom(
                json_format.ParseDict({"embeddings": {"values": values}}, struct_pb2.Value())
            )
        return PredictResponse.wrap(raw)


@pytest.fixture
def vertex() -> Iterator[tuple[FakeVertex, PredictionServiceClient]]:
    fake = FakeVertex()
    server = grpc.server(futures.ThreadPoolExecutor(2))
    handler = grpc.method_handlers_generic_handler(
        "google.cloud.aiplatform.v1.PredictionService",
        {
            "Predict": grpc.unary_unary_rpc_method_handler(
                fake.predict,
                request_deserializer=PredictRequest.deserialize,
                response_serializer=PredictResponse.serialize,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
    port = free_port()
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    client = PredictionServiceClient(transport=PredictionServiceGrpcTransport(channel=channel))
    yield fake, client
    channel.close()
    server.stop(0)


def _provider(client: PredictionServiceClient) -> VertexTextEmbeddings:
    return VertexTextEmbeddings("ng12-proj", "europe-west2", "text-embedding-005", DIM, 5.0, client=client)


def test_documents_and_queries_are_embedded_normalised_in_batches(
    vertex: tuple[FakeVertex, PredictionServiceClient],
) -> None:
    fake, client = vertex
    provider = _provider(client)
    assert provider.embedder_id == "vertex:text-embedding-005@8"
    texts = [f"chunk {i}" for i in range(20)]
    docs = provider.embed_documents(texts)
    assert docs.shape == (20, DIM) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0)
    assert [len(r["instances"]) for r in fake.requests] == [16, 4]  # batches of 16
    first = fake.requests[0]
    assert (
        first["endpoint"]
        == "projects/ng12-proj/locations/europe-west2/publishers/google/models/text-embedding-005"
    )
    assert first["instances"][0] == {"content": "chunk 0", "task_type": "RETRIEVAL_DOCUMENT"}
    assert first["parameters"] == {"autoTruncate": True, "outputDimensionality": float(DIM)}
    query = provider.embed_query("chunk 3")
    assert fake.requests[-1]["instances"] == [{"content": "chunk 3", "task_type": "RETRIEVAL_QUERY"}]
    assert np.allclose(query, docs[3])  # the fake gives a text the same vector whatever the task


def test_api_errors_and_wrong_dimensions_are_embedding_errors(
    vertex: tuple[FakeVertex, PredictionServiceClient],
) -> None:
    fake, client = vertex
    provider = _provider(client)
    fake.dimension = DIM * 2
    with pytest.raises(EmbeddingError, match="16-d vectors; VERTEX_EMBEDDING_DIMENSION is 8"):
        provider.embed_query("haemoptysis")
    fake.dimension = DIM
    fake.fail = grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(EmbeddingError, match="quota exceeded"):
        provider.embed_documents(["haemoptysis"])


def test_vertex_is_chosen_by_configuration_and_needs_a_project() -> None:
    with pytest.raises(EmbeddingError, match="VERTEX_PROJECT"):
        build_provider(RetrievalSettings(embedder="vertex", vertex_project=""))
    with pytest.raises(EmbeddingError, match="Unknown EMBEDDER"):
        build_provider(RetrievalSettings.model_construct(embedder="openai"))
