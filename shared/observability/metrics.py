"""What quantdesk measures, named in one place, recorded through Temporal's meter.

Every process exports through the Temporal SDK's own Prometheus exporter
(``workers.metrics_exporter``), so the SDK's metrics and ours share one endpoint and
one naming choice. Ours are recorded through the meter Temporal hands an activity
(``activity.metric_meter()``) or a workflow (``workflow.metric_meter()``, which records
nothing while a workflow replays, so a replay never counts twice). Where no exporter is
configured the meter is a no-op: measuring costs nothing when off.

Names follow the OpenTelemetry GenAI conventions as Prometheus writes them: the SDK's
exporter drops a metric whose name or label has a dot (with one log line), so
``gen_ai.client.token.usage`` is ``gen_ai_client_token_usage`` and ``gen_ai.request.model``
is ``gen_ai_request_model``. Counters gain ``_total`` on export. The SDK's counters take
integers, so cost is counted in micro-dollars (``/ 1e6`` in a query gives USD).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from shared.llm.contracts import Usage


class _Instrument(Protocol):
    def add(self, value: int, additional_attributes: dict[str, str]) -> None: ...


class _Recorder(Protocol):
    def record(self, value: Any, additional_attributes: dict[str, str]) -> None: ...


class _Setter(Protocol):
    def set(self, value: float, additional_attributes: dict[str, str]) -> None: ...


class MetricMeter(Protocol):
    """What these functions use of Temporal's ``MetricMeter`` (an activity's or a workflow's),
    named here so the shared code does not import the SDK."""

    def create_counter(self, name: str, description: str, unit: str) -> _Instrument: ...
    def create_histogram(self, name: str, description: str, unit: str) -> _Recorder: ...
    def create_histogram_float(self, name: str, description: str, unit: str) -> _Recorder: ...
    def create_gauge_float(self, name: str, description: str, unit: str) -> _Setter: ...


Kind = Literal["counter", "histogram", "histogram_float", "gauge_float"]


@dataclass(frozen=True)
class Metric:
    """One metric: its exported name (before the SDK's ``_total``), kind, unit and labels."""

    name: str
    kind: Kind
    description: str
    unit: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] | None = None

    @property
    def exported(self) -> str:
        """The name a query uses: counters end in ``_total``."""
        return f"{self.name}_total" if self.kind == "counter" else self.name


PROVIDER = "gen_ai_provider_name"
MODEL = "gen_ai_request_model"
OPERATION = "gen_ai_operation_name"
TOKEN_TYPE = "gen_ai_token_type"
AGENT = "agent"
OUTCOME = "outcome"

_GENAI_LABELS = (OPERATION, PROVIDER, MODEL, AGENT)
# The bucket boundaries the GenAI conventions advise for tokens (powers of 4) and for
# seconds (doubling from 10 ms).
_TOKEN_BUCKETS = tuple(float(4**power) for power in range(12))
_SECOND_BUCKETS = tuple(round(0.01 * 2**power, 2) for power in range(14))

TOKEN_USAGE = Metric(
    "gen_ai_client_token_usage",
    "histogram",
    "tokens per model call, by type (input or output)",
    "{token}",
    (*_GENAI_LABELS, TOKEN_TYPE),
    _TOKEN_BUCKETS,
)
OPERATION_DURATION = Metric(
    "gen_ai_client_operation_duration_seconds",
    "histogram_float",
    "seconds per model call (a chat activity's turn, its repairs included)",
    "s",
    (*_GENAI_LABELS, OUTCOME),
    _SECOND_BUCKETS,
)
MODEL_CALLS = Metric(
    "quantdesk_model_calls",
    "counter",
    "model calls by outcome: ok, cached (answered from the reply cache) or the error's type",
    "{call}",
    (*_GENAI_LABELS, OUTCOME),
)
MODEL_COST = Metric(
    "quantdesk_model_cost_microusd",
    "counter",
    "what model calls cost at the worker's price table, in millionths of a US dollar",
    "1e-6 USD",
    _GENAI_LABELS,
)
MODEL_REPAIRS = Metric(
    "quantdesk_model_repairs",
    "counter",
    "repair calls after replies that missed their schema",
    "{call}",
    _GENAI_LABELS,
)
UNPRICED_CALLS = Metric(
    "quantdesk_model_unpriced_calls",
    "counter",
    "model calls to a model with no price (their cost is unknown)",
    "{call}",
    _GENAI_LABELS,
)
TOOL_CALLS = Metric(
    "quantdesk_tool_calls",
    "counter",
    "tool calls by tool, the data vendor that answered, and outcome (ok or error)",
    "{call}",
    ("tool", "vendor", OUTCOME),
)
TOOL_DURATION = Metric(
    "quantdesk_tool_duration_seconds",
    "histogram_float",
    "seconds per tool call",
    "s",
    ("tool", "vendor", OUTCOME),
    _SECOND_BUCKETS,
)
DECISIONS = Metric(
    "quantdesk_decisions",
    "counter",
    "decisions made, by flow and rating (recorded by the workflow, never on replay)",
    "{decision}",
    ("flow", "rating"),
)

ORDERS = Metric(
    "quantdesk_orders",
    "counter",
    "orders a plan sent to its broker, by how each ended (filled, canceled, refused...)",
    "{order}",
    ("broker", OUTCOME),
)
FILLS = Metric(
    "quantdesk_fills",
    "counter",
    "fills booked from the broker, each once",
    "{fill}",
    ("broker",),
)
DRIFT = Metric(
    "quantdesk_drift_found",
    "counter",
    "reconciliations that found the book and its broker apart",
    "{reconciliation}",
    ("portfolio",),
)
PERSON_WAITS = Metric(
    "quantdesk_person_waits",
    "counter",
    "times a run began waiting for a person (an approval)",
    "{wait}",
    ("wait",),
)
PERSON_MARKS = Metric(
    "quantdesk_person_wait_marks",
    "counter",
    "a person's answer still missing at a desk mark (a reminder, an escalation)",
    "{mark}",
    ("wait", "mark"),
)
PERSON_WAIT_DURATION = Metric(
    "quantdesk_person_wait_seconds",
    "histogram_float",
    "how long runs waited for a person's answer, by how the wait ended",
    "s",
    ("wait", OUTCOME),
    tuple(float(60 * minutes) for minutes in (1, 5, 15, 30, 60, 120, 240, 480, 1440)),
)
SPEND_USED = Metric(
    "quantdesk_spend_limit_used_ratio",
    "gauge_float",
    "the share of a spending limit used, with the call just reserved (a run's or a book's day)",
    "1",
    ("scope",),
)

METRICS: tuple[Metric, ...] = (
    TOKEN_USAGE,
    OPERATION_DURATION,
    MODEL_CALLS,
    MODEL_COST,
    MODEL_REPAIRS,
    UNPRICED_CALLS,
    TOOL_CALLS,
    TOOL_DURATION,
    DECISIONS,
    ORDERS,
    FILLS,
    DRIFT,
    PERSON_WAITS,
    PERSON_MARKS,
    PERSON_WAIT_DURATION,
    SPEND_USED,
)
"""Every metric of ours: the exporter's bucket overrides and the docs' table come from it."""

SDK_METRICS: dict[str, bool] = {
    "temporal_num_pollers": False,
    "temporal_workflow_task_schedule_to_start_latency": False,
    "temporal_activity_schedule_to_start_latency": False,
    "temporal_workflow_completed_total": False,
    "temporal_sticky_cache_size": False,
    "temporal_workflow_task_execution_failed_total": True,
}
"""The Temporal SDK's metrics the alert rules and the dashboard read, as exported here; True
for a counter that appears only once something failed."""

OK = "ok"
CACHED = "cached"


def _add(meter: MetricMeter, metric: Metric, value: int, labels: dict[str, str]) -> None:
    if value:
        meter.create_counter(metric.name, metric.description, metric.unit).add(value, labels)


def _record(meter: MetricMeter, metric: Metric, value: float, labels: dict[str, str]) -> None:
    if metric.kind == "histogram_float":
        meter.create_histogram_float(metric.name, metric.description, metric.unit).record(
            value, labels
        )
    else:
        meter.create_histogram(metric.name, metric.description, metric.unit).record(
            int(value), labels
        )


@dataclass(frozen=True)
class ModelCall:
    """Who called which model: the labels every model-call metric carries."""

    provider: str
    model: str
    agent: str
    operation: str = "chat"

    @property
    def labels(self) -> dict[str, str]:
        return {
            OPERATION: self.operation,
            PROVIDER: self.provider,
            MODEL: self.model,
            AGENT: self.agent,
        }

    def answered(self, meter: MetricMeter, usage: Usage, seconds: float, *, cached: bool) -> None:
        """A turn that was answered: its calls, tokens, cost, repairs and time."""
        labels = self.labels
        outcome = {**labels, OUTCOME: CACHED if cached else OK}
        _add(meter, MODEL_CALLS, usage.calls, outcome)
        _record(meter, OPERATION_DURATION, seconds, outcome)
        for kind, tokens in (("input", usage.input_tokens), ("output", usage.output_tokens)):
            _record(meter, TOKEN_USAGE, tokens, {**labels, TOKEN_TYPE: kind})
        _add(meter, MODEL_COST, round(usage.cost_usd * 1_000_000), labels)
        _add(meter, MODEL_REPAIRS, usage.repairs, labels)
        _add(meter, UNPRICED_CALLS, usage.unpriced_calls, labels)

    def failed(self, meter: MetricMeter, error_type: str, seconds: float) -> None:
        """A turn that failed (this attempt): counted under the error's type."""
        outcome = {**self.labels, OUTCOME: error_type}
        _add(meter, MODEL_CALLS, 1, outcome)
        _record(meter, OPERATION_DURATION, seconds, outcome)


def tool_called(
    meter: MetricMeter, tool: str, vendor: str | None, ok: bool, seconds: float
) -> None:
    """One tool call, by the vendor that answered (``none`` for tools that read no vendor)."""
    labels = {"tool": tool, "vendor": vendor or "none", OUTCOME: OK if ok else "error"}
    _add(meter, TOOL_CALLS, 1, labels)
    _record(meter, TOOL_DURATION, seconds, labels)


def decided(meter: MetricMeter, flow: str, rating: str) -> None:
    """A decision a flow made; pass ``workflow.metric_meter()``, which is silent on replay."""
    _add(meter, DECISIONS, 1, {"flow": flow, "rating": rating})


def orders_ended(meter: MetricMeter, broker: str, outcomes: list[str], fills: int) -> None:
    """A plan's orders as they ended at ``broker``, and the fills booked (workflow meter)."""
    for outcome in outcomes:
        _add(meter, ORDERS, 1, {"broker": broker, OUTCOME: outcome})
    _add(meter, FILLS, fills, {"broker": broker})


def drift_found(meter: MetricMeter, portfolio: str) -> None:
    """A reconciliation that found drift (workflow meter)."""
    _add(meter, DRIFT, 1, {"portfolio": portfolio})


def person_waits(meter: MetricMeter, wait: str) -> None:
    """A run begins waiting for a person (workflow meter)."""
    _add(meter, PERSON_WAITS, 1, {"wait": wait})


def person_still_missing(meter: MetricMeter, wait: str, mark: str) -> None:
    """A desk mark (reminder, escalation) passed with the answer still missing."""
    _add(meter, PERSON_MARKS, 1, {"wait": wait, "mark": mark})


def person_waited(meter: MetricMeter, wait: str, outcome: str, seconds: float) -> None:
    """A wait for a person ended: answered, or timed out."""
    _record(meter, PERSON_WAIT_DURATION, seconds, {"wait": wait, OUTCOME: outcome})


def spend_used(meter: MetricMeter, scope: str, ratio: float) -> None:
    """The share of the limit ``scope`` ("run:<id>", "book:<name>") used so far."""
    meter.create_gauge_float(SPEND_USED.name, SPEND_USED.description, SPEND_USED.unit).set(
        ratio, {"scope": scope}
    )
