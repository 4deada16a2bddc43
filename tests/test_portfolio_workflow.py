"""The Portfolio workflow offline: time-skipping server, real S3, a real SQLite book.

A book holding an overweight stock, one the Pipeline says to sell and some
T-bills is run against a Scan summary stored in S3 and the Pipeline decisions
of its candidates. The runs check what the PM saw, the limits, the sweep, the
approval update and its timeout, a re-run with the same workflow id, and a
worker that dies in the middle of the fills (on the dev server, real timers). The desk they
run (market, Scan, decisions, tools worker, the calls that start and read a run) is
tests/portfolio_desk.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import AsyncIterator
from decimal import Decimal
from itertools import cycle
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.llm import LlmActivities
from shared.agents.pipeline.schemas import Rating
from shared.agents.portfolio.fates import Fate
from shared.agents.portfolio.roles import BOOK_MANAGER, MACRO_SUMMARIZER, MICRO_SUMMARIZER
from shared.config import Settings
from shared.data.contracts import TBILL_ETF
from shared.llm.prompt_budget import estimated_tokens
from shared.llm.providers import QUEUE_OFFLINE
from shared.memory import MemoryStore
from shared.portfolio.broker import trade_key
from shared.portfolio.models import DecisionStatus, Side, TradeOutcome, TradeRequest
from shared.portfolio.orders import Origin
from shared.portfolio.store import PortfolioStore
from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore
from tests.portfolio_desk import (
    AS_OF,
    CLOSE,
    DECISIONS,
    LESSON,
    QUEUE,
    SCAN,
    SCAN_KEY,
    SIM,
    Services,
    chats_of,
    decision_of,
    memory_with_lesson,
    run_input,
    start_run,
    tools_plan,
    until_waiting,
)
from tests.servers import running_workers
from workers.main import WorkerPlan, build_worker
from workflows.notify import NotifyWorkflow
from workflows.portfolio import (
    PendingPlan,
    PortfolioProgress,
    PortfolioResult,
    PortfolioWorkflow,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def services(
    ts_env: WorkflowEnvironment, s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Services]:
    tmp = tmp_path_factory.mktemp("portfolio")
    url = f"sqlite:///{tmp / 'book.db'}"
    store = PortfolioStore(url)
    objects = ObjectStore.from_settings(s3_settings)
    objects.put_bytes(
        ObjectRef(bucket=PAYLOADS_BUCKET, key=SCAN_KEY), SCAN.model_dump_json().encode()
    )
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[PortfolioWorkflow, NotifyWorkflow]),
        tools_plan(s3_settings, store, memory_with_lesson(tmp / "memory.db"), objects),
        WorkerPlan(
            queue=QUEUE_OFFLINE, activities=[LlmActivities(s3_settings, QUEUE_OFFLINE).chat]
        ),
    ]
    async with running_workers(ts_env.client, plans):
        yield Services(store=store, url=url, objects=objects, settings=s3_settings)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def held_run(
    ts_env: WorkflowEnvironment, services: Services
) -> tuple[WorkflowHandle[Any, Any], PortfolioResult]:
    """A book 18% in QBTX, holding PTRQ (rated Sell) and T-bills, run with the Scan."""
    book = services.book("held", {"QBTX": 120, "PTRQ": 25, TBILL_ETF: 100})
    handle = await start_run(ts_env, run_input(book))
    return handle, await handle.result()


async def test_the_pm_sees_prices_cash_value_holdings_risk_and_limits(
    ts_env: WorkflowEnvironment, held_run: tuple[Any, PortfolioResult]
) -> None:
    handle, result = held_run
    chats = await chats_of(ts_env, handle)
    pm = chats[BOOK_MANAGER][0]

    context = pm.inputs
    assert Decimal(context["book"]["cash"]) == result.book.cash
    assert Decimal(context["book"]["total_value"]) == result.book.total_value
    assert context["book"]["limits"]["max_sector_weight"] == 0.35
    held = {h["position"]["symbol"]: h for h in context["holdings"]}
    assert Decimal(held["QBTX"]["position"]["price"]) == Decimal(str(CLOSE["QBTX"]))
    assert held["PTRQ"]["decision"]["rating"] == "Sell"
    quoted = {c["candidate"]["ticker"]: c["quote"]["price"] for c in context["candidates"]}
    assert Decimal(quoted["LMNW"]) == Decimal(str(CLOSE["LMNW"]))
    assert context["risk"]["annualised_volatility"]["value"] > 0
    prompt = pm.messages[-1].content
    assert f"{CLOSE['LMNW']:,.2f}" in prompt and "annualised volatility" in prompt
    assert "at most 35% in one GICS sector" in prompt


async def test_decisions_given_by_key_reach_the_agents_as_if_given_inline(
    ts_env: WorkflowEnvironment, services: Services, held_run: tuple[Any, PortfolioResult]
) -> None:
    key = ObjectRef(bucket=PAYLOADS_BUCKET, key=f"tests/decisions-{uuid.uuid4().hex}.json")
    services.objects.put_bytes(key, json.dumps(DECISIONS).encode())
    book = services.book("held-by-key", {"QBTX": 120, "PTRQ": 25, TBILL_ETF: 100})

    handle = await start_run(ts_env, run_input(book, decisions=[], decisions_key=key.model_dump()))
    await handle.result()

    by_key = (await chats_of(ts_env, handle))[BOOK_MANAGER][0].inputs
    inline = (await chats_of(ts_env, held_run[0]))[BOOK_MANAGER][0].inputs
    assert by_key["holdings"] == inline["holdings"]
    assert by_key["candidates"] == inline["candidates"]


async def test_macro_and_micro_run_side_by_side(
    ts_env: WorkflowEnvironment, held_run: tuple[Any, PortfolioResult]
) -> None:
    chats = await chats_of(ts_env, held_run[0])
    macro, micro = chats[MACRO_SUMMARIZER], chats[MICRO_SUMMARIZER]
    assert max(macro[1], micro[1]) < min(macro[2], micro[2])
    assert chats[BOOK_MANAGER][1] > max(macro[2], micro[2])


async def test_the_run_sells_what_the_review_exits_buys_the_ranked_and_keeps_the_limits(
    held_run: tuple[Any, PortfolioResult], services: Services
) -> None:
    _, result = held_run

    verdicts = {v.ticker: v.action.value for v in result.review.verdicts}
    assert verdicts["PTRQ"] == "exit" and verdicts["QBTX"] == "trim"
    filled = {(e.trade.side, e.trade.symbol) for e in result.executed}
    assert {(Side.SELL, "PTRQ"), (Side.SELL, "QBTX"), (Side.BUY, "LMNW")} <= filled
    assert not any(sym in ("WTTQ", "CHRQ") for _, sym in filled)  # Hold, no decision
    # Sells fill before buys, in plan order, under the run's keys.
    sides = [e.trade.side for e in result.executed]
    assert sides == sorted(sides, key=lambda s: s is Side.BUY)
    assert [e.trade.key for e in result.executed] == [
        trade_key(result.workflow_id, e.order.index) for e in result.executed
    ]
    # The memory gate halved MDLQ: a similar set-up lost 6% against the benchmark.
    mdlq = next(c for c in result.candidates.ranked if c.ticker == "MDLQ")
    assert mdlq.factors["memory"] == 0.5 and LESSON in mdlq.reasons[-1]
    after = result.snapshot
    total = after.total_value
    assert after.cash >= Decimal("0.05") * total
    assert all(p.weight <= 0.15 for p in after.positions)
    assert result.status is DecisionStatus.APPROVED_AUTO
    assert len(services.store.trades("held")) == 3 + len(result.executed)


async def test_the_report_and_the_decision_are_stored(
    held_run: tuple[Any, PortfolioResult], services: Services
) -> None:
    _, result = held_run

    with urllib.request.urlopen(result.report.url, timeout=10) as response:
        markdown = response.read().decode()
    order = ["The book before", "Risk", "Candidates", "PM decision", "Plan", "Executed"]
    positions = [markdown.index(f"## {heading}") for heading in order]
    assert positions == sorted(positions)
    assert "adjusted: scaled from" in markdown  # the third IT buy meets the 35% sector limit
    [record] = services.store.decisions("held")
    assert record.key == result.workflow_id and record.status is DecisionStatus.APPROVED_AUTO
    assert services.store.snapshots("held")[-1] == result.snapshot


LISTED = [
    listing.symbol
    for listing in SIM.universe(AS_OF)
    if listing.asset_type == "equity" and listing.symbol not in {"PTRQ", *SCAN.tickers()}
]
WATCHED = [*LISTED, *(f"WL{i:03d}" for i in range(94 - len(LISTED)))]
"""The names that widen the run past the Scan's six to a hundred: the simulated market's
other companies, then names it does not list (no close)."""
WIDE = list(zip(WATCHED, cycle([Rating.BUY, Rating.HOLD, Rating.OVERWEIGHT, Rating.SELL])))


def _wide_input(book: str, names: int) -> dict[str, Any]:
    """The Scan's decisions plus watched names (no Scan entry) up to ``names`` decisions."""
    watched = [decision_of(symbol, r) for symbol, r in WIDE[: names - len(DECISIONS)]]
    return run_input(book, decisions=[*DECISIONS, *watched])


async def test_a_hundred_candidates_run_in_a_bounded_pm_prompt_and_each_gets_a_fate(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    runs = {}
    for names in (20, 100):
        handle = await start_run(ts_env, _wide_input(services.book(f"wide-{names}"), names))
        result = await handle.result()
        pm = (await chats_of(ts_env, handle))[BOOK_MANAGER][0]
        runs[names] = (result, estimated_tokens(pm.messages))

    result, tokens = runs[100]
    assert tokens <= 1.4 * runs[20][1] and tokens < 32_768
    decided = {d["symbol"] for d in _wide_input("x", 100)["decisions"]}
    fates = {f.ticker: f for f in result.fates}
    assert decided <= set(fates) and len(decided) == 100
    bought = {o.symbol for o in result.plan.orders if o.side is Side.BUY}
    assert {t for t, f in fates.items() if f.fate is Fate.PLANNED} == bought - {TBILL_ETF}
    with urllib.request.urlopen(result.report.url, timeout=10) as response:
        markdown = response.read().decode()
    left = [f for f in fates.values() if f.fate is Fate.LEFT_OUT]
    assert left and all(f"| {f.ticker} |" in markdown and f.reason in markdown for f in left)
    assert any("below the top-20 cut" in f.reason for f in left)
    assert all(f.reason.startswith(("ranked", "scored 0")) for f in left)


async def test_watched_names_without_a_scan_are_ranked_and_bought(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    payload = _wide_input(services.book("watched"), 12)
    del payload["scan_summary"]
    handle = await start_run(ts_env, payload)
    result = await handle.result()

    progress = await handle.query("progress", result_type=PortfolioProgress)
    assert progress.steps["prioritize_candidates"] == "done"
    assert all(c.thesis_angle is None for c in result.candidates.ranked)
    fates = {f.ticker: f for f in result.fates}
    assert set(fates) == {d["symbol"] for d in payload["decisions"]}
    first_buy = next(symbol for symbol, rating in WIDE if rating is Rating.BUY)
    assert fates[first_buy].fate is Fate.PLANNED


async def test_an_approved_runs_history_replays_deterministically(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("replay")
    handle = await start_run(ts_env, run_input(book, approval="required"))
    await until_waiting(handle)
    await handle.execute_update("approve", {})
    await handle.result()
    replayer = Replayer(workflows=[PortfolioWorkflow], data_converter=pydantic_data_converter)

    replayed = await replayer.replay_workflow(
        await handle.fetch_history(), raise_on_replay_failure=False
    )

    assert replayed.replay_failure is None


async def test_running_the_same_workflow_id_again_trades_nothing_twice(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("again")
    workflow_id = f"portfolio-again-{uuid.uuid4()}"
    first = await (await start_run(ts_env, run_input(book), workflow_id)).result()
    trades = services.store.trades(book)

    second = await (await start_run(ts_env, run_input(book), workflow_id)).result()

    assert first.approval_note is None
    assert services.store.trades(book) == trades and len(trades) == len(first.executed) > 0
    assert [e.trade for e in second.executed] == [e.trade for e in first.executed]
    assert not any(e.new for e in second.executed)
    assert "decided first" in (second.approval_note or "")


async def test_an_all_cash_book_without_a_scan_sweeps_into_t_bills(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("cash-only")
    handle = await start_run(ts_env, {"portfolio": book, "as_of": AS_OF.isoformat()})
    result = await handle.result()

    [fill] = result.executed
    assert fill.trade.symbol == TBILL_ETF and fill.order.origin is Origin.SWEEP
    assert 0.14 < result.snapshot.positions[0].weight <= 0.15
    progress = await handle.query("progress", result_type=PortfolioProgress)
    assert (
        progress.steps["holdings_reviewer"] == progress.steps["prioritize_candidates"] == "skipped"
    )
    assert result.risk.sharpe.value is None and "all-cash" in (result.risk.sharpe.reason or "")


async def test_an_approved_plan_trades_once_approved_for_the_plan_of_its_hash(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("approve")
    handle = await start_run(ts_env, run_input(book, approval="required"))
    await until_waiting(handle)
    pending = await handle.query("plan", result_type=PendingPlan)
    assert pending.awaiting_approval and pending.plan.orders
    assert services.store.trades(book) == []
    with pytest.raises(WorkflowUpdateFailedError) as stale:  # another plan's hash
        await handle.execute_update("approve", {"plan_hash": "0" * 16})

    answer = await handle.execute_update(
        "approve", {"by": "tester", "note": "ok", "plan_hash": pending.digest()}
    )
    result = await handle.result()

    assert "does not match the plan waiting" in str(stale.value.cause)
    assert answer["status"] == "approved"
    assert (
        result.status is DecisionStatus.APPROVED
        and result.approval_note == "approved by tester: ok"
    )
    assert len(services.store.trades(book)) == len(pending.plan.orders)


async def test_a_rejected_plan_trades_nothing(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("reject")
    handle = await start_run(ts_env, run_input(book, approval="required"))
    with pytest.raises(WorkflowUpdateFailedError) as early:
        await handle.execute_update("approve", {})  # before there is a plan to approve
    await until_waiting(handle)

    await handle.execute_update("reject", {"note": "too concentrated"})
    result = await handle.result()

    assert result.status is DecisionStatus.REJECTED and result.executed == []
    assert services.store.trades(book) == []
    assert services.store.decisions(book)[0].status is DecisionStatus.REJECTED
    assert result.snapshot.cash == Decimal(100_000)
    assert "not waiting for an approval" in str(early.value.cause)


async def test_the_approve_signal_works_like_the_update(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("signal")
    handle = await start_run(ts_env, run_input(book, approval="required"))
    await until_waiting(handle)

    await handle.signal("approve", {"by": "web ui"})
    result = await handle.result()

    assert result.status is DecisionStatus.APPROVED and result.approval_note == "approved by web ui"
    assert len(services.store.trades(book)) == len(result.executed) > 0


async def test_no_answer_before_the_timeout_trades_nothing(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("expire")
    handle = await start_run(
        ts_env, run_input(book, approval="required", approval_timeout_minutes=90)
    )
    result = await handle.result()  # the time-skipping server jumps the 90 minutes

    assert result.status is DecisionStatus.EXPIRED
    assert result.approval_note == "no answer within 90 minutes"
    assert services.store.trades(book) == [] and result.plan.orders
    with pytest.raises(RPCError):  # the run is over: nothing left to approve
        await handle.execute_update("approve", {})


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"portfolio": "no such book", "as_of": "2012-06-01T00:00:00Z"}, "portfolio"),
        ({"portfolio": "demo"}, "as_of"),
        ({"portfolio": "demo", "as_of": "2012-06-01T00:00:00"}, "as_of"),
        ({"portfolio": "demo", "as_of": "2012-06-01T00:00:00Z", "approval": "maybe"}, "approval"),
        ({"portfolio": "nobook", "as_of": "2012-06-01T00:00:00Z"}, "portfolio"),
    ],
)
async def test_bad_input_fails_the_run_naming_the_field(
    ts_env: WorkflowEnvironment, services: Services, payload: dict[str, Any], field: str
) -> None:
    handle = await start_run(ts_env, payload)
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()

    cause = caught.value.cause
    while cause is not None and not isinstance(cause, ApplicationError):
        cause = cause.cause
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert f"`{field}`" in cause.message


# --- a worker dies during the fills (dev server, real timers) ------------------------------


class StallingStore(PortfolioStore):
    """Books the first fill of a run, then hangs like a dead worker until released."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.booked = threading.Event()
        self.release = threading.Event()

    def execute_trade(self, name: str, request: TradeRequest) -> TradeOutcome:
        outcome = super().execute_trade(name, request)
        if not self.booked.is_set():
            self.booked.set()
            self.release.wait(timeout=120)
        return outcome


async def test_a_worker_dying_mid_execution_loses_and_doubles_no_trade(
    dev_env: WorkflowEnvironment, services: Services, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'book.db'}"
    stalling, healthy = StallingStore(url), PortfolioStore(url)
    healthy.create("killed", 100_000)
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}")
    settings = services.settings
    common = [
        WorkerPlan(queue=QUEUE, workflows=[PortfolioWorkflow]),
        WorkerPlan(queue=QUEUE_OFFLINE, activities=[LlmActivities(settings, QUEUE_OFFLINE).chat]),
    ]
    dying = build_worker(dev_env.client, tools_plan(settings, stalling, memory, services.objects))
    async with running_workers(dev_env.client, common):
        dying_task = asyncio.create_task(dying.run())
        handle = await start_run(dev_env, run_input("killed"))
        assert await asyncio.to_thread(stalling.booked.wait, 60)
        stopping = asyncio.create_task(dying.shutdown())  # polls no more; its fill hangs on
        # Another client, as another process would have: one client runs one worker per queue.
        other = await Client.connect(
            dev_env.client.service_client.config.target_host,
            data_converter=pydantic_data_converter,
        )
        async with running_workers(
            other, [tools_plan(settings, healthy, memory, services.objects)]
        ):
            result = await handle.result()
        stalling.release.set()  # the dead worker wakes up and finishes its loop: no-ops
        await stopping
        await dying_task

    booked = healthy.trades("killed")
    assert len(booked) == len(result.plan.orders) == len(result.executed)
    assert sorted(t.key for t in booked) == sorted(
        trade_key(result.workflow_id, o.index) for o in result.plan.orders
    )
    assert [e.new for e in result.executed][0] is False  # the dead worker had booked it
    cash = Decimal(100_000) + sum(t.cash_change for t in booked)
    assert healthy.get("killed").cash == cash


# --- the command line --------------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", **env},
        cwd=Path(__file__).resolve().parent.parent,
    )


async def test_quantdesk_approve_shows_the_plan_and_approves(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("cli-approve")
    handle = await start_run(ts_env, run_input(book, approval="required"))
    await until_waiting(handle)
    env = {"QUANTDESK_TEMPORAL__ADDRESS": ts_env.client.service_client.config.target_host}

    done = await asyncio.to_thread(
        _cli, "approve", handle.id, "--by", "cli", "--note", "fine", env=env
    )
    result = await handle.result()

    assert done.returncode == 0, done.stdout + done.stderr
    assert "cli-approve: plan" in done.stdout and "SGOV" in done.stdout
    assert (
        result.status is DecisionStatus.APPROVED and result.approval_note == "approved by cli: fine"
    )
    again = await asyncio.to_thread(_cli, "reject", handle.id, env=env)
    assert again.returncode == 1


async def test_quantdesk_portfolio_shows_the_book_its_trades_and_snapshots(
    held_run: tuple[Any, PortfolioResult], services: Services
) -> None:
    env = {
        "QUANTDESK_DATABASE_URL": services.url,
        "QUANTDESK_DATA_DIR": str(services.settings.data_dir),
    }

    shown, trades, snaps = await asyncio.gather(
        *(
            asyncio.to_thread(_cli, "portfolio", command, "held", env=env)
            for command in ("show", "trades", "snapshots")
        )
    )

    assert shown.returncode == trades.returncode == snaps.returncode == 0, shown.stderr
    assert "held (paper broker) as of 2012-06-01" in shown.stdout and "LMNW" in shown.stdout
    assert "Information Technology" in shown.stdout and "Health Care" in shown.stdout
    assert "SELL" in trades.stdout and "PTRQ" in trades.stdout
    assert held_run[1].workflow_id[:20] in snaps.stdout
    duplicate = await asyncio.to_thread(_cli, "portfolio", "create", "held", "--cash", "5", env=env)
    assert duplicate.returncode == 1 and "exists" in duplicate.stderr


async def test_quantdesk_portfolio_run_starts_follows_and_reports(
    ts_env: WorkflowEnvironment, services: Services
) -> None:
    book = services.book("cli-run")
    env = {
        "QUANTDESK_TEMPORAL__ADDRESS": ts_env.client.service_client.config.target_host,
        "QUANTDESK_QUEUES__WORKFLOWS": QUEUE,
    }

    done = await asyncio.to_thread(
        _cli, "portfolio", "run", book, "--as-of", "2012-06-01",
        "--scan-summary", f"{PAYLOADS_BUCKET}/{SCAN_KEY}", env=env,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert "cli-run: approved_auto" in done.stdout
    assert "report: http" in done.stdout
    assert services.store.trades(book)
