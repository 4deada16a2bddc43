"""Traces over OTLP: with ``QUANTDESK_OTEL__ENDPOINT`` set, every workflow, activity and
model call of a process is a span sent to that collector (Jaeger, Tempo, Langfuse, an
OpenTelemetry Collector: anything that takes OTLP over HTTP).

Temporal's ``TracingInterceptor`` makes the workflow and activity spans and carries the
trace in each call's headers, so a run started by a traced client is one trace from the
AutoRun down through its children's activities; the chat activity adds the model call's
span (``shared.observability.tracing``). Without the setting nothing is imported or
installed, and the tracer the code asks for is OpenTelemetry's no-op one: no cost when off.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from shared.config import OtelSettings

if TYPE_CHECKING:  # every command's exit imports this module (``flush_traces``): keep it light
    from temporalio.client import Interceptor

EXPORT_DELAY_MS = 1000
"""How long finished spans wait to go out in a batch: a trace shows within a second or two."""
FLUSH_TIMEOUT_MS = 5000


def tracing_interceptors(otel: OtelSettings) -> list[Interceptor]:
    """The interceptors that trace a client's calls and its workers' runs; none when off."""
    if otel.endpoint is None:
        return []
    _install(otel.endpoint.rstrip("/"), otel.service_name)
    from temporalio.contrib.opentelemetry import TracingInterceptor

    # A run started by a client that does not trace (`temporal workflow start`, a schedule)
    # still gets its workflow spans: its own span is then the trace's root.
    return [TracingInterceptor(always_create_workflow_spans=True)]


@functools.cache
def _install(endpoint: str, service: str) -> None:
    """This process's tracer provider, exporting in batches to ``endpoint``; once."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=EXPORT_DELAY_MS))
    trace.set_tracer_provider(provider)


def flush_traces() -> None:
    """Send what is still batched: quantdesk's processes end with ``os._exit``, which skips
    the exporter's own flush at exit."""
    if _install.cache_info().currsize == 0:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if force_flush is not None:
        force_flush(FLUSH_TIMEOUT_MS)
