"""The Prometheus endpoint of a quantdesk process: the Temporal SDK's own exporter.

One exporter serves the SDK's metrics (workflow tasks, schedule-to-start latencies, pollers,
sticky cache...) and ours (``shared.observability.metrics``), with one naming choice, frozen
here and documented in docs/monitoring.md: counters end in ``_total``, durations are
seconds, no unit suffix is added (ours carry theirs in their names), the SDK's metrics keep
its ``temporal_`` prefix.
"""

from __future__ import annotations

import functools

from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from shared.config import ENV_PREFIX, MetricsSettings
from shared.errors import ConfigError
from shared.observability.metrics import METRICS


def prometheus_config(bind_address: str) -> PrometheusConfig:
    """The exporter's configuration: the frozen naming choice, and our histograms' buckets."""
    return PrometheusConfig(
        bind_address=bind_address,
        counters_total_suffix=True,
        unit_suffix=False,
        durations_as_seconds=True,
        histogram_bucket_overrides={m.name: m.buckets for m in METRICS if m.buckets},
    )


def metrics_runtime(metrics: MetricsSettings) -> Runtime | None:
    """A Temporal runtime exporting at ``metrics``' address; None when no port is set (the
    default runtime, whose meter records nothing)."""
    if metrics.port is None:
        return None
    return _exporting(f"{metrics.host}:{metrics.port}")


@functools.cache
def _exporting(address: str) -> Runtime:
    """One runtime per address for the process's life: a client connected again (the
    console's, after Temporal came back) exports through the endpoint already bound."""
    try:
        return Runtime(telemetry=TelemetryConfig(metrics=prometheus_config(address)))
    except RuntimeError as error:
        raise ConfigError(
            f"{ENV_PREFIX}METRICS__PORT",
            f"cannot serve metrics at {address} ({error})",
            fix="Choose a free port, or unset it.",
        ) from None
