"""Runs as trees: which runs the list shows, and each one's children counted by status.

An AutoRun starts a Scan, a Pipeline per name (each with its debates), a Portfolio and a
Reflect per decision that waits days on its timer, so a flat list of recent runs is all
children: the run a person just started is not on its first page. Both lists, the
console's Runs page and `quantdesk runs`, show root runs (``ParentWorkflowId IS NULL``)
with their children folded into a count by status, and a run's children on request
(``?parent=<id>``, ``--parent ID``), where each child folds its own.

Temporal's SQL visibility (the dev server's) cannot ``ORDER BY``: it lists running runs
first, then by close time. The list is sorted newest started first after it is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.service import RPCError

from shared.search_attributes import quoted

ROOTS = "ParentWorkflowId IS NULL"


def children_query(parent: str) -> str:
    """The visibility query of ``parent``'s direct children."""
    return f"ParentWorkflowId = {quoted(parent)}"


def tree_clause(parent: str, include_children: bool) -> str:
    """The clause that picks the runs of the list: a parent's children, every run, or roots."""
    if parent:
        return children_query(parent)
    return "" if include_children else ROOTS


def narrowed(query: str, tree: str) -> str:
    """``query`` (the filters) narrowed to the part of the tree listed (``tree_clause``)."""
    return " AND ".join(clause for clause in (query, tree) if clause)


@dataclass(frozen=True)
class Children:
    """A run's direct children, counted by status."""

    by_status: dict[str, int]

    @property
    def total(self) -> int:
        """How many children the run started."""
        return sum(self.by_status.values())

    @property
    def statuses(self) -> str:
        """``10 completed, 2 running``: the largest count first."""
        counts = sorted(self.by_status.items(), key=lambda item: (-item[1], item[0]))
        return ", ".join(f"{count} {status}" for status, count in counts)


def _status_name(value: object) -> str:
    """``TimedOut`` (a visibility group value) as the list writes it: ``timed out``."""
    text = str(value).strip('"')
    return "".join(f" {c.lower()}" if c.isupper() else c for c in text).strip()


async def children_of(client: Client, workflow_ids: Iterable[str]) -> dict[str, Children]:
    """Each run's children by status (one count per run, asked together); runs without
    children, or whose count Temporal cannot give now, are left out."""

    async def count(workflow_id: str) -> tuple[str, Children | None]:
        try:
            counted = await client.count_workflows(
                f"{children_query(workflow_id)} GROUP BY ExecutionStatus"
            )
        except RPCError:
            return workflow_id, None  # the list still shows the run; the next load asks again
        statuses = {
            _status_name(group.group_values[0]): group.count
            for group in counted.groups
            if group.group_values
        }
        return workflow_id, Children(statuses) if counted.count else None

    counted = await asyncio.gather(*(count(workflow_id) for workflow_id in workflow_ids))
    return {workflow_id: children for workflow_id, children in counted if children}
