"""Record one golden history of every workflow type into ``tests/histories/``.

    python -m tests.histories.record          # from the repository root, dev extra installed

A Reflect may wait days on a timer, an approval a day: runs stay in flight across
deploys, and a worker with changed workflow code must replay their histories
exactly. ``tests/test_replay.py`` replays every file written here with today's
code, so a change that would break an in-flight run fails CI instead of a user's
run. Re-record only on purpose (a new workflow type, or a change gated with
``workflow.patched``: keep the old history too, under another name, so both paths
stay covered); docs/development.md, "Changing workflow code safely", says how.

Everything runs offline on a time-skipping server, a real S3 server and SQLite in a
temporary directory, with the product's worker plans. Four runs cover all ten types:
QuantAgent; Evaluate (QuantAgent children); Backtest of the Pipeline with memory
(Pipeline, Debate, Risk and Reflect children); AutoRun (Scan, Pipeline, Portfolio).
A fifth covers waiting: an AutoRun whose Scan parks on a missing key, tells the
AutoRun, is resumed and parks again before it is ended. A sixth gives an AutoRun more
names than it analyses itself: it runs them in ``PipelineBatch`` children.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from shared.data.sim.universe import SYMBOLS
from tests.servers import (
    isolated_settings,
    running_workers,
    s3_for_tests,
    start_time_skipping,
    tools_reading,
)
from workers.main import plan_for
from workers.roles import WorkerRole
from workflows.autorun import AutoRunResult
from workflows.catalog import WORKFLOWS
from workflows.progress import RunProgress

HISTORIES = Path(__file__).resolve().parent
ID_SEPARATOR = "--"
"""A file is ``<Type>--<workflow id>.json``: replay needs the id (children's ids derive
from it), and Temporal's JSON export of a history does not hold it. Histories kept from
before a gated change are ``<Type>@<what changed>--<workflow id>.json``: never replaced."""
QUEUE = "golden"
ROLES = (
    WorkerRole.WORKFLOWS,
    WorkerRole.TOOLS,
    WorkerRole.CHARTS,
    WorkerRole.LLM_OFFLINE,
    WorkerRole.LLM_OPENAI_COMPATIBLE,
)
AS_OF = "2012-06-01T00:00:00Z"
RUNS: list[tuple[str, str, dict[str, Any]]] = [
    ("golden-quantagent", "QuantAgent", {"symbol": "GOOG", "timeframe": "1d", "as_of": AS_OF}),
    (
        "golden-evaluate",
        "Evaluate",
        {
            "windows": {"kind": "cut", "symbols": ["GOOG"], "timeframe": "1d", "count": 2},
            "concurrency": 2,
        },
    ),
    (
        "golden-backtest",
        "Backtest",
        {
            "symbol": "QBTX",
            "start": "2012-05-01",
            "end": "2012-05-31",
            "every": 10,
            "analysts": ["market", "news"],
        },
    ),
    (
        "golden-autorun",
        "AutoRun",
        {
            "portfolio": "golden",
            "as_of": AS_OF,
            "max_tickers": 2,
            "analysts": ["market", "news"],
            "reflect": False,
        },
    ),
]


PARKED_ID = "golden-parked"
PARKED_RUN = {
    "portfolio": "golden-parked",
    "as_of": AS_OF,
    "max_tickers": 2,
    "reflect": False,
    "llm": {"provider": "qwen"},
}
"""Qwen without a key: its calls are refused before any network call, and park."""
KEY_VARIABLES = ("DASHSCOPE_API_KEY", "QUANTDESK_QWEN__API_KEY")


async def _children(client: Client, history: WorkflowHistory) -> list[str]:
    """The ids of the child workflows a history started."""
    return [
        event.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
    ]


async def _histories(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """The history of ``workflow_id`` and of every child below it, parents first."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    tree = [history]
    for child in await _children(client, history):
        tree += await _histories(client, child)
    return tree


def type_of(history: WorkflowHistory) -> str:
    """The workflow type a history is of."""
    return history.events[0].workflow_execution_started_event_attributes.workflow_type.name


async def _waiting(client: Client, workflow_id: str) -> dict[str, str]:
    """What the run (or a run below it) waits on, polled until something does."""
    handle = client.get_workflow_handle(workflow_id)
    for _ in range(600):
        progress = await handle.query("progress", result_type=RunProgress)
        if progress.waiting:
            return progress.waiting
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{workflow_id} never waited")


async def _parked_and_resumed(client: Client) -> list[WorkflowHistory]:
    """An AutoRun whose Scan parks on a missing key, is resumed, parks again and is ended:
    the path where a parked call tells its parent (``workflow.patched``) and ``resume``."""
    handle = await client.start_workflow(
        "AutoRun", PARKED_RUN, id=PARKED_ID, task_queue=QUEUE, result_type=AutoRunResult
    )
    first = await _waiting(client, PARKED_ID)
    await handle.signal("resume")
    await asyncio.sleep(1.0)  # the retried calls fail again on the same missing key
    await _waiting(client, PARKED_ID)
    await handle.terminate(reason="golden history recorded")
    print(f"parked and resumed: {', '.join(first)}", flush=True)
    return await _histories(client, PARKED_ID)


async def record(folder: Path) -> list[WorkflowHistory]:
    """Run the four flows (one history per workflow type), then the parked AutoRun (all of
    its tree)."""
    found: dict[str, WorkflowHistory] = {}
    with s3_for_tests(folder / "s3") as s3:
        settings = isolated_settings(s3, folder / "desk", QUEUE)
        env = await start_time_skipping()
        try:
            with tools_reading(settings):
                async with running_workers(env.client, [plan_for(r, settings) for r in ROLES]):
                    for workflow_id, flow, payload in RUNS:
                        print(f"running {flow} ({workflow_id})", flush=True)
                        await env.client.execute_workflow(
                            flow, payload, id=workflow_id, task_queue=QUEUE
                        )
                        for history in await _histories(env.client, workflow_id):
                            found.setdefault(type_of(history), history)
                    parked = await _parked_and_resumed(env.client)
        finally:
            await env.shutdown()
    return [*found.values(), *parked]


BATCHED_ID = "golden-batched"
BATCHED_RUN = {
    "portfolio": "golden-batched",
    "as_of": AS_OF,
    "symbols": list(SYMBOLS[:17]),
    "analysts": ["market"],
    "concurrency": 2,
    "reflect": False,
}
"""More names than an AutoRun analyses itself: it runs them in ``PipelineBatch`` children."""


async def record_batched(folder: Path) -> list[WorkflowHistory]:
    """An AutoRun given 17 names at two at once (``PipelineBatch`` children): its history and
    its first batch's."""
    with s3_for_tests(folder / "s3") as s3:
        settings = isolated_settings(s3, folder / "desk", QUEUE)
        env = await start_time_skipping()
        try:
            with tools_reading(settings):
                async with running_workers(env.client, [plan_for(r, settings) for r in ROLES]):
                    await env.client.execute_workflow(
                        "AutoRun", BATCHED_RUN, id=BATCHED_ID, task_queue=QUEUE
                    )
                    return [
                        await env.client.get_workflow_handle(workflow_id).fetch_history()
                        for workflow_id in (BATCHED_ID, f"{BATCHED_ID}-batch-1")
                    ]
        finally:
            await env.shutdown()


BROKER_ID = "golden-broker"
BROKER_KEYS = ("PKGOLDEN000000000000", "golden-secret")


async def record_broker(folder: Path) -> list[WorkflowHistory]:
    """A plan of two orders sent to the Alpaca stand-in (``BrokerOrders``: intents, submit,
    partial fills followed on timers) and the book reconciled with it (``Reconcile``)."""
    from decimal import Decimal

    from shared.broker.book import BrokerBook
    from shared.portfolio.models import BrokerKind, Side
    from tests.fakes.alpaca.server import AlpacaStandIn
    from tests.planned_orders import planned_order

    price = Decimal("190.00")
    orders = [
        planned_order(index, "AAPL", Side.BUY, shares, price, rationale="golden").model_dump(
            mode="json"
        )
        for index, shares in enumerate((3, 2))
    ]
    key_id, secret = BROKER_KEYS
    with (
        s3_for_tests(folder / "s3") as s3,
        AlpacaStandIn(
            key_id=key_id, secret=secret, cash=Decimal(10_000), prices={"AAPL": price}
        ) as broker,
    ):
        alpaca = {"base_url": broker.base_url, "key_id": key_id, "secret_key": secret}
        settings = isolated_settings(s3, folder / "desk", QUEUE, alpaca=alpaca)
        BrokerBook.from_settings(settings).create(
            "golden", Decimal(10_000), broker=BrokerKind.ALPACA
        )
        broker.step()  # nothing open yet: the next rounds fill what the run sends
        env = await start_time_skipping()
        roles = (WorkerRole.WORKFLOWS, WorkerRole.BROKER)
        try:
            async with running_workers(env.client, [plan_for(r, settings) for r in roles]):
                handle = await env.client.start_workflow(
                    "BrokerOrders",
                    {
                        "portfolio": "golden",
                        "decided_by": BROKER_ID,
                        "orders": orders,
                        "policy": {"poll_seconds": 1},
                    },
                    id=f"{BROKER_ID}-broker",
                    task_queue=QUEUE,
                )
                while not (await handle.describe()).close_time:
                    broker.step()
                    await asyncio.sleep(0.2)
                await env.client.execute_workflow(
                    "Reconcile",
                    {"portfolio": "golden"},
                    id=f"{BROKER_ID}-reconcile",
                    task_queue=QUEUE,
                )
                return [
                    await env.client.get_workflow_handle(f"{BROKER_ID}-{part}").fetch_history()
                    for part in ("broker", "reconcile")
                ]
        finally:
            await env.shutdown()


NOTICES_ID = "golden-notices"


async def record_notices(folder: Path) -> list[WorkflowHistory]:
    """A Reconcile that finds drift and tells people (its ``Notify`` run beside it, to a JSON
    webhook), a ``RecordSocial`` pass against the StockTwits stand-in, and a ``Watch``."""
    from datetime import UTC, datetime, timedelta
    from decimal import Decimal

    from shared.broker.book import BrokerBook
    from shared.portfolio.models import BrokerKind
    from tests.fakes.alpaca.server import AlpacaStandIn
    from tests.fakes.notifiers import Webhook
    from tests.fakes.stocktwits import FakeStocktwits, Message

    key_id, secret = BROKER_KEYS
    posts = [Message(1, "AAPL", datetime.now(UTC) - timedelta(minutes=5), "$AAPL golden")]
    with (
        s3_for_tests(folder / "s3") as s3,
        AlpacaStandIn(key_id=key_id, secret=secret, cash=Decimal(10_000), prices={}) as broker,
        Webhook() as hook,
        FakeStocktwits({"AAPL": "Apple Inc."}, posts) as stocktwits,
    ):
        env = await start_time_skipping()
        settings = isolated_settings(
            s3,
            folder / "desk",
            QUEUE,
            alpaca={"base_url": broker.base_url, "key_id": key_id, "secret_key": secret},
            notify={"urls": [hook.url()]},
            stocktwits={"base_url": stocktwits.base_url},
            temporal={"address": env.client.service_client.config.target_host},
        )
        BrokerBook.from_settings(settings).create(
            "golden", Decimal(9_000), broker=BrokerKind.ALPACA
        )
        roles = (WorkerRole.WORKFLOWS, WorkerRole.TOOLS, WorkerRole.BROKER)
        try:
            async with running_workers(env.client, [plan_for(r, settings) for r in roles]):
                reconcile = f"{NOTICES_ID}-reconcile"
                await env.client.execute_workflow(
                    "Reconcile", {"portfolio": "golden"}, id=reconcile, task_queue=QUEUE
                )
                told = env.client.get_workflow_handle(f"{reconcile}-notify-drift")
                await told.result()
                social = f"{NOTICES_ID}-social"
                await env.client.execute_workflow(
                    "RecordSocial", {"symbols": ["AAPL"]}, id=social, task_queue=QUEUE
                )
                watch = f"{NOTICES_ID}-watch"  # this server has no visibility: nothing found
                await env.client.execute_workflow("Watch", {}, id=watch, task_queue=QUEUE)
                return [
                    await env.client.get_workflow_handle(run).fetch_history()
                    for run in (reconcile, told.id, social, watch)
                ]
        finally:
            await env.shutdown()


def main() -> int:
    """Record, check every type is covered, and write ``<Type>--<id>.json`` files (the
    recorder's own earlier files are replaced; histories kept under other names stay).
    ``record broker`` records the broker's two types only, ``record batched`` the batched
    AutoRun and its batch only, ``record notices`` a drifting Reconcile with its ``Notify``
    and a ``RecordSocial`` (adding their files, replacing none)."""
    for variable in KEY_VARIABLES:  # the parked run needs the key to be missing
        os.environ.pop(variable, None)
    only_broker = sys.argv[1:] == ["broker"]
    only_batched = sys.argv[1:] == ["batched"]
    only_notices = sys.argv[1:] == ["notices"]
    with tempfile.TemporaryDirectory(prefix="golden-") as folder:
        if only_broker:
            histories = asyncio.run(record_broker(Path(folder)))
        elif only_batched:
            histories = asyncio.run(record_batched(Path(folder)))
        elif only_notices:
            histories = asyncio.run(record_notices(Path(folder)))
        else:
            histories = asyncio.run(record(Path(folder)))
            histories += asyncio.run(record_batched(Path(folder) / "batched"))
            histories += asyncio.run(record_broker(Path(folder) / "broker"))
            histories += asyncio.run(record_notices(Path(folder) / "notices"))
    missing = {w.__temporal_workflow_definition.name for w in WORKFLOWS} - {  # type: ignore[attr-defined]
        type_of(history) for history in histories
    }
    if missing and not (only_broker or only_batched or only_notices):
        print(f"no history recorded for: {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    partial = only_batched or only_notices
    for flow in {type_of(history) for history in histories} if not partial else ():
        for old in HISTORIES.glob(f"{flow}{ID_SEPARATOR}golden-*.json"):
            old.unlink()
    for history in histories:
        path = HISTORIES / f"{type_of(history)}{ID_SEPARATOR}{history.workflow_id}.json"
        path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
        print(f"{path.relative_to(HISTORIES.parent.parent)}: {len(history.events)} events")
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # a process that used a temporalio client can abort at exit (#300)
