"""Activity groups: every activity declares, where it is defined, the task queue it runs on.

``@activity_on(TOOLS_QUEUE, "resolve_as_of")`` is ``@activity.defn(name="resolve_as_of")``
that also records the queue. A group is a class of such activities over shared
clients (``ResearchActivities(Services)``); an activity may also be a plain function.
Workers register what runs on their queue (``activities_on``), and workflows call an
activity by reference (``workflows.activity_calls.run_activity``), which routes it to
the queue it declares. So the queue is written once, mypy checks the request and the
result at every call, and no call can send an activity where no worker runs it.

The ``chat`` activity is the exception: its queue is its provider's
(``shared.llm.providers``), chosen per request.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from temporalio import activity

F = TypeVar("F", bound=Callable[..., Any])

_QUEUE = "__quantdesk_task_queue__"


def activity_on(queue: str, name: str) -> Callable[[F], F]:
    """Declare the activity ``name`` (its stable Temporal name), run by workers of ``queue``."""

    def declare(fn: F) -> F:
        setattr(fn, _QUEUE, queue)
        return activity.defn(name=name)(fn)

    return declare


def queue_of(fn: Callable[..., Any]) -> str:
    """The task queue ``fn`` (an activity function or method, bound or not) declares."""
    queue = getattr(fn, _QUEUE, None)
    if not isinstance(queue, str):
        raise TypeError(
            f"{getattr(fn, '__qualname__', fn)!r} declares no task queue: "
            "define it with @activity_on(queue, name)"
        )
    return queue


class ActivityGroup:
    """A class of activities (methods declared with ``activity_on``) over shared clients."""

    def activities(self, queue: str | None = None) -> list[Callable[..., Any]]:
        """The group's activities, bound to this instance, to register: all, or those that
        run on ``queue``."""
        return [
            getattr(self, name)
            for name, member in inspect.getmembers(type(self))
            if hasattr(member, _QUEUE) and queue in (None, queue_of(member))
        ]


def activities_on(queue: str, sources: Iterable[ActivityGroup | Callable[..., Any]]) -> list[Any]:
    """What a worker of ``queue`` registers: the activities among ``sources`` (groups, and
    activity functions) that run there."""
    found: list[Any] = []
    for source in sources:
        if isinstance(source, ActivityGroup):
            found += source.activities(queue)
        elif queue_of(source) == queue:
            found.append(source)
    return found
