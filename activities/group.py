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
from dataclasses import dataclass
from typing import Any, TypeVar

from temporalio import activity

F = TypeVar("F", bound=Callable[..., Any])

_DECLARED = "__quantdesk_activity__"


@dataclass(frozen=True)
class Declared:
    """What ``activity_on`` records on an activity."""

    queue: str
    name: str


def activity_on(queue: str, name: str) -> Callable[[F], F]:
    """Declare the activity ``name`` (its stable Temporal name), run by workers of ``queue``."""

    def declare(fn: F) -> F:
        setattr(fn, _DECLARED, Declared(queue, name))
        return activity.defn(name=name)(fn)

    return declare


def declared(fn: Callable[..., Any]) -> Declared:
    """The queue and name ``fn`` (an activity function or method, bound or not) declares."""
    found = getattr(fn, _DECLARED, None)
    if not isinstance(found, Declared):
        raise TypeError(
            f"{getattr(fn, '__qualname__', fn)!r} declares no task queue: "
            "define it with @activity_on(queue, name)"
        )
    return found


def queue_of(fn: Callable[..., Any]) -> str:
    """The task queue ``fn`` declares."""
    return declared(fn).queue


class ActivityGroup:
    """A class of activities (methods declared with ``activity_on``) over shared clients."""

    def activities(self, queue: str | None = None) -> list[Callable[..., Any]]:
        """The group's activities, bound to this instance, to register: all, or those that
        run on ``queue``."""
        return [
            getattr(self, name)
            for name, member in inspect.getmembers(type(self))
            if hasattr(member, _DECLARED) and queue in (None, queue_of(member))
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
