"""An OTLP/HTTP trace receiver on loopback, as a collector (Jaeger, Tempo, an OpenTelemetry
Collector) is to the exporter: it takes ``POST /v1/traces`` with an
``ExportTraceServiceRequest`` in protobuf (gzip or not), answers with an empty
``ExportTraceServiceResponse``, and keeps every span for the test to read."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fakes.served import ServedInThread, send

TRACES_PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the receiver decoded it."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    service: str
    attributes: dict[str, Any] = field(default_factory=dict)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _spans(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        service=str(resource.get("service.name", "")),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                    )
                )
    return spans


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path != TRACES_PATH or self.headers.get("content-type") != PROTOBUF:
            send(self, 404, b"", "text/plain", {})
            return
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        self.server.receiver.keep(_spans(ExportTraceServiceRequest.FromString(body)))
        send(self, 200, ExportTraceServiceResponse().SerializeToString(), PROTOBUF, {})

    def log_message(self, format: str, *args: Any) -> None:
        """Silent."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, receiver: OtlpReceiver) -> None:
        self.receiver = receiver
        super().__init__(("127.0.0.1", 0), _Handler)


class OtlpReceiver(ServedInThread):
    """Spans received over OTLP/HTTP; ``endpoint`` is what QUANTDESK_OTEL__ENDPOINT is set to."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []

    def _server(self) -> ThreadingHTTPServer:
        return _Server(self)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def keep(self, spans: list[ReceivedSpan]) -> None:
        with self._lock:
            self._spans.extend(spans)

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)
