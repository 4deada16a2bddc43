"""The run's LLM provider checked first, so an unknown one fails the run before any step."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.failures import as_temporal_failures
    from shared.llm.contracts import LlmChoice
    from shared.llm.providers import ProviderSpec, provider_spec


def check_provider(llm: LlmChoice) -> ProviderSpec:
    """The row of ``llm.provider``; an unknown provider fails the run naming ``llm.provider``."""
    with as_temporal_failures():
        return provider_spec(llm.provider)
