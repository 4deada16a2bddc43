"""A finished walk-forward as files people read: a Markdown report and a CSV of the equity."""

from __future__ import annotations

import csv
import io
from typing import TypeVar

from shared.backtest.book import Book
from shared.backtest.claims import BacktestClaims
from shared.backtest.claims_report import claims_parts, cutoff_lead
from shared.backtest.metrics import Performance
from shared.backtest.positions import Position
from shared.llm.knowledge import CutoffTag

POSITION_NAMES = {Position.LONG: "long", Position.FLAT: "flat", Position.SHORT: "short"}
METRIC_ROWS: tuple[tuple[str, str], ...] = (
    ("cumulative return", "cumulative_return"),
    ("annualised return", "annualised_return"),
    ("Sharpe (daily, √252)", "sharpe"),
    ("max drawdown", "max_drawdown"),
    ("hit rate", "hit_rate"),
    ("trades", "trade_count"),
)
"""The metrics every summary shows, in order: (label, ``Performance`` field)."""
T = TypeVar("T")


def metric_text(field: str, value: float | int | None) -> str:
    """A metric as people read it: percentages, a ratio with two decimals, a count, or n/a."""
    if value is None:
        return "n/a"
    if field == "trade_count":
        return str(value)
    if field == "sharpe":
        return f"{value:.2f}"
    signed = field in ("cumulative_return", "annualised_return")
    return f"{value:+.2%}" if signed else f"{value:.2%}"


def metrics_rows(strategy: Performance, benchmark: Performance) -> list[tuple[str, str, str]]:
    """(label, strategy, buy-and-hold) for each metric of ``METRIC_ROWS``."""
    return [
        (label, metric_text(f, getattr(strategy, f)), metric_text(f, getattr(benchmark, f)))
        for label, f in METRIC_ROWS
    ]


def _daily(book: Book, values: list[T], empty: T) -> list[T]:
    """Each step's value spread over the closes it holds (the last step's to the end)."""
    held = [empty] * len(book.schedule.prices)
    for k, value in enumerate(values):
        start, stop = book.schedule.holding(k)
        last = stop + 1 if k == len(values) - 1 else stop
        held[start:last] = [value] * (last - start)
    return held


def daily_positions(book: Book) -> list[Position]:
    """The position held after each close of the range (the last step's stays open at the end)."""
    return _daily(book, book.positions, Position.FLAT)


def equity_csv(book: Book, tags: list[CutoffTag] | None = None) -> str:
    """date, close, position after the close, strategy and buy-and-hold equity (from 1), and
    with ``tags`` the training-cutoff tag of the step whose position is held."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["date", "close", "position", "strategy_equity", "buy_and_hold_equity"]
    writer.writerow(header + (["cutoff"] if tags else []))
    daily_tags = _daily(book, [str(tag) for tag in tags or []], "")
    rows = zip(
        book.schedule.prices,
        daily_positions(book),
        book.equity(),
        book.buy_and_hold_equity(),
        daily_tags,
        strict=True,
    )
    for point, position, strategy, benchmark, tag in rows:
        row = [
            point.time.date().isoformat(),
            f"{point.close:.6g}",
            POSITION_NAMES[position],
            f"{strategy:.8f}",
            f"{benchmark:.8f}",
        ]
        writer.writerow(row + ([tag] if tags else []))
    return out.getvalue()


def render_report(
    book: Book,
    strategy: Performance,
    benchmark: Performance,
    claims: BacktestClaims | None = None,
) -> str:
    """The walk-forward in Markdown: the cutoff headline, what ran, the metrics against
    buy-and-hold, the claims (cutoff periods, leaderboard, Sharpe tests), every step."""
    schedule = book.schedule
    first, last = schedule.prices[0].time.date(), schedule.prices[-1].time.date()
    shorts = "allowed" if book.allow_short else "off (SELL/SHORT go flat)"
    parts = [
        f"# Backtest: {book.flow.value} on {book.symbol}, {first} to {last}",
        *([cutoff_lead(claims)] if claims else []),
        f"{len(schedule.steps)} steps, one every {schedule.every} bar(s), each strictly as of "
        f"its date; {strategy.days} daily returns. Shorts {shorts}. BUY/LONG go long, "
        "SELL/SHORT short, HOLD keeps the previous position; each position is held from its "
        "step's close to the next step's close.",
        "## Metrics\n\n| metric | strategy | buy-and-hold |\n|---|---|---|\n"
        + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in metrics_rows(strategy, benchmark)),
        f"Hits {strategy.hits} of {strategy.steps_with_position} steps with a position; "
        f"the stock rose in {benchmark.hits} of {benchmark.steps_with_position} holdings.",
    ]
    if claims:
        parts += claims_parts(claims)
    lines = [
        "| step | as of | signal | rating | position | stock over holding | roles with past lessons "
        "| cutoff |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k, record in enumerate(book.records):
        start, stop = schedule.holding(k)
        move = schedule.prices[stop].close / schedule.prices[start].close - 1
        recalled = "" if record.recalled_roles is None else str(record.recalled_roles)
        lines.append(
            f"| {k + 1} | {record.as_of.date()} | {record.signal} | {record.rating or ''} | "
            f"{POSITION_NAMES[record.position]} | {move:+.2%} | {recalled} | "
            f"{claims.tags[k] if claims else ''} |"
        )
    parts.append("## Steps\n\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n"
