"""The worker roles: which task queue each worker process polls.

A role is what `quantdesk worker --role NAME` starts and what `quantdesk up`
starts one process of. Users scale a provider by starting more processes of its
role; the queue's rate limit holds however many run.
"""

from __future__ import annotations

from enum import StrEnum


class WorkerRole(StrEnum):
    """One kind of worker process."""

    WORKFLOWS = "workflows"
    TOOLS = "tools"
    CHARTS = "charts"
    BROKER = "broker"
    LLM_OPENAI = "llm-openai"
    LLM_ANTHROPIC = "llm-anthropic"
    LLM_OPENAI_COMPATIBLE = "llm-openai-compatible"
    LLM_OFFLINE = "llm-offline"


ROLE_NAMES: tuple[str, ...] = tuple(role.value for role in WorkerRole)
