"""Where a run's wall time went, read from the histories the server recorded.

The server stamps every event, so a closed run (with its children) tells, without any
instrumentation of the workers, when an LLM call was in flight, when a workflow task was
being processed, and when another activity ran. Each instant of the run is put in the first
of these that covers it (an LLM call wins), and what none covers is time between them:
the server writing and dispatching, a child being started.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

Span = tuple[float, float]

LLM_ACTIVITY = "chat"


@dataclass(frozen=True)
class Breakdown:
    """Seconds of one run's wall time, by what was happening."""

    llm: float
    workflow_tasks: float
    other_activities: float
    between: float

    def line(self) -> str:
        """The breakdown in one printed line."""
        return (
            f"LLM call in flight {self.llm:5.2f} s, otherwise: workflow tasks "
            f"{self.workflow_tasks:4.2f} s, other activities {self.other_activities:4.2f} s, "
            f"between steps {self.between:4.2f} s"
        )


def _seconds(event: HistoryEvent) -> float:
    stamp: datetime = event.event_time.ToDatetime()
    return stamp.timestamp()


def _spans(events: list[HistoryEvent]) -> tuple[list[Span], list[Span], list[Span]]:
    """The LLM calls', the workflow tasks' and the other activities' spans of one history."""
    by_id = {event.event_id: event for event in events}
    # The time-skipping server leaves started_event_id unset: the start is found by what
    # it started (an activity's scheduling, or the task just before a completion).
    activity_started = {
        event.activity_task_started_event_attributes.scheduled_event_id: event
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    }
    llm: list[Span] = []
    tasks: list[Span] = []
    other: list[Span] = []
    task_started: HistoryEvent | None = None
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started = event
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            assert task_started is not None, "a workflow task completed before one started"
            tasks.append((_seconds(task_started), _seconds(event)))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attributes = event.activity_task_completed_event_attributes
            scheduled = by_id[
                attributes.scheduled_event_id
            ].activity_task_scheduled_event_attributes
            span = (_seconds(activity_started[attributes.scheduled_event_id]), _seconds(event))
            (llm if scheduled.activity_type.name == LLM_ACTIVITY else other).append(span)
    return llm, tasks, other


def _covered(spans: Iterable[Span], start: float, end: float) -> list[Span]:
    """The union of ``spans`` within [start, end], as disjoint spans."""
    union: list[Span] = []
    for low, high in sorted((max(a, start), min(b, end)) for a, b in spans):
        if high <= low:
            continue
        if union and low <= union[-1][1]:
            union[-1] = (union[-1][0], max(union[-1][1], high))
        else:
            union.append((low, high))
    return union


def _minus(spans: list[Span], taken: list[Span]) -> list[Span]:
    """``spans`` with every instant of ``taken`` removed."""
    left: list[Span] = []
    for low, high in spans:
        cursor = low
        for a, b in taken:
            if b <= cursor or a >= high:
                continue
            if a > cursor:
                left.append((cursor, a))
            cursor = max(cursor, b)
        if cursor < high:
            left.append((cursor, high))
    return left


def _length(spans: list[Span]) -> float:
    return sum(high - low for low, high in spans)


async def breakdown(client: Client, workflow_ids: Iterable[str]) -> Breakdown:
    """Where the wall time of the runs ``workflow_ids`` (a run and its children; the first
    is the outermost) went."""
    llm: list[Span] = []
    tasks: list[Span] = []
    other: list[Span] = []
    start = end = None
    for workflow_id in workflow_ids:
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        events = list(history.events)
        if start is None:
            start, end = _seconds(events[0]), _seconds(events[-1])
        calls, workflow_tasks, activities = _spans(events)
        llm += calls
        tasks += workflow_tasks
        other += activities
    assert start is not None and end is not None, "no workflow id given"
    in_flight = _covered(llm, start, end)
    processing = _minus(_covered(tasks, start, end), in_flight)
    running = _minus(_minus(_covered(other, start, end), in_flight), processing)
    wall = end - start
    accounted = _length(in_flight) + _length(processing) + _length(running)
    return Breakdown(
        llm=_length(in_flight),
        workflow_tasks=_length(processing),
        other_activities=_length(running),
        between=wall - accounted,
    )
