"""The broker chaos bench's own parts: the Alpaca stand-in with its fill rounds, and the broker
worker as a real process (`python -m cli.main worker --role broker`, what `quantdesk up`
runs), told everything through the variables a user would set.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from bench.broker_chaos_plan import UNIVERSE
from shared.config import ALPACA_KEY_ID_ENV, ALPACA_SECRET_KEY_ENV, ENV_PREFIX
from tests.fakes.alpaca.server import AlpacaStandIn
from tests.servers import stop

ROOT = Path(__file__).resolve().parent.parent
KEY, SECRET = "PKCHAOSBENCH00000000", "chaos-bench-secret"
ACCOUNT_CASH = Decimal(1_000_000)
FILL_PLAN = (0.4, 0.6)
"""Each order fills in two rounds: a partial fill, then the rest."""
STEP_EVERY = 0.2
"""Seconds between two fill rounds; the stand-in's clock moves on as much each time."""
GUARDRAIL = Decimal(1_000_000)
"""Order and daily caps far above the bench's orders: it tests delivery, not guardrails."""


@contextmanager
def stand_in() -> Iterator[AlpacaStandIn]:
    """The stand-in, market open, every symbol priced, a fill round every ``STEP_EVERY``
    seconds with its clock following the wall clock's pace."""
    prices = {symbol: price for symbol, (price, _) in UNIVERSE.items()}
    with AlpacaStandIn(
        key_id=KEY, secret=SECRET, cash=ACCOUNT_CASH, prices=prices, fill_plan=FILL_PLAN
    ) as server:
        halt = threading.Event()

        def fill_rounds() -> None:
            while not halt.wait(STEP_EVERY):
                server.clock.advance(timedelta(seconds=STEP_EVERY))  # a round, as it moves

        rounds = threading.Thread(target=fill_rounds, name="fill-rounds", daemon=True)
        rounds.start()
        try:
            yield server
        finally:
            halt.set()
            rounds.join()


def worker_variables(
    data_dir: Path,
    database_url: str,
    temporal: str,
    s3_endpoint: str,
    queue: str,
    broker_url: str,
    timeout: float,
) -> dict[str, str]:
    """What a broker worker process reads: the stack (S3 for the payloads kept out of
    histories; its credentials are the ones generated in ``data_dir``), the broker, its keys,
    its caps."""
    values = {
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": database_url,
        "TEMPORAL__ADDRESS": temporal,
        "S3__ENDPOINT": s3_endpoint,
        "QUEUES__WORKFLOWS": queue,
        "ALPACA__BASE_URL": broker_url,
        "ALPACA__TIMEOUT_SECONDS": str(timeout),
        "BROKER_LIMITS__MAX_ORDER_NOTIONAL": str(GUARDRAIL),
        "BROKER_LIMITS__MAX_DAILY_NOTIONAL": str(GUARDRAIL),
    }
    return {f"{ENV_PREFIX}{key}": value for key, value in values.items()} | {
        ALPACA_KEY_ID_ENV: KEY,
        ALPACA_SECRET_KEY_ENV: SECRET,
    }


@dataclass
class BrokerWorker:
    """The broker worker as a process of its own, started again after each SIGKILL."""

    variables: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    kills: int = 0
    pids: list[int] = field(default_factory=list)

    def start(self) -> None:
        """Start a worker (its output appended to ``log``); cwd is the data dir, so no
        ``.env`` of the checkout is read."""
        outside = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(ENV_PREFIX) and k not in (ALPACA_KEY_ID_ENV, ALPACA_SECRET_KEY_ENV)
        }
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        argv = [sys.executable, "-m", "cli.main", "worker", "--role", "broker"]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                argv,
                cwd=self.log.parent,
                env={**outside, **self.variables, "PYTHONPATH": path},
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self.pids.append(self.process.pid)

    def kill(self) -> None:
        """SIGKILL the worker, as a crash would, and reap it."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None
        self.kills += 1

    def stop(self) -> None:
        """SIGTERM (the worker drains), SIGKILL if it lingers."""
        if self.process is not None:
            stop(self.process)
            self.process = None
