"""The model call's span, with the OpenTelemetry GenAI attributes.

The chat activity opens it inside the activity's own span (Temporal's interceptor makes that
one), so a trace shows each agent's turn under its activity, with the model, the tokens
and what it cost. OpenTelemetry's API only: where no tracer provider is installed
(``workers.tracing``), the tracer is a no-op and so is this.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from shared.llm.contracts import Usage

_TRACER = trace.get_tracer("quantdesk")


@contextmanager
def model_call_span(provider: str, model: str, agent: str) -> Iterator[Span]:
    """A span for one chat turn of ``agent`` on ``provider``'s ``model``; a failure raised
    inside marks it as an error of that type."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.agent.name": agent,
    }
    name = f"chat {model}"
    with _TRACER.start_as_current_span(
        name, kind=SpanKind.CLIENT, attributes=attributes, record_exception=False
    ) as span:
        try:
            yield span
        except Exception as error:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            raise


def record_usage(span: Span, usage: Usage, *, cached: bool) -> None:
    """What the turn used: tokens (the conventions' names), calls, cost, and a cache hit."""
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    span.set_attribute("quantdesk.model_calls", usage.calls)
    span.set_attribute("quantdesk.cost_usd", usage.cost_usd)
    span.set_attribute("quantdesk.cached", cached)
