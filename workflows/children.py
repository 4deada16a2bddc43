"""Child runs by typed reference: which flow a ``Workflow.run`` reference starts.

Parents start children as ``workflow.execute_child_workflow(PipelineWorkflow.run, args,
...)``, so mypy checks the input against the child's ``run`` and types the result; the
flow's name (for summaries) is read from the same reference rather than written again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from shared.llm.contracts import Usage, UsageReport


class Counted(Protocol):
    """A child's result: it says what the child spent, which its parent adds to its own."""

    @property
    def usage(self) -> UsageReport | Usage: ...


def usage_report(usage: UsageReport | Usage, part: str) -> UsageReport:
    """A child's usage per agent; a digest's bare total (each agent's share stays in the
    child's own state) counts as ``part``'s."""
    if isinstance(usage, UsageReport):
        return usage
    return UsageReport(total=usage, by_agent={part: usage})


def flow_of(run: Callable[..., Awaitable[Any]]) -> str:
    """The workflow type ``run`` starts, e.g. ``Pipeline`` for ``PipelineWorkflow.run``."""
    # The SDK's own lookup, the one execute_child_workflow makes of the same reference.
    return workflow._Definition.must_from_run_fn(run).name or run.__qualname__
