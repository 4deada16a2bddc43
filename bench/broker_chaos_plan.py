"""The broker chaos bench's seeded schedule: each execution's orders, and what goes wrong when.

Everything random comes from ``--seed``: which book each execution trades, how many
orders it has (2 to 4: sells of what the book holds, then buys), which faults are
armed on which request and at which execution, and which worker kills happen where.
What stays unseeded is the wall clock: a fault fires on the first matching request
after it is armed, whichever execution sends it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from decimal import Decimal

from shared.data.contracts import Sector
from shared.portfolio.models import Side
from shared.portfolio.orders import PlannedOrder
from tests.fakes.alpaca.faults import FaultKind
from tests.planned_orders import planned_order

UNIVERSE: dict[str, tuple[Decimal, Sector]] = {
    "AAPL": (Decimal("190.00"), Sector.INFORMATION_TECHNOLOGY),
    "MSFT": (Decimal("410.00"), Sector.INFORMATION_TECHNOLOGY),
    "NVDA": (Decimal("125.00"), Sector.INFORMATION_TECHNOLOGY),
    "AMZN": (Decimal("185.00"), Sector.CONSUMER_DISCRETIONARY),
    "JPM": (Decimal("200.00"), Sector.FINANCIALS),
    "XOM": (Decimal("110.00"), Sector.ENERGY),
    "KO": (Decimal("62.00"), Sector.CONSUMER_STAPLES),
    "PG": (Decimal("165.00"), Sector.CONSUMER_STAPLES),
}
"""What the executions trade: each symbol's price at the stand-in, and its sector."""
BUY_AT_MOST = Decimal(3000)
"""The most one buy is worth: far inside the guardrails and the account's cash."""
ORDERS_POST = ("POST", "/v2/orders")
FOLLOW_GETS = (
    ("GET", "/v2/orders:by_client_order_id"),
    ("GET", "/v2/account/activities/FILL"),
    ("GET", "/v2/clock"),
)
"""The reads of the follow loop (the first is also the look-up before each send)."""
POST_SHARE = 0.6
"""Of the faults, the share armed on the order POST (the rest on a follow-loop GET)."""


@dataclass(frozen=True)
class ChaosConfig:
    """How big a run is and how much goes wrong in it."""

    executions: int = 20
    books: int = 3
    faults: int = 12
    kills: int = 4
    seed: int = 0
    client_timeout: float = 2.0
    """The broker client's timeout (``QUANTDESK_ALPACA__TIMEOUT_SECONDS``)."""
    timeout_minutes: float = 15.0
    """The whole run's deadline."""

    @classmethod
    def quick(cls, seed: int = 0) -> ChaosConfig:
        """A few executions, every fault kind once, two kills: well under two minutes."""
        return cls(executions=5, books=2, faults=5, kills=2, seed=seed)


@dataclass(frozen=True)
class Fault:
    """A fault to arm once, on ``method path``, as execution ``at`` starts."""

    at: int
    kind: FaultKind
    method: str
    path: str
    options: dict[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``kind on METHOD path``, as the table counts it."""
        return f"{self.kind.value} on {self.method} {self.path}"


@dataclass(frozen=True)
class Kill:
    """A SIGKILL of the broker worker once execution ``at`` has started: between an order's
    POST being saved and its reply (``mid_post``), or ``after`` seconds; a new worker starts
    ``down`` seconds later."""

    at: int
    mid_post: bool
    after: float
    down: float


Event = Fault | Kill


def schedule(config: ChaosConfig) -> list[Event]:
    """The faults and kills, each with the execution whose start arms it. Executions are
    dealt out in a shuffled order, kills first, so events spread over the run and two kills
    never wait for the same start; the fault kinds take turns (shuffled), so five faults or
    more have each kind at least once; the first kill, and every other one after it, lands
    between a POST and its reply."""
    rng = random.Random(f"broker-chaos-{config.seed}")
    starts = list(range(config.executions))
    rng.shuffle(starts)
    kinds = list(FaultKind)
    rng.shuffle(kinds)
    events: list[Event] = []
    for number in range(config.kills):
        at = starts[number % len(starts)]
        events.append(Kill(at, number % 2 == 0, rng.uniform(0.5, 3.0), rng.uniform(0.0, 1.5)))
    for number in range(config.faults):
        at = starts[(config.kills + number) % len(starts)]
        kind = kinds[number % len(kinds)]
        method, path = ORDERS_POST if rng.random() < POST_SHARE else rng.choice(FOLLOW_GETS)
        events.append(Fault(at, kind, method, path, _options(kind, config)))
    return events


def _options(kind: FaultKind, config: ChaosConfig) -> dict[str, float]:
    if kind is FaultKind.SLOW_AFTER_SAVE:
        return {"delay": config.client_timeout + 1.5}  # past the client's timeout
    if kind is FaultKind.ERROR_WITHOUT_SAVE:
        return {"status": 503}
    if kind is FaultKind.RATE_LIMITED:
        return {"retry_after": 1}
    return {}


def book_of(execution: int, config: ChaosConfig) -> int:
    """The book an execution trades: the books take turns."""
    return execution % config.books


def orders_for(execution: int, seed: int, held: dict[str, int]) -> list[PlannedOrder]:
    """Execution ``execution``'s orders, given what its book ``held`` when it started:
    2 to 4 of them, sells of held shares first (their cash pays for the buys), then buys."""
    rng = random.Random(f"broker-chaos-{seed}-orders-{execution}")
    count = rng.randint(2, 4)
    holding = sorted(symbol for symbol, shares in held.items() if shares > 0)
    sold = rng.sample(holding, min(len(holding), rng.randint(0, 2), count - 1))
    bought = rng.sample(sorted(UNIVERSE.keys() - set(sold)), count - len(sold))
    wanted = [(symbol, Side.SELL, rng.randint(1, held[symbol])) for symbol in sold]
    wanted += [
        (symbol, Side.BUY, rng.randint(1, max(1, int(BUY_AT_MOST / UNIVERSE[symbol][0]))))
        for symbol in bought
    ]
    return [
        planned_order(
            index,
            symbol,
            side,
            shares,
            UNIVERSE[symbol][0],
            sector=UNIVERSE[symbol][1],
            rationale=f"broker chaos bench: {side.value.lower()} {shares} {symbol}",
        )
        for index, (symbol, side, shares) in enumerate(wanted)
    ]
