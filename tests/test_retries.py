"""Every activity step retries by kind of failure, and heartbeats where it says it does."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.activity import _Definition

import activities.autorun
import activities.backtest
import activities.broker
import activities.charts
import activities.evaluation
import activities.llm
import activities.market
import activities.portfolio
import activities.reflection
import activities.research
import activities.scan
import activities.tools
from workflows import retries

WORKFLOWS = Path(__file__).resolve().parent.parent / "workflows"
ACTIVITY_CALLS = {"execute_activity", "start_activity", "execute_activity_method", "run_activity"}
FORWARDERS = {"activity_calls.py"}
"""Modules whose activity call passes its caller's options on (the callers are checked)."""
OWNED_OPTIONS = {
    "retry_policy",
    "start_to_close_timeout",
    "schedule_to_close_timeout",
    "heartbeat_timeout",
}


def _string_constants(tree: ast.Module) -> Iterator[tuple[str, object]]:
    """Module-level ``NAME = "x"`` and ``A, B = "x", "y"`` assignments."""
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Constant):
                yield target.id, node.value.value
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for name, value in zip(target.elts, node.value.elts, strict=True):
                    if isinstance(name, ast.Name) and isinstance(value, ast.Constant):
                        yield name.id, value.value


def _activity_calls() -> list[tuple[str, ast.Call, str | None]]:
    """(where, call, activity name when written as a string or a module constant, or the
    function's name when called by reference) for every activity call in workflow code."""
    calls = []
    for path in sorted(WORKFLOWS.glob("*.py")):
        if path.name in FORWARDERS:
            continue
        tree = ast.parse(path.read_text())
        constants = dict(_string_constants(tree))
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) in ACTIVITY_CALLS:
                first = node.args[0] if node.args else None
                name = (
                    first.value
                    if isinstance(first, ast.Constant)
                    else constants.get(first.id, first.id if first.id in imported else None)
                    if isinstance(first, ast.Name)
                    else first.attr
                    if isinstance(first, ast.Attribute)
                    else None
                )
                calls.append((f"{path.name}:{node.lineno}", node, name))
    return calls


def _called_name(call: ast.Call) -> str | None:
    """``f`` of ``f(...)`` or ``x.f(...)``."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else None


def _durable_call(call: ast.Call) -> ast.Call | None:
    """The ``durable(...)`` a call's options are unpacked from, if any."""
    for keyword in call.keywords:
        value = keyword.value
        if (
            keyword.arg is None
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "durable"
        ):
            return value
    return None


def _activity_definitions() -> dict[str, object]:
    """Every activity quantdesk registers, by its Temporal name and by its function's name."""
    modules = (
        activities.autorun,
        activities.backtest,
        activities.broker,
        activities.charts,
        activities.evaluation,
        activities.llm,
        activities.market,
        activities.portfolio,
        activities.reflection,
        activities.research,
        activities.scan,
        activities.tools,
    )
    found: dict[str, object] = {}
    for module in modules:
        for _, member in inspect.getmembers(module):
            candidates = [member]
            if inspect.isclass(member):
                candidates = [fn for _, fn in inspect.getmembers(member, inspect.isfunction)]
            for fn in candidates:
                definition = _Definition.from_callable(fn) if callable(fn) else None
                if definition is not None and definition.name:
                    found[definition.name] = fn
                    found[getattr(fn, "__name__", definition.name)] = fn
    return found


def test_every_activity_step_takes_its_retry_options_from_durable() -> None:
    calls = _activity_calls()
    assert len(calls) >= 20
    offenders = [
        where
        for where, call, _ in calls
        if _durable_call(call) is None or OWNED_OPTIONS & {k.arg for k in call.keywords}
    ]
    assert offenders == []


def test_a_step_with_a_heartbeat_timeout_calls_an_activity_that_heartbeats() -> None:
    definitions = _activity_definitions()
    beating = []
    for where, call, name in _activity_calls():
        options = _durable_call(call)
        assert options is not None
        if not any(k.arg == "heartbeat" for k in options.keywords):
            continue
        if name is None:
            continue  # named by a parameter (QuantAgent's two charts); the others cover it
        fn = definitions[name]
        source = inspect.getsource(inspect.unwrap(fn))  # type: ignore[arg-type]
        heartbeats = hasattr(fn, "__wrapped__") or "heartbeat" in source
        assert heartbeats, f"{where}: {name} never heartbeats, so it would time out"
        beating.append(name)
    assert {"chat", "execute_orders", "score_backtest", "load_eval_windows", "submit_order"} <= set(
        beating
    )


def test_transient_faults_retry_for_the_whole_budget_with_capped_back_off() -> None:
    options = retries.durable(timedelta(minutes=1))
    policy = options["retry_policy"]
    assert policy.maximum_attempts == 0
    assert policy.maximum_interval == timedelta(minutes=1)
    assert options["schedule_to_close_timeout"] == retries.DEFAULT_RETRY_BUDGET
    assert {"InvalidInput", "ConfigError", "StructuredOutputError"} <= set(
        policy.non_retryable_error_types or []
    )
    # Retryable in some cases (429, 5xx): its own flag decides, so it must not be listed.
    assert "ProviderError" not in (policy.non_retryable_error_types or [])


def test_the_budget_is_configurable_and_never_shorter_than_one_attempt() -> None:
    try:
        retries.set_retry_budget(timedelta(minutes=5))
        assert retries.durable(timedelta(minutes=1))["schedule_to_close_timeout"] == timedelta(
            minutes=5
        )
        assert retries.durable(timedelta(minutes=10))["schedule_to_close_timeout"] == timedelta(
            minutes=10
        )
        with pytest.raises(ValueError, match="positive"):
            retries.set_retry_budget(timedelta(0))
    finally:
        retries.set_retry_budget(retries.DEFAULT_RETRY_BUDGET)


def test_the_workflows_worker_sets_the_budget_from_its_settings() -> None:
    from shared.config import load_settings
    from workers.main import plan_for
    from workers.roles import WorkerRole

    try:
        plan_for(WorkerRole.WORKFLOWS, load_settings(retry_budget_minutes=7))
        assert retries.retry_budget() == timedelta(minutes=7)
    finally:
        retries.set_retry_budget(retries.DEFAULT_RETRY_BUDGET)
