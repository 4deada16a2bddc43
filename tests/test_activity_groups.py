"""Every activity declares its queue once, and the worker of that queue registers it."""

from __future__ import annotations

import inspect

import pytest
from temporalio import activity
from temporalio.activity import _Definition

from activities.charts import ChartActivities
from activities.group import ActivityGroup, activities_on, declared, queue_of
from activities.market import load_bars
from shared.config import load_settings
from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
from workers.main import activity_groups, plan_for
from workers.roles import WorkerRole


def _registered_names(role: WorkerRole) -> list[str]:
    return [declared(fn).name for fn in plan_for(role, load_settings()).activities]


def test_each_declared_activity_runs_on_the_worker_of_its_queue_once() -> None:
    settings = load_settings()
    declared_queues = {}
    for source in activity_groups(settings):
        members = (
            [member for _, member in inspect.getmembers(type(source))]
            if isinstance(source, ActivityGroup)
            else [source]
        )
        for member in members:
            if callable(member) and _Definition.from_callable(member) is not None:
                declared_queues[declared(member).name] = queue_of(member)

    tools, charts = _registered_names(WorkerRole.TOOLS), _registered_names(WorkerRole.CHARTS)

    assert sorted(tools) == sorted(n for n, q in declared_queues.items() if q == TOOLS_QUEUE)
    assert sorted(charts) == sorted(n for n, q in declared_queues.items() if q == CHARTS_QUEUE)
    assert len(set(tools)) == len(tools) and len(set(charts)) == len(charts)
    assert {"resolve_as_of", "run_tool", "load_bars", "execute_orders"} <= set(tools)


def test_a_group_lists_its_activities_by_queue_bound_to_itself() -> None:
    charts = ChartActivities(load_settings())

    on_charts = charts.activities(CHARTS_QUEUE)

    assert {fn.__name__ for fn in on_charts} == {"render_pattern_chart", "render_trend_chart"}
    assert all(getattr(fn, "__self__", None) is charts for fn in on_charts)
    assert charts.activities(TOOLS_QUEUE) == []
    assert activities_on(TOOLS_QUEUE, [charts, load_bars]) == [load_bars]


def test_an_activity_without_a_declared_queue_is_refused_by_name() -> None:
    @activity.defn(name="undeclared")
    def undeclared(request: str) -> str:
        return request

    with pytest.raises(TypeError, match="undeclared.*declares no task queue.*activity_on"):
        queue_of(undeclared)
