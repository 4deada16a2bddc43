"""Task queues of the non-LLM work (LLM queues are columns of the provider registry).

Fixed names, because workflow code routes activities to them and cannot read
settings. Only the workflow queue is configurable: starters and the workflow
worker both read it from settings.
"""

from __future__ import annotations

DEFAULT_WORKFLOWS_QUEUE = "quantdesk"
TOOLS_QUEUE = "tools"
CHARTS_QUEUE = "charts"
BROKER_QUEUE = "broker"
"""Orders to real brokers: only the worker that polls it holds the broker's keys."""
