"""AutoRun offline end to end on the time-skipping server, with the product's worker plans.

Like every module, this one has a time-skipping server of its own (``tests/conftest.py``):
the Reflects its runs leave behind stop that server's skipping for good.

The workers are exactly what `quantdesk up` starts (``workers.main.plan_for``), pointed
at a temporary data directory (SQLite books and memories) and the session's S3. The
run scans the simulated market of 2012-06-01, analyses the shortlist and a holding,
trades the paper book and leaves one Reflect per decision. A holding the data layer
has never heard of makes its Pipeline fail: the run records it and goes on. A model
whose shortlist names only tickers outside the universe (a vendor stand-in over HTTP)
empties the Scan's shortlist: the run goes on with the holdings.
"""

from __future__ import annotations

import asyncio
import threading
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from rich.console import Console
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

import cli.run as cli_run
import cli.views as cli_views
from client.reports import fetch_report
from shared.broker.book import BrokerBook
from shared.config import Settings
from shared.data.contracts import Sector
from shared.data.sim import SimVendor
from shared.portfolio.models import Side, TradeRequest
from shared.portfolio.store import PortfolioStore
from tests.fakes.alpaca.server import AlpacaStandIn
from tests.fakes.llm_server import FakeLlmServer
from tests.servers import (
    isolated_settings,
    running_workers,
    tools_reading,
)
from workers.main import plan_for
from workers.roles import WorkerRole
from workflows.autorun import AutoRunProgress, AutoRunResult

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-autorun"
AS_OF = "2012-06-01T00:00:00Z"
PRODUCT_ROLES = (
    WorkerRole.WORKFLOWS,
    WorkerRole.TOOLS,
    WorkerRole.CHARTS,
    WorkerRole.LLM_OFFLINE,
    WorkerRole.LLM_OPENAI,
    WorkerRole.BROKER,
)
KEY, SECRET = "PKTESTAUTORUN00000000", "test-autorun-secret"
STEP_EVERY = 0.2
"""Seconds between two of the broker stand-in's fill rounds."""
GHOST = "GHOSTCO"
"""A holding no vendor knows: its Pipeline fails, and the run must go on."""


@pytest.fixture(scope="module")
def vendor() -> Iterator[FakeLlmServer]:
    """The ``openai`` provider's stand-in (the offline provider needs none)."""
    with FakeLlmServer() as server:
        yield server


@pytest.fixture(scope="module")
def broker() -> Iterator[AlpacaStandIn]:
    """Alpaca's stand-in, its market open, a price for every name the desk may trade, and a
    fill round every ``STEP_EVERY`` seconds."""
    as_of = datetime.fromisoformat(AS_OF)
    prices = {listing.symbol: Decimal(50) for listing in SimVendor().universe(as_of)}
    with AlpacaStandIn(key_id=KEY, secret=SECRET, prices=prices) as server:
        stop = threading.Event()
        stepper = threading.Thread(target=lambda: _step_until(server, stop), daemon=True)
        stepper.start()
        yield server
        stop.set()
        stepper.join()


def _step_until(server: AlpacaStandIn, stop: threading.Event) -> None:
    while not stop.wait(STEP_EVERY):
        server.step()


@pytest.fixture(scope="module")
def settings(
    s3_settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    vendor: FakeLlmServer,
    broker: AlpacaStandIn,
) -> Settings:
    openai = {"api_key": "sk-test-autorun", "base_url": vendor.base_url_openai}
    alpaca = {"base_url": broker.base_url, "key_id": KEY, "secret_key": SECRET}
    limits = {"max_order_notional": 50_000, "max_daily_notional": 200_000}
    return isolated_settings(
        s3_settings,
        tmp_path_factory.mktemp("autorun"),
        QUEUE,
        openai=openai,
        alpaca=alpaca,
        broker_limits=limits,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment, settings: Settings) -> AsyncIterator[None]:
    plans = [plan_for(role, settings) for role in PRODUCT_ROLES]
    with tools_reading(settings):
        async with running_workers(ts_env.client, plans):
            yield


async def _start(env: WorkflowEnvironment, payload: dict[str, Any]) -> WorkflowHandle[Any, Any]:
    return await env.client.start_workflow(
        "AutoRun",
        payload,
        id=f"autorun-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
        result_type=AutoRunResult,
    )


def _hold_a_ghost(settings: Settings, portfolio: str) -> None:
    books = PortfolioStore.from_settings(settings)
    books.create(portfolio, Decimal(100_000))
    books.execute_trade(
        portfolio,
        TradeRequest(
            key=f"{portfolio}-ghost",
            symbol=GHOST,
            side=Side.BUY,
            shares=10,
            price=Decimal(20),
            fees=Decimal(0),
            executed_at=datetime(2012, 5, 1, tzinfo=UTC),
            rationale="a position from before the data vendors knew better",
        ),
    )


def _overlap(history: Any, prefix: str) -> int:
    """The most child runs with ``prefix`` open at once, from the parent's history (matched
    on the initiating event: the test server numbers ``started_event_id`` its own way)."""
    closing = {
        EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: "completed",
        EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: "failed",
    }
    running: set[int] = set()
    most = 0
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            attrs = event.child_workflow_execution_started_event_attributes
            if attrs.workflow_execution.workflow_id.startswith(prefix):
                running.add(attrs.initiated_event_id)
                most = max(most, len(running))
        elif event.event_type in closing:
            name = f"child_workflow_execution_{closing[event.event_type]}_event_attributes"
            running.discard(getattr(event, name).initiated_event_id)
    return most


def _address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


async def test_the_desk_runs_offline_end_to_end(
    ts_env: WorkflowEnvironment, workers: None, settings: Settings, tmp_path: Path
) -> None:
    portfolio = f"desk{uuid.uuid4().hex[:6]}"
    _hold_a_ghost(settings, portfolio)
    handle = await _start(
        ts_env,
        {
            "portfolio": portfolio,
            "as_of": AS_OF,
            "max_tickers": 4,
            "min_conviction": "low",
            "analysts": ["market", "fundamentals"],
            "concurrency": 2,
        },
    )
    result: AutoRunResult = await handle.result()

    assert result.candidates[: len(result.shortlist)] == result.shortlist
    assert result.candidates[-1] == GHOST
    [failure] = result.failures
    assert failure.symbol == GHOST and "symbol" in failure.reason
    assert {d.symbol for d in result.decisions} == set(result.shortlist)
    assert result.portfolio_status == "approved_auto"
    assert len(result.reflections) == len(result.decisions)

    history = await handle.fetch_history()
    assert _overlap(history, f"{handle.id}-pipeline-") == 2  # bounded, and really parallel
    progress = await handle.query("progress", result_type=AutoRunProgress)
    assert progress.phase == "done" and progress.tickers_done == len(result.candidates)
    assert progress.tickers_failed == 1
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert metadata.current_details.startswith("**done**") and "report.html" in (
        metadata.current_details
    )

    with urllib.request.urlopen(result.report_url, timeout=10) as response:
        page = response.read().decode()
    assert page.startswith("<!DOCTYPE html>") and 'src="chart-' in page  # beside it
    for symbol in result.shortlist:
        assert symbol in page
    assert f"<td>{GHOST}</td>" in page and "failed: " in page
    assert result.report.markdown.report.key.endswith("report.md")
    books = PortfolioStore.from_settings(settings)
    assert len(books.trades(portfolio)) >= 1 + result.trades  # the ghost's buy, then the run's
    fetched = await fetch_report(
        settings.model_copy(
            update={"temporal": settings.temporal.model_copy(update={"address": _address(ts_env)})}
        ),
        handle.id,
        tmp_path,
    )
    assert fetched[0].name == "report.html" and fetched[1].name == "report.md"
    assert {p.name for p in fetched[2:]} == {f"chart-{s}.png" for s in result.shortlist}
    assert "![" in fetched[1].read_text()
    for reflect_id in result.reflections:
        reflected = await ts_env.client.get_workflow_handle(reflect_id).result()
        assert reflected["inserted"] >= 1


async def test_quantdesk_run_autorun_prints_the_decisions_and_downloads_the_report(
    ts_env: WorkflowEnvironment,
    workers: None,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = Console(record=True, width=240)
    monkeypatch.setattr(cli_run, "console", shown)
    monkeypatch.setattr(cli_views, "console", shown)
    here = settings.model_copy(
        update={"temporal": settings.temporal.model_copy(update={"address": _address(ts_env)})}
    )
    payload = {"portfolio": "clidesk", "as_of": AS_OF, "max_tickers": 2, "min_conviction": "low"}
    payload |= {"analysts": ["market"], "reflect": False}

    status = await cli_run._run_autorun(here, payload, "autorun-cli-test", tmp_path)

    text = shown.export_text()
    assert status == 0
    assert "AutoRun clidesk as of 2012-06-01" in text and "approved_auto" in text
    report = tmp_path / "autorun-cli-test" / "report.html"
    assert report.exists() and f"report: {report.resolve()}" in text.replace("\n", "")
    assert "Web UI: http://127.0.0.1:" in text


def _outside_the_universe() -> dict[str, Any]:
    """A schema-valid synthesis that names only tickers no vendor lists."""
    stock = {
        "name": "Nowhere Inc",
        "sector": Sector.INFORMATION_TECHNOLOGY.value,
        "rationale": "a name the model remembered",
        "thesis_angle": "momentum",
        "conviction": "high",
    }
    return {
        "timeframe": "1-3 months",
        "executive_summary": "Leaders are hard to find.",
        "macro_context": {"economic_cycle": "mid-cycle", "central_bank_stance": "on hold"},
        "key_themes": [
            {"theme": "t", "description": "d", "conviction": "low", "timeframe": "1-3 months"}
        ],
        "stocks_to_investigate": [{**stock, "ticker": "ZZZQ"}, {**stock, "ticker": "QQQZ"}],
    }


async def test_a_scan_the_data_leave_empty_lets_the_desk_go_on_with_its_holdings(
    ts_env: WorkflowEnvironment, workers: None, settings: Settings, vendor: FakeLlmServer
) -> None:
    portfolio = f"empty{uuid.uuid4().hex[:6]}"
    _hold_a_ghost(settings, portfolio)
    for index in range(5):
        vendor.reply_json(
            {"headline": f"scanner {index}", "findings": ["quiet"], "report_markdown": "Quiet."}
        )
    vendor.reply_json(_outside_the_universe())  # the synthesis
    vendor.reply_json(_outside_the_universe())  # its repair turn, no better
    for _ in range(3):  # the Portfolio's holdings review, macro and micro summaries
        vendor.reply_conforming()
    vendor.reply_json(
        {
            "holds": [GHOST],
            "cash_reserve": 0.9,
            "portfolio_thesis": "wait",
            "risk_summary": "nothing new is sound",
        }
    )

    handle = await _start(
        ts_env,
        {
            "portfolio": portfolio,
            "as_of": AS_OF,
            "llm": {"provider": "openai"},
            "reflect": False,
        },
    )
    result: AutoRunResult = await handle.result()

    assert result.shortlist == [] and result.candidates == [GHOST]
    [failure] = result.failures  # the holding was analysed (and failed, as a ghost does)
    assert failure.symbol == GHOST
    scan = await ts_env.client.get_workflow_handle(f"{handle.id}-scan").result()
    assert scan["summary"]["stocks_to_investigate"] == []
    assert "no stock left to investigate" in scan["corrections"][-1]
    assert result.portfolio_status == "approved_auto"  # the Portfolio ran on the holdings
    assert vendor.pending == 0


async def _approval_pending(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """The plan a Portfolio run waits on, once it waits."""
    for _ in range(1200):
        try:
            pending = await handle.query("plan", result_type=dict)
        except Exception:  # the child may not be started yet
            pending = None
        if pending and pending.get("awaiting_approval"):
            return pending
        await asyncio.sleep(0.1)
    raise AssertionError(f"{handle.id} never waited for an approval")


async def test_an_approved_desk_at_a_broker_trades_there_and_the_book_equals_the_broker(
    ts_env: WorkflowEnvironment, workers: None, settings: Settings, broker: AlpacaStandIn
) -> None:
    portfolio = f"alp{uuid.uuid4().hex[:6]}"
    handle = await _start(
        ts_env,
        {
            "portfolio": portfolio,
            "as_of": AS_OF,
            "max_tickers": 3,
            "min_conviction": "low",
            "analysts": ["market"],
            "approval": "required",
            "broker": "alpaca",
            "execution": {"poll_seconds": 5},
            "reflect": False,
        },
    )
    desk = ts_env.client.get_workflow_handle(f"{handle.id}-portfolio")
    pending = await _approval_pending(desk)
    books = BrokerBook.from_settings(settings)
    assert books.intents(portfolio) == []  # nothing is sent before the approval

    await desk.execute_update("approve", {"by": "tester", "note": "send them"})
    result: AutoRunResult = await handle.result()

    intents = books.intents(portfolio)
    assert len(intents) == len(pending["plan"]["orders"]) and result.trades >= 1
    counts = broker.order_counts()
    assert all(counts[intent.client_order_id] == 1 for intent in intents if intent.broker_order_id)
    held = {h.symbol: h.shares for h in books.holdings(portfolio)}
    at_broker = {p["symbol"]: int(p["qty"]) for p in _positions(broker)}
    assert held and all(at_broker.get(symbol) == shares for symbol, shares in held.items())
    reconciled = await ts_env.client.get_workflow_handle(
        f"{handle.id}-portfolio-reconcile"
    ).result()
    assert reconciled["drift"]["shares"] == {} and reconciled["drift"]["unbooked_fills"] == []
    assert Decimal(reconciled["drift"]["cash"]) == 0  # every fill moved both alike


def _positions(broker: AlpacaStandIn) -> list[dict[str, Any]]:
    """The stand-in's positions as its API answers them."""
    import httpx

    answer = httpx.get(
        f"{broker.base_url}/v2/positions",
        headers={"APCA-API-KEY-ID": KEY, "APCA-API-SECRET-KEY": SECRET},
        timeout=5,
    )
    answer.raise_for_status()
    positions: list[dict[str, Any]] = answer.json()
    return positions
