"""The worker roles: which task queue each worker process polls.

A role is what `quantdesk worker --role NAME` serves; `quantdesk up` runs every role in
one process (`up --split`: a process per role). Users scale a provider by starting more
processes of its role; the queue's rate limit holds however many run. An LLM role none of
whose providers could answer (no key, no URL, no local model) is ``unanswered``: `up` says
so, and its queue is still polled so a run on it waits naming the key.
"""

from __future__ import annotations

from enum import StrEnum

from shared.config import Settings, provider_setting
from shared.llm.providers import ClientKind, ProviderSpec, providers_on_queue


class WorkerRole(StrEnum):
    """One kind of worker process."""

    WORKFLOWS = "workflows"
    TOOLS = "tools"
    CHARTS = "charts"
    BROKER = "broker"
    LLM_OPENAI = "llm-openai"
    LLM_ANTHROPIC = "llm-anthropic"
    LLM_OPENAI_COMPATIBLE = "llm-openai-compatible"
    LLM_LANGCHAIN = "llm-langchain"
    LLM_OFFLINE = "llm-offline"


ROLE_NAMES: tuple[str, ...] = tuple(role.value for role in WorkerRole)


def unanswered(settings: Settings) -> dict[WorkerRole, str]:
    """The LLM roles whose providers none could answer as configured, each with what would
    make one answer (their key or URL variables)."""
    left: dict[WorkerRole, str] = {}
    for role in WorkerRole:
        specs = providers_on_queue(role.value)
        if not specs or any(settings.can_answer(spec) for spec in specs):
            continue
        left[role] = _what_would_answer(specs)
    return left


def _what_would_answer(specs: list[ProviderSpec]) -> str:
    """Why none of ``specs`` can answer, naming the variables that would make one."""
    classes = [
        provider_setting(spec.name, "class")
        for spec in specs
        if spec.client is ClientKind.LANGCHAIN
    ]
    if classes:
        return f"no LangChain chat model class is set ({', '.join(classes)})"
    variables = sorted(
        {v for spec in specs for v in (spec.key_env, spec.base_url_env) if v is not None}
    )
    named = ", ".join(variables[:4]) + (", ..." if len(variables) > 4 else "")
    local = " or a local model" if any(spec.embedded for spec in specs) else ""
    return f"no provider on it has a key or URL ({named}){local}"


def serving_roles(settings: Settings) -> tuple[WorkerRole, ...]:
    """The roles `up` starts when none are named: every one but the ``unanswered``."""
    left = unanswered(settings)
    return tuple(role for role in WorkerRole if role not in left)
