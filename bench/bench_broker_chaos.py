"""Orders at a broker exactly once under faults and worker kills: ``BrokerOrders`` against the
strict Alpaca stand-in, counted order by order and fill by fill.

Runs N executions (``--executions``) of ``BrokerOrders``, each of 2 to 4 orders (sells of
what the book holds, then buys) for one of ``--books`` SQLite books bound to ``alpaca``;
a book's executions run one after another, the books side by side. A seeded schedule
(``--seed``, ``bench.broker_chaos_plan``) arms faults on ``POST /v2/orders`` and on the
follow loop's GETs (saved then 504, saved then dropped, saved then answered too late, 503
unsaved, 429 with Retry-After) and SIGKILLs the broker worker, a real process, at seeded
moments: every other kill lands between an order being saved and its reply (the POST is
held by a slow-answer fault until the worker is dead). A new worker starts each time.

It prints orders sent and at the broker, duplicates (client order ids with more than one
order), lost intents (no order at the broker, not refused), fills booked twice or never,
the faults by kind, the kills, the wall time, and whether each book holds what the broker
filled for it. Exit status 1 when any of those goals is missed.

    .venv/bin/python bench/bench_broker_chaos.py [--executions 20] [--seed 0] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.client import Client, WorkflowFailureError  # noqa: E402

from bench.broker_chaos_plan import (  # noqa: E402
    ChaosConfig,
    Event,
    Fault,
    Kill,
    book_of,
    orders_for,
    schedule,
)
from bench.broker_chaos_stack import BrokerWorker, stand_in, worker_variables  # noqa: E402
from bench.broker_chaos_tally import Tally, tally  # noqa: E402
from shared.broker.book import BrokerBook  # noqa: E402
from shared.config import load_settings  # noqa: E402
from shared.portfolio.models import BrokerKind  # noqa: E402
from tests.fakes.alpaca.faults import FaultKind  # noqa: E402
from tests.fakes.alpaca.server import AlpacaStandIn, FiredFault  # noqa: E402
from tests.servers import running_workers, s3_for_tests, start_dev_server  # noqa: E402
from workers.converter import data_converter  # noqa: E402
from workers.main import WorkerPlan  # noqa: E402
from workflows.broker_orders import (  # noqa: E402
    BrokerOrdersInput,
    BrokerOrdersResult,
    BrokerOrdersWorkflow,
    ExecutionPolicy,
)

QUEUE = "broker-chaos"
BOOK_CASH = Decimal(100_000)
POLL = 0.01
"""Seconds between two looks at the stand-in while waiting for a fault to fire."""
MID_POST_HOLD = 120.0
"""How long the stand-in holds a POST's reply for a kill: far past the kill."""
Say = Callable[[str], None]


@dataclass
class Outcome:
    """What a run did and found."""

    config: ChaosConfig
    tally: Tally
    completed: int = 0
    errors: list[str] = field(default_factory=list)
    reported_trades: list[str] = field(default_factory=list)
    armed: int = 0
    fired: list[FiredFault] = field(default_factory=list)
    kills: int = 0
    kills_mid_post: int = 0
    seconds: float = 0.0

    @property
    def met(self) -> bool:
        """Every execution completed, every order and fill went through once, and the runs
        reported each booked trade once."""
        return (
            self.completed == self.config.executions
            and self.tally.exactly_once
            and self.reported_right
        )

    @property
    def reported_right(self) -> bool:
        """The runs' results name each trade of the books once."""
        reported = self.reported_trades
        return len(set(reported)) == len(reported) == self.tally.trades_booked


@dataclass
class Run:
    """One run's moving parts, shared by the executions and the kills."""

    config: ChaosConfig
    client: Client
    server: AlpacaStandIn
    books: BrokerBook
    worker: BrokerWorker
    say: Say
    events: list[Event]
    done: asyncio.Event = field(default_factory=asyncio.Event)
    results: list[BrokerOrdersResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    armed: list[Fault] = field(default_factory=list)
    kills: list[asyncio.Task[None]] = field(default_factory=list)
    one_kill_at_a_time: asyncio.Lock = field(default_factory=asyncio.Lock)
    kills_mid_post: int = 0


def book_name(index: int) -> str:
    """The name of book ``index``."""
    return f"chaos-{index}"


def _is_hold(fired: FiredFault) -> bool:
    """Whether ``fired`` is a kill's hold on a POST's reply rather than a scheduled fault."""
    return fired.fault.kind is FaultKind.SLOW_AFTER_SAVE and fired.fault.delay == MID_POST_HOLD


async def _execute(run: Run, index: int, deadline: float) -> None:
    """Execution ``index``: its orders from what its book holds now, its faults armed and
    its kills under way, then ``BrokerOrders`` to the end."""
    book = book_name(book_of(index, run.config))
    held = {h.symbol: h.shares for h in await asyncio.to_thread(run.books.holdings, book)}
    orders = orders_for(index, run.config.seed, held)
    _unleash(run, index)
    decided_by = f"chaos-{run.config.seed}-{index}"
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(
            run.client.execute_workflow(
                BrokerOrdersWorkflow.run,
                BrokerOrdersInput(
                    portfolio=book,
                    decided_by=decided_by,
                    orders=orders,
                    policy=ExecutionPolicy(poll_seconds=1),
                ),
                id=f"{decided_by}-broker",
                task_queue=QUEUE,
            ),
            max(0.0, deadline - time.monotonic()),
        )
    except (TimeoutError, WorkflowFailureError) as error:
        run.errors.append(f"execution {index} on {book}: {type(error).__name__} {error}")
        run.say(f"  execution {index} on {book}: FAILED ({error})")
        return
    run.results.append(result)
    ends = Counter(intent.status.value for intent in result.intents)
    run.say(
        f"  execution {index} on {book}: {len(orders)} orders, "
        f"{', '.join(f'{n} {s}' for s, n in sorted(ends.items()))} "
        f"in {time.monotonic() - started:.1f} s"
    )


def _unleash(run: Run, index: int) -> None:
    """Arm the faults execution ``index`` starts, and start its kills (one at a time)."""
    for event in (e for e in run.events if e.at == index):
        if isinstance(event, Fault):
            options: dict[str, Any] = dict(event.options)
            run.server.arm_fault(event.kind, method=event.method, path=event.path, **options)
            run.armed.append(event)
            run.say(f"  execution {index}: armed {event.label}")
        else:
            run.kills.append(asyncio.create_task(_kill(run, event)))


async def _executions(run: Run, deadline: float) -> None:
    """Each book's executions one after another, the books side by side."""

    async def chain(book: int) -> None:
        for index in range(book, run.config.executions, run.config.books):
            await _execute(run, index, deadline)

    try:
        async with asyncio.TaskGroup() as group:
            for book in range(run.config.books):
                group.create_task(chain(book))
    finally:
        run.done.set()


async def _until(run: Run, condition: Callable[[], bool]) -> bool:
    """Wait until ``condition()``; False if the executions all ended first."""
    while not condition():
        if run.done.is_set():
            return False
        await asyncio.sleep(POLL)
    return True


async def _kill(run: Run, kill: Kill) -> None:
    """SIGKILL the broker worker as ``kill`` says, then start a new one."""
    async with run.one_kill_at_a_time:
        if kill.mid_post:
            killed = await _kill_mid_post(run)
        else:
            await asyncio.sleep(kill.after)
            killed = not run.done.is_set()
            if killed:
                run.worker.kill()
                run.say(f"  SIGKILL {kill.after:.1f} s into execution {kill.at}")
        if killed:
            await asyncio.sleep(kill.down)
            run.worker.start()


async def _kill_mid_post(run: Run) -> bool:
    """Hold the next order POST's reply once the order is saved, and SIGKILL the worker
    while it waits for it; False if no POST came before the executions ended."""
    server = run.server
    with server.lock:  # no request lands between arming and counting
        server.arm_fault(
            FaultKind.SLOW_AFTER_SAVE, method="POST", path="/v2/orders", delay=MID_POST_HOLD
        )
        seen = len(server.fired)
    if not await _until(run, lambda: any(_is_hold(f) for f in server.fired[seen:])):
        run.say("  kill between a POST and its reply: no POST came")
        return False
    hold = next(f for f in server.fired[seen:] if _is_hold(f))
    coid = hold.request.body["client_order_id"]
    # The stand-in saves the order under the lock the fault fires in: one look tells.
    saved = server.order_counts()[coid] > 0
    run.worker.kill()
    run.kills_mid_post += saved
    run.say(
        f"  SIGKILL between the POST of {coid} ({'saved' if saved else 'refused'}) and its reply"
    )
    return True


async def run_chaos(config: ChaosConfig, data_dir: Path, say: Say = print) -> Outcome:
    """One whole run in ``data_dir``: stand-in, dev server, workers, executions, tally."""
    database_url = f"sqlite:///{data_dir / 'quantdesk.db'}"
    settings = load_settings(_env_file=None, data_dir=data_dir, database_url=database_url)
    books = BrokerBook.from_settings(settings)
    for index in range(config.books):
        books.create(book_name(index), BOOK_CASH, broker=BrokerKind.ALPACA)
    with stand_in() as server, s3_for_tests(data_dir) as stack:
        env = await start_dev_server()
        target = env.client.service_client.config.target_host
        # Payloads of a kilobyte or more live in S3: the workflow's client reads them there.
        client = await Client.connect(target, data_converter=data_converter(stack))
        variables = worker_variables(
            data_dir,
            database_url,
            target,
            stack.s3.endpoint,
            QUEUE,
            server.base_url,
            config.client_timeout,
        )
        worker = BrokerWorker(variables, data_dir / "broker-worker.log")
        run = Run(config, client, server, books, worker, say, schedule(config))
        started = time.monotonic()
        try:
            worker.start()
            async with running_workers(client, [WorkerPlan(QUEUE, [BrokerOrdersWorkflow])]):
                await _executions(run, started + config.timeout_minutes * 60)
                await asyncio.gather(*run.kills)
        finally:
            seconds = time.monotonic() - started
            worker.stop()
            await env.shutdown()
        found = await asyncio.to_thread(tally, server, database_url)
        fired = [f for f in server.fired if not _is_hold(f)]
    books.close()
    return Outcome(
        config=config,
        tally=found,
        completed=len(run.results),
        errors=run.errors,
        reported_trades=[b.trade.key for result in run.results for b in result.booked],
        armed=len(run.armed),
        fired=fired,
        kills=worker.kills,
        kills_mid_post=run.kills_mid_post,
        seconds=seconds,
    )


def _goal(value: int) -> str:
    return f"{value}  (goal 0)" if value == 0 else f"{value}  (goal 0)  MISSED"


def _faults(outcome: Outcome) -> str:
    kinds = Counter(f.fault.kind.value for f in outcome.fired)
    lines = [f"{len(outcome.fired)} of {outcome.armed} armed"]
    for kind, count in sorted(kinds.items()):
        where = Counter(f.request.method for f in outcome.fired if f.fault.kind.value == kind)
        on = ", ".join(f"{method} {n}" for method, n in sorted(where.items()))
        lines.append(f"  {kind}: {count} ({on})")
    return "\n".join(lines)


def table(outcome: Outcome) -> str:
    """The bench's figures, one per line."""
    t, c = outcome.tally, outcome.config
    holdings = ", ".join(
        f"{name} {'yes' if side.equal else 'NO'}" for name, side in t.books.items()
    )
    rows = [
        ("executions completed", f"{outcome.completed}/{c.executions} on {c.books} books"),
        ("orders sent (intents)", f"{t.intents} ({t.refused} refused, {t.still_open} still open)"),
        ("orders at the broker", f"{t.orders_at_broker}"),
        ("duplicates at the broker", _goal(len(t.duplicates))),
        ("lost intents", _goal(len(t.lost))),
        ("orders no book made", _goal(len(t.unknown_orders))),
        ("fills at the broker", f"{t.fills_at_broker}"),
        ("fills booked", f"{t.fills_booked} (trades {t.trades_booked})"),
        ("fills booked twice", _goal(len(t.booked_twice))),
        ("fills never booked", _goal(len(t.never_booked))),
        (
            "trades the runs reported",
            f"{len(outcome.reported_trades)}{'' if outcome.reported_right else '  MISSED'}",
        ),
        ("faults injected", _faults(outcome)),
        (
            "worker kills",
            f"{outcome.kills} ({outcome.kills_mid_post} between an order saved and its reply)",
        ),
        ("wall time", f"{outcome.seconds:.0f} s"),
        ("holdings = broker", f"{holdings}; account {'yes' if t.account.equal else 'NO'}"),
    ]
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{label:<{width}}{value}" for label, value in rows]
    details = t.duplicates + t.lost + t.unknown_orders + t.booked_twice + t.never_booked
    return "\n".join(lines + [f"  {line}" for line in details[:20]] + outcome.errors)


async def main(options: argparse.Namespace) -> int:
    """Run the bench in a temporary data dir, print the table; the exit status."""
    config = ChaosConfig.quick(options.seed) if options.quick else ChaosConfig(seed=options.seed)
    chosen = {
        name: getattr(options, name)
        for name in ("executions", "books", "faults", "kills", "client_timeout", "timeout_minutes")
        if getattr(options, name) is not None
    }
    config = replace(config, **chosen)
    data_dir = Path(tempfile.mkdtemp(prefix="qd-broker-chaos-"))
    print(
        f"broker chaos bench: {config.executions} executions on {config.books} books, "
        f"{config.faults} faults, {config.kills} worker kills, seed {config.seed}; "
        f"data in {data_dir}",
        flush=True,
    )
    outcome = await run_chaos(config, data_dir, say=lambda line: print(line, flush=True))
    print()
    print(table(outcome))
    if outcome.met and not options.keep:
        shutil.rmtree(data_dir, ignore_errors=True)
    else:
        print(f"data dir kept: {data_dir} (broker-worker.log, quantdesk.db)")
    print("all goals met" if outcome.met else "GOAL MISSED")
    return 0 if outcome.met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--executions", type=int, help="BrokerOrders runs (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the orders and the chaos")
    parser.add_argument("--quick", action="store_true", help="5 executions, 5 faults, 2 kills")
    parser.add_argument("--books", type=int, help="books the executions take turns on")
    parser.add_argument("--faults", type=int, help="faults armed, one at a time")
    parser.add_argument("--kills", type=int, help="SIGKILLs of the broker worker")
    parser.add_argument(
        "--client-timeout", type=float, help="the broker client's timeout, seconds (2)"
    )
    parser.add_argument("--timeout-minutes", type=float, help="the whole run's deadline (15)")
    parser.add_argument("--keep", action="store_true", help="keep the data dir even when met")
    status = asyncio.run(main(parser.parse_args()))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # sdk-python #300: skip the interpreter teardown that can abort
