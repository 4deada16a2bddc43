"""A finished walk-forward as files people read: a Markdown report and a CSV of the equity."""

from __future__ import annotations

import csv
import io

from shared.backtest.book import Book
from shared.backtest.metrics import Performance
from shared.backtest.positions import Position

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


def daily_positions(book: Book) -> list[Position]:
    """The position held after each close of the range (the last step's stays open at the end)."""
    held = [Position.FLAT] * len(book.schedule.prices)
    for k, record in enumerate(book.records):
        start, stop = book.schedule.holding(k)
        last = stop + 1 if k == len(book.records) - 1 else stop
        held[start:last] = [record.position] * (last - start)
    return held


def equity_csv(book: Book) -> str:
    """date, close, position after the close, strategy and buy-and-hold equity (from 1)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["date", "close", "position", "strategy_equity", "buy_and_hold_equity"])
    rows = zip(
        book.schedule.prices,
        daily_positions(book),
        book.equity(),
        book.buy_and_hold_equity(),
        strict=True,
    )
    for point, position, strategy, benchmark in rows:
        writer.writerow(
            [
                point.time.date().isoformat(),
                f"{point.close:.6g}",
                POSITION_NAMES[position],
                f"{strategy:.8f}",
                f"{benchmark:.8f}",
            ]
        )
    return out.getvalue()


def render_report(book: Book, strategy: Performance, benchmark: Performance) -> str:
    """The walk-forward in Markdown: what ran, the metrics against buy-and-hold, every step."""
    schedule = book.schedule
    first, last = schedule.prices[0].time.date(), schedule.prices[-1].time.date()
    shorts = "allowed" if book.allow_short else "off (SELL/SHORT go flat)"
    parts = [
        f"# Backtest: {book.flow.value} on {book.symbol}, {first} to {last}",
        f"{len(schedule.steps)} steps, one every {schedule.every} bar(s), each strictly as of "
        f"its date; {strategy.days} daily returns. Shorts {shorts}. BUY/LONG go long, "
        "SELL/SHORT short, HOLD keeps the previous position; each position is held from its "
        "step's close to the next step's close.",
        "## Metrics\n\n| metric | strategy | buy-and-hold |\n|---|---|---|\n"
        + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in metrics_rows(strategy, benchmark)),
        f"Hits {strategy.hits} of {strategy.steps_with_position} steps with a position; "
        f"the stock rose in {benchmark.hits} of {benchmark.steps_with_position} holdings.",
    ]
    lines = [
        "| step | as of | signal | rating | position | stock over holding | roles with past lessons |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, record in enumerate(book.records):
        start, stop = schedule.holding(k)
        move = schedule.prices[stop].close / schedule.prices[start].close - 1
        recalled = "" if record.recalled_roles is None else str(record.recalled_roles)
        lines.append(
            f"| {k + 1} | {record.as_of.date()} | {record.signal} | {record.rating or ''} | "
            f"{POSITION_NAMES[record.position]} | {move:+.2%} | {recalled} |"
        )
    parts.append("## Steps\n\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n"
