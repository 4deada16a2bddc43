"""People's door to a book at a broker: `quantdesk portfolio create --broker`, `quantdesk
broker ...` and the book's console page.

Real components: the SQLite book through ``BrokerBook``; the Temporal dev server (its
visibility store finds a book's Reconcile runs) with a worker running ``Reconcile`` on
the workflows queue and the broker role's activities on the ``broker`` queue, the only
settings holding Alpaca's keys; the strict Alpaca stand-in as the broker; the console
app over them. The commands' cores are called with a recording console (the commands
leave through ``os._exit``); one subprocess checks the exit status end to end.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from rich.console import Console
from temporalio.testing import WorkflowEnvironment

import cli.broker as cli_broker
import cli.portfolio as cli_portfolio
import cli.views as cli_views
from cli.broker import (
    DRIFT_EXIT,
    EXIT_STATUSES,
    halt_book,
    reconcile_book,
    resume_book,
    show_orders,
    show_status,
)
from cli.portfolio import books_table, create_book
from client.process_exit import fail_on_quantdesk_errors
from console.app import create_app
from shared.broker.book import BrokerBook
from shared.broker.models import BrokerFill, IntentStatus, OrderIntent, OrderSpec
from shared.config import AlpacaSettings, Settings, load_settings
from shared.errors import ConfigError, InvalidInput
from shared.portfolio.models import BrokerKind, Side
from tests.fakes.alpaca import AlpacaStandIn
from tests.screens import recording_console
from tests.servers import free_port_base, running_workers
from workers.main import WorkerPlan, plan_for
from workers.roles import WorkerRole
from workflows.reconcile import ReconcileWorkflow

on_the_session_loop = pytest.mark.asyncio(loop_scope="session")
QUEUE = "broker-cli-test"
KEY, SECRET = "PKBROKERCLI", "broker-cli-secret"
CASH = Decimal(100000)
ROOT = Path(__file__).resolve().parent.parent
SHOWN_WITHIN = 20.0
"""Seconds a finished run may take to reach the visibility store."""


@pytest.fixture(scope="module")
def standin() -> Iterator[AlpacaStandIn]:
    prices = {"AAPL": Decimal("187.20"), "MSFT": Decimal("420.50")}
    with AlpacaStandIn(key_id=KEY, secret=SECRET, cash=CASH, prices=prices) as server:
        yield server


@pytest.fixture(scope="module")
def worker_settings(
    dev_env: WorkflowEnvironment, standin: AlpacaStandIn, tmp_path_factory: pytest.TempPathFactory
) -> Settings:
    """The broker worker's settings: the only ones with Alpaca's keys."""
    folder = tmp_path_factory.mktemp("broker-cli")
    return load_settings(
        data_dir=folder,
        database_url=f"sqlite:///{folder / 'quantdesk.db'}",
        queues={"workflows": QUEUE},
        temporal={"address": dev_env.client.service_client.config.target_host},
        alpaca={"base_url": standin.base_url, "key_id": KEY, "secret_key": SECRET},
        console={"port": free_port_base(lambda base: [base])},  # no console answers there
    )


@pytest.fixture(scope="module")
def settings(worker_settings: Settings) -> Settings:
    """An operator's settings: the same stack and book, no keys."""
    alpaca = AlpacaSettings(base_url=worker_settings.alpaca.base_url, key_id=None)
    return worker_settings.model_copy(update={"alpaca": alpaca})


@pytest.fixture(scope="module")
def books(settings: Settings) -> Iterator[BrokerBook]:
    store = BrokerBook.from_settings(settings)
    yield store
    store.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def broker_worker(
    dev_env: WorkflowEnvironment, worker_settings: Settings
) -> AsyncIterator[None]:
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ReconcileWorkflow]),
        plan_for(WorkerRole.BROKER, worker_settings),
    ]
    async with running_workers(dev_env.client, plans):
        yield


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> Console:
    """What the commands print, recorded."""
    return recording_console(monkeypatch, cli_broker, cli_portfolio, cli_views)


@dataclass
class BrokerDesk:
    """An operator's side of books at the broker: settings without keys, the book, the
    stand-in behind the running broker worker, and what the commands print."""

    settings: Settings
    books: BrokerBook
    standin: AlpacaStandIn
    shown: Console


@pytest.fixture
def desk(
    settings: Settings,
    books: BrokerBook,
    standin: AlpacaStandIn,
    broker_worker: None,
    shown: Console,
) -> BrokerDesk:
    return BrokerDesk(settings, books, standin, shown)


def _new_book(books: BrokerBook, broker: BrokerKind = BrokerKind.ALPACA) -> str:
    name = f"live-{uuid.uuid4().hex[:6]}"
    books.create(name, CASH, broker=broker)
    return name


def _spec(index: int, symbol: str = "AAPL", qty: int = 10) -> OrderSpec:
    return OrderSpec(
        workflow_id="portfolio-test-run",
        order_index=index,
        symbol=symbol,
        side=Side.BUY,
        qty=qty,
        reference_price=Decimal("187.20"),
    )


def _orders_of(books: BrokerBook, book: str) -> list[OrderIntent]:
    """Three intents: filled in part, refused by a guardrail, pending."""
    alpaca = BrokerKind.ALPACA
    partly = books.record_intent(book, _spec(0), broker=alpaca)
    books.mark_submitted(partly.client_order_id, f"{book}-order")
    fill = BrokerFill(
        fill_id=f"{book}-fill",
        client_order_id=partly.client_order_id,
        symbol="AAPL",
        side=Side.BUY,
        qty=4,
        price=Decimal("187.25"),
        transaction_time=datetime.now(UTC),
    )
    books.book_fill(book, fill)
    refused = books.record_intent(book, _spec(1, "MSFT", 500), broker=alpaca)
    books.mark_terminal(refused.client_order_id, IntentStatus.REFUSED, "over the cap")
    books.record_intent(book, _spec(2, "MSFT", 1), broker=alpaca)
    return books.intents(book)


def _exit_status(error: Exception) -> int:
    """The status a command leaves with when ``error`` escapes it."""
    statuses: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("client.process_exit.finish", statuses.append)
        with fail_on_quantdesk_errors(EXIT_STATUSES):
            raise error
    return statuses[0]


# --- creating a book at a broker ---------------------------------------------------------


def test_a_book_is_bound_to_its_broker_when_created_and_never_again(
    settings: Settings, books: BrokerBook, shown: Console
) -> None:
    name = f"bound-{uuid.uuid4().hex[:6]}"

    created = create_book(settings, name, "100,000", broker=BrokerKind.ALPACA)

    assert created.broker is BrokerKind.ALPACA and books.get(name).broker is BrokerKind.ALPACA
    said = shown.export_text()
    assert "trading at the alpaca broker" in said and "paper trading" in said
    assert "LIVE" not in said
    with pytest.raises(InvalidInput, match=f"a portfolio called '{name}' exists"):
        create_book(settings, name, "100000", broker=BrokerKind.PAPER)
    with pytest.raises(InvalidInput, match=f"'{name}' trades at the alpaca broker, not paper"):
        books.open(name, CASH, broker=BrokerKind.PAPER)
    listed = Console(record=True, width=200)
    listed.print(books_table(books.portfolios()))
    row = next(line for line in listed.export_text().splitlines() if name in line)
    assert "alpaca" in row


def test_a_book_created_for_live_trading_says_so_loudly(settings: Settings, shown: Console) -> None:
    live = settings.model_copy(update={"alpaca": AlpacaSettings(live=True)})

    create_book(live, f"real-{uuid.uuid4().hex[:6]}", "1000", broker=BrokerKind.ALPACA)

    said = shown.export_text()
    assert "LIVE TRADING" in said and "real money" in said
    assert "https://api.alpaca.markets" in said


# --- status, orders, halt, resume --------------------------------------------------------


def test_orders_lists_the_intents_newest_first_with_what_the_broker_made_of_them(
    settings: Settings, books: BrokerBook, shown: Console
) -> None:
    book = _new_book(books)
    partly, refused, pending = _orders_of(books, book)

    show_orders(settings, book, None, 50)
    show_orders(settings, book, IntentStatus.REFUSED, 50)
    show_orders(settings, book, None, 1)

    tables = shown.export_text().split(f"{book}: order intents")[1:]
    every, only_refused, latest = tables
    row = next(line for line in every.splitlines() if partly.client_order_id in line)
    for cell in ("AAPL", "BUY", "10", "partially_filled", f"{book}-order", "4", "187.2500"):
        assert cell in row
    assert every.index(pending.client_order_id) < every.index(partly.client_order_id)
    assert "over the cap" in every and "the latest 3 of 3, newest first" in every
    assert refused.client_order_id in only_refused and partly.client_order_id not in only_refused
    assert pending.client_order_id in latest and "the latest 1 of 3" in latest


def test_a_halt_and_a_resume_are_recorded_and_shown_by_status(
    settings: Settings, books: BrokerBook, shown: Console
) -> None:
    book = _new_book(books)
    _orders_of(books, book)

    halt_book(settings, book, "drift in AAPL", "alice")
    show_status(settings, book)
    halted = shown.export_text(clear=True)
    resume_book(settings, book, "bob")
    show_status(settings, book)
    resumed = shown.export_text()

    assert "cancels its open orders at its next look" in halted
    assert f"refused until `quantdesk broker resume {book}`" in halted
    assert "HALTED since" in halted and "by alice: drift in AAPL" in halted
    assert "open intents  2" in halted  # partly filled and pending; the refused one is not
    assert "2,059.20 ordered of 50,000.00 a day; at most 10,000.00 an order" in halted
    assert "allow-list    any symbol" in halted
    assert "paper trading" in halted and "through the `broker` worker" in halted
    assert "resumed" in resumed and "by bob" in resumed and "HALTED" not in resumed.split(book)[-1]
    assert [(h.halted, h.who) for h in books.halts(book)] == [(True, "alice"), (False, "bob")]


def test_status_reads_the_account_where_the_keys_are(
    worker_settings: Settings, books: BrokerBook, shown: Console
) -> None:
    book = _new_book(books)

    show_status(worker_settings, book)

    said = shown.export_text()
    assert "cash 100,000.00" in said and "buying power" in said
    assert "clock: 2025-06-24 14:30 UTC, market open" in said


def test_a_paper_book_or_an_unknown_one_is_refused_with_exit_status_2(
    settings: Settings, books: BrokerBook
) -> None:
    paper = _new_book(books, BrokerKind.PAPER)

    with pytest.raises(
        InvalidInput, match="is a paper book: it fills its plans at the as-of closes"
    ):
        show_orders(settings, paper, None, 50)
    with pytest.raises(InvalidInput, match="no portfolio called 'nobody'") as unknown:
        halt_book(settings, "nobody", "why", "who")
    assert _exit_status(unknown.value) == 2
    assert _exit_status(ConfigError("QUANTDESK_TEMPORAL__ADDRESS", "away")) == 1


def test_the_command_exits_2_for_a_paper_book(settings: Settings, books: BrokerBook) -> None:
    paper = _new_book(books, BrokerKind.PAPER)
    env = {
        **os.environ,
        "QUANTDESK_DATA_DIR": str(settings.data_dir),
        "QUANTDESK_DATABASE_URL": settings.resolved_database_url,
        "QUANTDESK_TEMPORAL__ADDRESS": "127.0.0.1:9",  # nothing listens: nothing may connect
        "COLUMNS": "200",
    }
    command = [sys.executable, "-m", "cli.main", "broker", "reconcile", paper]

    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    assert done.returncode == 2, done.stderr
    assert f"'{paper}' is a paper book: it fills its plans at the as-of closes" in done.stderr


# --- reconcile, through the broker worker ------------------------------------------------


@on_the_session_loop
async def test_reconcile_is_clean_then_drifts_with_exit_3_until_the_brokers_numbers_are_adopted(
    desk: BrokerDesk,
) -> None:
    settings, books, shown = desk.settings, desk.books, desk.shown
    book = _new_book(books)
    desk.standin.set_position("AAPL", Decimal(0), Decimal(1))
    assert not settings.alpaca.has_keys  # the operator's side: Temporal does the reading

    clean = await reconcile_book(settings, book)
    desk.standin.set_position("AAPL", Decimal(5), Decimal("150.25"))
    drifted = await reconcile_book(settings, book)
    said = shown.export_text(clear=True)
    with pytest.raises(InvalidInput, match="needs who chose to and why"):
        await reconcile_book(settings, book, adopt=True, who="ops")
    adopted = await reconcile_book(settings, book, adopt=True, who="ops", reason="a manual buy")
    adopting = shown.export_text(clear=True)
    after = await reconcile_book(settings, book, adopt=True, who="ops", reason="again")

    assert (clean, drifted, adopted, after) == (0, DRIFT_EXIT, 0, 0)
    assert f"started reconcile-{book}-" in said and "clean against the broker" in said
    aapl = next(line for line in said.splitlines() if line.strip().startswith("AAPL"))
    assert [cell for cell in aapl.split() if cell != "│"] == ["AAPL", "0", "5", "+5"]
    assert "drift against the broker" in said and "--adopt --who NAME --reason TEXT" in said
    assert f"adopted the broker's numbers into {book} as of 2025-06-24 14:30:00 UTC" in adopting
    assert "5 @ 150.25" in adopting and "by ops: a manual buy" in adopting
    assert "clean against the broker" in (last := shown.export_text())
    assert "nothing to adopt: the book agrees with the broker" in last
    assert [(h.symbol, h.shares) for h in books.holdings(book)] == [("AAPL", 5)]
    [adoption] = books.adoptions(book)
    assert adoption.as_of == datetime(2025, 6, 24, 14, 30, tzinfo=UTC)


# --- the console -------------------------------------------------------------------------


async def _until(check: Callable[[], Any], what: str) -> Any:
    """``check()``'s answer once truthy (bounded: a finished run reaches visibility soon)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SHOWN_WITHIN
    while not (answer := await check()):
        assert loop.time() < deadline, f"never {what}"
        await asyncio.sleep(0.2)
    return answer


@on_the_session_loop
async def test_the_books_page_shows_its_broker_halt_intents_fills_and_drift(
    desk: BrokerDesk,
) -> None:
    settings, books = desk.settings, desk.books
    book = _new_book(books)
    paper = _new_book(books, BrokerKind.PAPER)
    partly, refused, pending = _orders_of(books, book)
    books.halt(book, "drift in AAPL", "alice")
    desk.standin.set_position("AAPL", Decimal(7), Decimal("150"))
    assert await reconcile_book(settings, book) == DRIFT_EXIT
    said = desk.shown.export_text().split()
    run_id = next(w.rstrip(";") for w in said if w.startswith(f"reconcile-{book}-"))
    live_app = create_app(settings.model_copy(update={"alpaca": AlpacaSettings(live=True)}))

    async with _console(create_app(settings)) as http:

        async def reconciled() -> str | None:
            page = (await http.get(f"/portfolios/{book}/live")).text
            return page if 'id="drift-shares"' in page else None

        page = await _until(reconciled, "showed the Reconcile run's drift")
        full = await http.get(f"/portfolios/{book}")
        paper_page = await http.get(f"/portfolios/{paper}")
        run_page = await http.get(f"/runs/{run_id}")
    async with _console(live_app) as http:
        live_page = (await http.get(f"/portfolios/{book}/live")).text

    assert "paper trading" in page and "LIVE TRADING" not in page
    assert "HALTED" in page and "by alice: drift in AAPL" in page
    for intent in (partly, refused, pending):
        assert intent.client_order_id in page
    assert page.index(pending.client_order_id) < page.index(partly.client_order_id)
    assert "over the cap" in page and "the latest 3 of 3, newest first" in page
    assert 'id="fills"' in page and f"{book}-fill" in page
    assert f'href="/runs/{run_id}"' in page and ">drift</b>" in page
    assert "(broker − book +749.00)" in page
    assert "<td>AAPL</td>" in page.split('id="drift-shares"')[1]
    assert full.status_code == 200 and "alpaca" in full.text
    assert paper_page.status_code == 200 and 'id="broker"' not in paper_page.text
    assert run_page.status_code == 200
    assert "<b>LIVE TRADING: the broker worker sends orders with real money to" in live_page


def _console(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console")
