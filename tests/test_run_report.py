"""The AutoRun report at a hundred names: summary first, details behind links, small, sortable.

The report is the one a real AutoRun handed ``store_run_report`` (read from the golden
history, so every model is real, its Portfolio outcome too), widened to many tickers by
copying its decisions under new symbols, with a few Pipelines that failed. The sorting is
tried in a real headless Chromium, with the page served under the console's own policy
(scripts forbidden but the sorter's hash), so a wrong hash fails here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from activities.autorun import AutoRunActivities, RunReportRequest, TickerChartRequest
from console.objects_pages import REPORT_POLICY
from shared.agents.pipeline.schemas import SIGNAL_OF_RATING, Rating
from shared.config import Settings
from shared.data.sim.universe import SYMBOLS
from shared.portfolio.models import Side
from shared.portfolio.orders import RejectedOrder
from shared.reports.autorun import (
    AutoRunReport,
    TickerFailure,
    chart_name,
    render_markdown,
    ticker_anchor,
)
from shared.reports.html import markdown_to_html
from shared.storage.buckets import REPORTS_BUCKET
from shared.storage.objects import ObjectRef
from tests.chromium import chromium_binary, chromium_page

GOLDEN = Path(__file__).parent / "histories" / "AutoRun@before-slim-results--golden-autorun.json"
"""The golden AutoRun from before decisions travelled by key: its ``store_run_report`` request
still holds every decision inline, whole."""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAILED_EVERY = 25
"""One ticker in 25 failed its Pipeline."""


def golden_report() -> AutoRunReport:
    """The report a real AutoRun asked ``store_run_report`` to render."""
    history = WorkflowHistory.from_json("golden-autorun", GOLDEN.read_text())
    for event in history.events:
        scheduled = event.activity_task_scheduled_event_attributes
        if scheduled.activity_type.name == "store_run_report":
            request = json.loads(scheduled.input.payloads[0].data)
            return AutoRunReport.model_validate(request["report"])
    raise AssertionError("the golden AutoRun stored no report")


def widened(names: int) -> AutoRunReport:
    """The golden report with ``names`` candidates: its decisions copied under new symbols
    and each rating in turn, every 25th one failed instead."""
    report = golden_report()
    decisions, failures, urls, charts = [], [], {}, {}
    for n in range(names):
        model = report.decisions[n % len(report.decisions)]
        symbol = f"{model.symbol}{n}"
        if n % FAILED_EVERY == FAILED_EVERY - 1:
            failures.append(TickerFailure(symbol=symbol, reason="symbol | unknown to every vendor"))
            continue
        rating = list(Rating)[n % len(Rating)]
        update = {"symbol": symbol, "rating": rating, "signal": SIGNAL_OF_RATING[rating]}
        decisions.append(model.model_copy(update=update))
        urls[symbol] = f"https://s3.example/reports/pipeline/{symbol}/report.md?X-Amz-Signature=ab"
        charts[symbol] = f"chart-{symbol}.png"
    return report.model_copy(
        update={
            "candidates": [*(d.symbol for d in decisions), *(f.symbol for f in failures)],
            "decisions": decisions,
            "failures": failures,
            "report_urls": urls,
            "charts": charts,
        }
    )


def page_of(report: AutoRunReport) -> str:
    return markdown_to_html(render_markdown(report), title="AutoRun")


def summary_rows(page: str) -> list[str]:
    table = page.split('<h2 id="summary">Summary</h2>')[1].split("</table>")[0]
    return re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])


def test_the_summary_comes_first_with_a_row_per_candidate() -> None:
    report = widened(100)
    page = page_of(report)

    assert page.index('id="summary"') < page.index("<h2>Scan</h2>") < page.index("Decisions")
    head = page.split('id="summary"')[1].split("</thead>")[0]
    assert re.findall(r"<th>(.*?)</th>", head) == [
        "ticker",
        "rating",
        "signal",
        "conviction",
        "portfolio",
        "status",
    ]
    rows = summary_rows(page)
    assert len(rows) == 100
    failed = [row for row in rows if "failed: " in row]
    assert len(failed) == 100 // FAILED_EVERY
    assert "symbol / unknown to every vendor" in failed[0]  # a pipe kept out of the table


def test_each_decided_ticker_links_to_its_detail() -> None:
    report = widened(100)
    page = page_of(report)

    for decision in report.decisions:
        anchor = ticker_anchor(decision.symbol)
        assert f'<a href="#{anchor}">{decision.symbol}</a>' in page
        assert f'<h3 id="{anchor}">{decision.symbol}: ' in page
    assert page.count('<a href="#summary">back to the summary</a>') == len(report.decisions)


def test_the_portfolio_action_is_on_each_tickers_row() -> None:
    report = widened(10)
    outcome = report.portfolio_outcome
    assert outcome is not None and outcome.executed
    traded, refused = report.decisions[0].symbol, report.decisions[1].symbol
    fill = outcome.executed[0]
    trade = fill.trade.model_copy(update={"symbol": traded})
    refusal = RejectedOrder(symbol=refused, side=Side.BUY, shares=40, reason="sector cap")
    outcome = outcome.model_copy(
        update={"executed": [fill.model_copy(update={"trade": trade})], "rejected": [refusal]}
    )

    rows = summary_rows(page_of(report.model_copy(update={"portfolio_outcome": outcome})))

    assert f"<td>{trade.side.value} {trade.shares:,} @ {trade.price:,.2f}</td>" in rows[0]
    assert "<td>BUY 40 refused</td>" in rows[1] and "<td>no trade</td>" in rows[2]


def test_a_hundred_names_make_a_small_page_with_charts_beside_it() -> None:
    page = page_of(widened(100))
    larger = page_of(widened(500))

    assert len(page.encode()) < 300_000
    assert len(larger.encode()) < 1_500_000
    assert "data:image" not in page
    assert page.count('loading="lazy"') == 100 - 100 // FAILED_EVERY


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The 100-name page over HTTP with the console's report policy; its URL."""
    body = page_of(widened(100)).encode()

    class Report(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/report.html" else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Security-Policy", REPORT_POLICY)
            self.end_headers()
            self.wfile.write(body if self.path == "/report.html" else b"")

        def log_message(self, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Report)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/report.html"
    finally:
        server.shutdown()


@pytest.mark.skipif(chromium_binary() is None, reason="chromium is not installed")
async def test_clicking_a_header_sorts_the_summary(served: str, tmp_path: Path) -> None:
    column = "[...document.querySelector('table').tBodies[0].rows].map(r => r.cells[{}].innerText)"
    async with chromium_page(tmp_path / "profile") as page:
        await page.goto(served)
        header = "document.querySelectorAll('table')[0].tHead.rows[0].cells"
        await page.evaluate(f"{header}[1].click()")
        ratings = await page.evaluate(column.format(1))
        await page.evaluate(f"{header}[1].click()")
        again = await page.evaluate(column.format(1))
        await page.evaluate(f"{header}[0].click()")
        tickers = await page.evaluate(column.format(0))
        sort = await page.evaluate(f"{header}[0].getAttribute('aria-sort')")

    ladder = ["Sell", "Underweight", "Hold", "Overweight", "Buy"]
    decided = [r for r in ratings if r]
    assert len(set(decided)) > 1
    assert decided == sorted(decided, key=ladder.index)
    assert [r for r in again if r] == sorted(decided, key=ladder.index, reverse=True)
    assert tickers == sorted(tickers, key=str.lower) and sort == "ascending"


def test_the_sorter_is_allowed_by_its_hash_alone() -> None:
    script = page_of(widened(3)).split("<script>")[1].split("</script>")[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert REPORT_POLICY.startswith(f"script-src 'sha256-{digest}';")


def test_the_report_keeps_the_charts_drawn_ahead_and_draws_the_others(s3_settings: Settings):
    activities = AutoRunActivities(s3_settings)
    report = golden_report()
    [ahead] = report.decisions
    late = ahead.model_copy(update={"symbol": next(s for s in SYMBOLS if s != ahead.symbol)})
    prefix = f"autorun/charts-ahead/{uuid.uuid4().hex[:8]}"
    target = ObjectRef(bucket=REPORTS_BUCKET, key=f"{prefix}/{chart_name(ahead.symbol)}")

    drawn = activities.store_ticker_chart(
        TickerChartRequest(symbol=ahead.symbol, as_of=ahead.as_of, target=target)
    )
    # Marked, so a chart drawn again by the report would show.
    activities.store.put_bytes(target, PNG_MAGIC + b"drawn ahead")
    files = activities.store_run_report(
        RunReportRequest(
            report=report.model_copy(update={"decisions": [ahead, late]}), prefix=prefix
        )
    )

    assert drawn.chart == target
    assert set(files.charts) == {chart_name(ahead.symbol), chart_name(late.symbol)}
    assert activities.store.get_bytes(target) == PNG_MAGIC + b"drawn ahead"
    assert activities.store.get_bytes(files.charts[chart_name(late.symbol)]).startswith(PNG_MAGIC)
    page = activities.store.get_bytes(files.html.report).decode()
    assert (
        f'src="{chart_name(ahead.symbol)}"' in page and f'src="{chart_name(late.symbol)}"' in page
    )
