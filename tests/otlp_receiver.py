"""An in-test OTLP/gRPC trace receiver: the collector's part that tests need.

`OtlpReceiver().start()` listens on a free loopback port; services started with
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT export their spans to it, and `spans()` gives
them flattened (trace id, span id, parent id, name, kind, service.name, attributes).
"""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    service: str
    attributes: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    return getattr(v, which) if which else None


class _Collector(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: list[Span] = []

    def Export(self, request: Any, context: Any) -> Any:
        got: list[Span] = []
        for rs in request.resource_spans:
            res = {a.key: _value(a.value) for a in rs.resource.attributes}
            service = str(res.get("service.name", ""))
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        Span(
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            name=s.name,
                            kind=s.kind,
                            service=service,
                            attributes={a.key: _value(a.value) for a in s.attributes},
                        )
                    )
        with self.lock:
            self.spans.extend(got)
        return trace_service_pb2.ExportTraceServiceResponse()


class OtlpReceiver:
    def __init__(self) -> None:
        self._collector = _Collector()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self._collector, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> OtlpReceiver:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(0)

    def spans(self) -> list[Span]:
        with self._collector.lock:
            return list(self._collector.spans)

    def trace_of(self, attribute: str, value: str) -> list[Span]:
        """Every span of the trace that holds a span with attribute == value."""
        spans = self.spans()
        ids = {s.trace_id for s in spans if s.attributes.get(attribute) == value}
        return [s for s in spans if s.trace_id in ids]

    def wait_trace(self, attribute: str, value: str, services: set[str], timeout: float = 20.0) -> list[Span]:
        """The trace marked by attribute == value once it has spans of every service named and is
        whole (a root, and every parent received: a parent ends, and is exported, after its children)."""
        deadline = time.monotonic() + timeout
        found: list[Span] = []
        while time.monotonic() < deadline:
            found = self.trace_of(attribute, value)
            ids = {s.span_id for s in found}
            whole = any(not s.parent_id for s in found) and all(
                not s.parent_id or s.parent_id in ids for s in found
            )
            if services <= {s.service for s in found} and whole:
                return found
            time.sleep(0.2)
        return found
