"""Every workflow class the ``workflows`` worker role runs."""

from __future__ import annotations

from workflows.quantagent import QuantAgentWorkflow

WORKFLOWS: list[type] = [QuantAgentWorkflow]
