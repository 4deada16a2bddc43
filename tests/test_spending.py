"""Spending limits, on real SQL and a real Temporal server.

The ledger: a call is held at its bound before it is made and settled after, a run's and a
book's limits stop the call that could pass them (naming the limit and the command that
raises it), and two processes' worth of concurrent reservations never pass a book's daily
limit (SQLite and PostgreSQL). The flows: a QuantAgent whose limit is reached waits at the
call, tells people, and completes once the limit is raised, with each call paid once; two
runs of one book at once stop together at the book's daily limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from activities.notify import NotifyActivities
from cli.estimate import estimate, estimate_table
from client.spending import raise_book_limit, raise_run_limit
from console.app import create_app
from shared.config import ENV_PREFIX, BudgetSettings, Settings
from shared.errors import InvalidInput, SpendingLimitReached
from shared.llm.contracts import SpendScope
from shared.llm.providers import OFFLINE_MODEL, QUEUE_OFFLINE
from shared.queues import TOOLS_QUEUE
from shared.spending.ledger import Limit, Spend, SpendLedger, book_scope, run_scope
from tests.cli_process import run_quantdesk
from tests.fakes.notifiers import Webhook
from tests.servers import notified_desk, quantagent_plans, running_workers
from workers.main import WorkerPlan
from workflows.notify import NotifyWorkflow
from workflows.quantagent import QuantAgentWorkflow

NO_DAILY = BudgetSettings()
DOLLAR = Spend(usd=1.0, tokens=100)


def test_a_call_is_held_then_settled_and_a_run_limit_stops_the_next(database_url: str) -> None:
    ledger = SpendLedger(database_url)
    scope = SpendScope(run="run-1", run_usd=2.2)

    ledger.reserve("run-1/1", scope, DOLLAR, NO_DAILY)
    ledger.reserve("run-1/1", scope, DOLLAR, NO_DAILY)  # a retried step replaces its own hold
    ledger.settle("run-1/1", Spend(usd=0.4, tokens=40))
    used = ledger.reserve("run-1/2", scope, DOLLAR, NO_DAILY)
    assert used == {"run:run-1": pytest.approx(1.4 / 2.2)}  # what the metric shows
    with pytest.raises(SpendingLimitReached) as stopped:
        ledger.reserve("run-1/3", scope, DOLLAR, NO_DAILY)

    assert str(stopped.value).startswith("spending limit reached: $2.40 of $2.20 for run run-1")
    assert "quantdesk budget raise run-1 --to N" in str(stopped.value)
    standing = ledger.run_standing("run-1")
    assert standing.spent == Spend(usd=1.4, tokens=140)
    assert standing.limit == Limit(usd=2.2)
    with pytest.raises(InvalidInput, match="not above the \\$1.40 spent"):
        ledger.raise_limit(run_scope("run-1"), Limit(usd=1), standing.spent)
    ledger.raise_limit(run_scope("run-1"), Limit(usd=5), standing.spent)
    assert ledger.reserve("run-1/3", scope, DOLLAR, NO_DAILY) == {
        "run:run-1": pytest.approx(2.4 / 5)
    }
    assert ledger.reserve("free/1", SpendScope(run="free"), DOLLAR, NO_DAILY) == {}
    assert ledger.run_standing("run-1").limit == Limit(usd=5)


def test_tokens_hold_a_model_without_a_price(database_url: str) -> None:
    ledger = SpendLedger(database_url)
    scope = SpendScope(run="local-1", run_tokens=250)
    unpriced = Spend(usd=0, tokens=100)

    ledger.reserve("local-1/1", scope, unpriced, NO_DAILY)
    ledger.reserve("local-1/2", scope, unpriced, NO_DAILY)
    with pytest.raises(SpendingLimitReached, match="token limit reached: 300 of 250 tokens"):
        ledger.reserve("local-1/3", scope, unpriced, NO_DAILY)


def test_a_books_daily_limit_holds_across_runs_and_its_own_limit_wins(database_url: str) -> None:
    ledger = SpendLedger(database_url)
    daily = BudgetSettings(daily_usd=3)

    for run in ("a", "b", "c"):
        ledger.reserve(f"{run}/1", SpendScope(run=run, book="desk"), DOLLAR, daily)
    with pytest.raises(SpendingLimitReached, match="for book desk on .* \\(UTC\\)") as stopped:
        ledger.reserve("d/1", SpendScope(run="d", book="desk"), DOLLAR, daily)
    ledger.reserve("e/1", SpendScope(run="e", book="other"), DOLLAR, daily)

    assert "quantdesk budget raise --book desk --to N" in str(stopped.value)
    spent = ledger.book_standing("desk", daily).spent
    ledger.raise_limit(book_scope("desk"), Limit(usd=10), spent)
    ledger.reserve("d/1", SpendScope(run="d", book="desk"), DOLLAR, daily)
    assert ledger.book_standing("desk", daily).limit == Limit(usd=10)


def test_concurrent_reservations_never_pass_a_books_limit(database_url: str) -> None:
    """Eight threads, each with its own ledger (its own connections, as two workers have),
    reserve at once: exactly the limit's worth get through."""
    daily = BudgetSettings(daily_usd=10)
    SpendLedger(database_url).close()  # the schema, once
    passed: list[str] = []
    start = threading.Barrier(8)

    def spend(worker: int) -> None:
        ledger = SpendLedger(database_url)
        start.wait()
        for call in range(5):
            key = f"w{worker}/{call}"
            with contextlib.suppress(SpendingLimitReached):
                ledger.reserve(key, SpendScope(run=f"w{worker}", book="busy"), DOLLAR, daily)
                passed.append(key)
        ledger.close()

    threads = [threading.Thread(target=spend, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(passed) == 10
    assert SpendLedger(database_url).book_standing("busy", daily).spent.usd == pytest.approx(10)


# -- in the flows ------------------------------------------------------------------------------

QUEUE = "test-spending"
PRICE = {"input": 40, "output": 40}
"""USD per million tokens for the offline analyst, so its calls cost cents."""
on_the_server = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def desk(
    s3_settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    hook: Webhook,
    dev_env: WorkflowEnvironment,
) -> Settings:
    folder = tmp_path_factory.mktemp("spending")
    return notified_desk(
        s3_settings,
        folder,
        QUEUE,
        dev_env,
        hook.url("desk"),
        prices={OFFLINE_MODEL: PRICE},
        budget={"daily_usd": 0.1},
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(dev_env: WorkflowEnvironment, desk: Settings) -> AsyncIterator[None]:
    plans = quantagent_plans(QUEUE, desk, QUEUE_OFFLINE)
    plans[0] = WorkerPlan(queue=QUEUE, workflows=[QuantAgentWorkflow, NotifyWorkflow])
    notify = NotifyActivities(desk).activities()
    plans[1] = WorkerPlan(
        queue=TOOLS_QUEUE, activities=[*plans[1].activities, *notify], threads=True
    )
    async with running_workers(dev_env.client, plans):
        yield


def _quantagent(**terms: Any) -> dict[str, Any]:
    return {"symbol": "GOOG", "timeframe": "1d", **terms}


async def _waiting_on_limit(handle: WorkflowHandle[Any, Any]) -> str:
    """The reason the run waits, once a call waits on a spending limit."""
    for _ in range(6_000):  # bounded; a loaded host answers queries slowly
        with contextlib.suppress(RPCError, WorkflowQueryFailedError):  # before its first task
            progress = await handle.query("progress")
            assert progress["phase"] != "done", f"{handle.id} ended without waiting"
            waiting = progress["waiting"]
            reasons = [r for r in waiting.values() if "limit reached" in r]
            if reasons:
                return str(reasons[0])
        await asyncio.sleep(0.02)
    raise AssertionError(f"{handle.id} never waited on its spending limit")


async def _chat_calls(client: Client, workflow_id: str) -> tuple[int, int]:
    """(chat steps completed, chat steps that failed) in the run's history."""
    scheduled: dict[int, str] = {}
    completed = failed = 0
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = (
                event.activity_task_scheduled_event_attributes.activity_type.name
            )
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            completed += scheduled[attrs.scheduled_event_id] == "chat"
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            attrs = event.activity_task_failed_event_attributes
            failed += scheduled[attrs.scheduled_event_id] == "chat"
    return completed, failed


@on_the_server
async def test_a_run_at_its_limit_waits_tells_and_completes_once_raised_paying_each_call_once(
    dev_env: WorkflowEnvironment, workers: None, desk: Settings, hook: Webhook
) -> None:
    run = f"qa-budget-{uuid.uuid4().hex[:6]}"
    handle = await dev_env.client.start_workflow(
        "QuantAgent", _quantagent(budget_usd=0.3), id=run, task_queue=QUEUE
    )
    reason = await _waiting_on_limit(handle)
    await dev_env.client.get_workflow_handle(f"{run}-notify-spending_limit:0").result()
    ledger = SpendLedger.from_settings(desk)
    before = ledger.run_standing(run)

    raised = await raise_run_limit(dev_env.client, desk, run, usd=5, tokens=None)
    result = await handle.result()
    completed, failed = await _chat_calls(dev_env.client, run)

    assert reason.startswith("spending limit reached: $") and "of $0.30 for run" in reason
    assert before.spent.usd <= 0.3 and raised.resumed == [run]
    [told] = [post for post in hook.posts if run in post.body["title"]]
    assert "spending limit reached" in told.body["message"]
    assert f"quantdesk budget raise {run} --to N" in told.body["message"]
    assert result["decision"]["decision"] in ("LONG", "SHORT")
    after = ledger.run_standing(run)
    assert after.spent.usd == pytest.approx(result["usage"]["total"]["cost_usd"])
    assert completed == result["usage"]["total"]["calls"] and failed >= 1


@on_the_server
async def test_a_books_daily_limit_holds_across_two_runs_at_once(
    dev_env: WorkflowEnvironment, workers: None, desk: Settings
) -> None:
    book = f"book{uuid.uuid4().hex[:6]}"
    runs = [f"qa-{book}-{n}" for n in (1, 2)]
    handles = [
        await dev_env.client.start_workflow(
            "QuantAgent", _quantagent(book=book), id=run, task_queue=QUEUE
        )
        for run in runs
    ]
    for handle in handles:
        assert "for book" in await _waiting_on_limit(handle)
    ledger = SpendLedger.from_settings(desk)
    at_limit = ledger.book_standing(book, desk.budget)

    raised = await raise_book_limit(dev_env.client, desk, book, usd=10, tokens=None)
    results = [await handle.result() for handle in handles]

    assert at_limit.spent.usd <= 0.1 and at_limit.limit.usd == 0.1
    assert raised.resumed == runs
    spent = ledger.book_standing(book, desk.budget).spent.usd
    assert spent == pytest.approx(sum(r["usage"]["total"]["cost_usd"] for r in results))


@on_the_server
async def test_an_estimate_from_runs_like_it_holds_the_next_run(
    dev_env: WorkflowEnvironment, workers: None, desk: Settings
) -> None:
    client = dev_env.client
    like = _quantagent(lookback=60, budget_usd=50)
    for _ in range(3):
        await client.execute_workflow(
            "QuantAgent", like, id=f"qa-like-{uuid.uuid4().hex[:6]}", task_queue=QUEUE
        )
    other = f"qa-other-{uuid.uuid4().hex[:6]}"  # another size: not counted
    await client.execute_workflow(
        "QuantAgent", _quantagent(lookback=80), id=other, task_queue=QUEUE
    )

    expected = await estimate(client, desk, "QuantAgent", _quantagent(lookback=60, budget_usd=9))
    run = f"qa-next-{uuid.uuid4().hex[:6]}"
    await client.execute_workflow("QuantAgent", like, id=run, task_queue=QUEUE)
    actual = SpendLedger.from_settings(desk).run_totals(run)

    assert len(expected.runs) >= 3 and other not in expected.runs
    assert expected.calls and expected.tokens and expected.usd
    assert expected.calls.holds(actual.calls) and expected.tokens.holds(actual.tokens)
    assert expected.usd.holds(actual.usd) and actual.usd > 0
    assert "expected from" in str(estimate_table(expected).title)  # type: ignore[union-attr]


@on_the_server
async def test_the_console_shows_spend_against_the_limit_and_raises_it(
    dev_env: WorkflowEnvironment, workers: None, desk: Settings
) -> None:
    run = f"qa-console-{uuid.uuid4().hex[:6]}"
    handle = await dev_env.client.start_workflow(
        "QuantAgent", _quantagent(budget_usd=0.3), id=run, task_queue=QUEUE
    )
    await _waiting_on_limit(handle)
    app = create_app(desk)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://console"
    ) as console:
        live = (await console.get(f"/runs/{run}/live")).text
        refused = await console.post(f"/runs/{run}/budget", data={"to": "0.001"})
        raised = await console.post(f"/runs/{run}/budget", data={"to": "5"})
        await handle.result()
        done = (await console.get(f"/runs/{run}/live")).text

    assert "this run&#39;s tree: spent" in live and "of <b>$0.30</b>" in live
    assert 'id="raise-budget"' in live
    assert refused.status_code == 422 and "is not above" in refused.text
    assert raised.status_code == 303 and "resumed" in raised.headers["location"]
    assert "of <b>$5.00</b>" in done and 'id="raise-budget"' not in done


def test_quantdesk_run_estimate_prints_it_and_starts_nothing(
    desk: Settings, dev_env: WorkflowEnvironment, workers: None
) -> None:
    """After the runs of the test above: the CLI's own payload (its defaults) finds them."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    access, secret = desk.s3_credentials()
    env = {
        **clean,
        f"{ENV_PREFIX}S3__ENDPOINT": desk.s3.endpoint,
        f"{ENV_PREFIX}S3__ACCESS_KEY": access,
        f"{ENV_PREFIX}S3__SECRET_KEY": secret,
        f"{ENV_PREFIX}TEMPORAL__ADDRESS": desk.temporal.address,
        f"{ENV_PREFIX}DATABASE_URL": desk.resolved_database_url,
        f"{ENV_PREFIX}DATA_DIR": str(desk.data_dir),
        "COLUMNS": "160",
    }
    args = ("run", "quantagent", "GOOG", "--lookback", "60", "--budget", "9", "--estimate")
    result = run_quantdesk(env, *args)

    assert result.returncode == 0, result.stderr
    assert "QuantAgent: expected from" in result.stdout and "cost" in result.stdout
    assert "$" in result.stdout.split("cost", 1)[1]
