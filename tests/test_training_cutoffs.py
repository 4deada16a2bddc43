"""Training cutoffs: where they come from, and every report saying which decisions fall before.

A decision made on or before the models' cutoff may rest on a remembered outcome; each
format an evaluation or a backtest is read in (Markdown, CSV, JSON, the plot, the terminal
and the console's page) must show it, and the headline must be the after-cutoff figure.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from rich.console import Console
from starlette.requests import Request

from cli.evaluate import summary_table
from console.web import templates
from shared.agents.quantagent import Direction
from shared.backtest import Book, Flow, Position, PricePoint, StepRecord, WalkForward
from shared.backtest.chart import render_equity_chart
from shared.backtest.measure import measure_backtest
from shared.backtest.report import equity_csv, render_report
from shared.config import load_settings
from shared.evaluation.measure import measure
from shared.evaluation.plot import plotted_rows, render_accuracy_plot
from shared.evaluation.report import render_csv, render_json, render_markdown
from shared.evaluation.scoring import AgentCall, Evaluation, score_windows
from shared.evaluation.windows import Window
from shared.llm.contracts import LlmChoice
from shared.llm.knowledge import CutoffTag, ModelCutoff, RunCutoff, last_day_of, run_cutoff
from shared.llm.providers import PROVIDERS, LlmRole
from shared.market.bars import Bar, Timeframe

CUTOFF = RunCutoff(
    provider="openai",
    models=[ModelCutoff(model="gpt-4.1", stated="2024-04", source="models.dev")],
)
BEFORE_ID, AFTER_ID = "GOOG_1d_2023", "GOOG_1d_2025"


def rising_window(window_id: str, first: datetime, bars: int = 60) -> Window:
    """Daily bars that rise every day: the truth is LONG."""
    return Window(
        window_id=window_id,
        asset="GOOG",
        timeframe=Timeframe.D1,
        bars=[
            Bar(
                time=first + timedelta(days=i),
                open=100 + i,
                high=101.5 + i,
                low=99.5 + i,
                close=101 + i,
                volume=1000,
            )
            for i in range(bars)
        ],
    )


def evaluation(*firsts: tuple[str, datetime]) -> Evaluation:
    windows = [rising_window(window_id, first) for window_id, first in firsts]
    calls = {
        w.window_id: AgentCall(window_id=w.window_id, decision=Direction.LONG) for w in windows
    }
    scored = score_windows(windows, calls, seed=0, label="QuantAgent, openai", cutoff=CUTOFF)
    return measure(scored, trials=3, cost_usd=0.02)


@pytest.fixture(scope="module")
def split() -> Evaluation:
    """One window decided in 2023 (before the April 2024 cutoff), one in 2025 (after)."""
    return evaluation(
        (BEFORE_ID, datetime(2023, 1, 2, tzinfo=UTC)), (AFTER_ID, datetime(2025, 3, 3, tzinfo=UTC))
    )


def test_a_cutoff_comes_from_the_setting_then_the_row_then_models_dev(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = load_settings()
    openai = run_cutoff(settings, LlmChoice(provider="openai", model="gpt-4.1"), [LlmRole.QUICK])
    assert openai.models[0].stated == "2024-04" and "models.dev" in openai.models[0].source
    assert openai.last_day == date(2024, 4, 30)

    offline = run_cutoff(settings, LlmChoice(), list(LlmRole))
    assert offline.tag(datetime(1990, 1, 1, tzinfo=UTC)) is CutoffTag.AFTER

    unknown = run_cutoff(settings, LlmChoice(provider="vllm"), [LlmRole.QUICK])
    assert not unknown.known and "QUANTDESK_VLLM__KNOWLEDGE_CUTOFF" in unknown.describe()
    assert unknown.tag(datetime(2030, 1, 1, tzinfo=UTC)) is CutoffTag.UNKNOWN

    monkeypatch.setenv("QUANTDESK_VLLM__KNOWLEDGE_CUTOFF", "2024-09-15")
    configured = run_cutoff(load_settings(), LlmChoice(provider="vllm"), [LlmRole.QUICK])
    assert configured.last_day == date(2024, 9, 15)
    assert configured.tag(datetime(2024, 9, 15, 20, tzinfo=UTC)) is CutoffTag.BEFORE
    assert configured.tag(datetime(2024, 9, 16, tzinfo=UTC)) is CutoffTag.AFTER


def test_every_registry_cutoff_is_a_date_or_never() -> None:
    for spec in PROVIDERS.values():
        for stated in spec.knowledge_cutoffs.values():
            assert stated == "never" or last_day_of(stated).year > 2000


def test_a_window_before_the_cutoff_is_tagged_in_every_report_format(split: Evaluation) -> None:
    markdown = render_markdown(split)
    lead = markdown.split("\n\n")[1]
    assert lead.startswith("**Headline, after the training cutoff: accuracy 100.0%")
    assert "Before the cutoff (the models may remember these)" in lead
    assert "| before cutoff | 1 | 0 | 100.0% |" in markdown
    assert f"- `{BEFORE_ID}`: decided 2023-02-27 00:00, before the cutoff" in markdown
    assert "## Trading the calls" in markdown and "Sharpe [95% CI]" in markdown
    assert "The ledger holds 3 evaluation configuration(s)" in markdown

    rows = {row["asset"]: row for row in csv.DictReader(io.StringIO(render_csv(split.summary)))}
    assert rows["before cutoff"]["n"] == rows["after cutoff"]["n"] == "1"

    windows = {w["window_id"]: w for w in json.loads(render_json(split))["windows"]}
    assert windows[BEFORE_ID]["cutoff"] == "before cutoff"
    assert windows[AFTER_ID]["cutoff"] == "after cutoff"

    assert [row.label for row in plotted_rows(split.summary)][-2:] == [
        "before cutoff",
        "after cutoff",
    ]
    assert render_accuracy_plot(split.summary).startswith(b"\x89PNG")

    terminal = Console(width=200, record=True)
    terminal.print(summary_table(split.summary))
    assert "before cutoff" in terminal.export_text()

    result = {"summary": split.summary.model_dump(mode="json")}
    page = templates.env.get_template("studies.html").render(
        request=Request({"type": "http", "query_string": b"", "headers": []}),
        evaluations=[{"workflow_id": "evaluate-1", "status": "completed", "result": result}],
        backtests=[],
    )
    assert "before cutoff: 100.0% (n 1)" in page


def test_a_run_entirely_before_the_cutoff_says_so_first() -> None:
    early = evaluation((BEFORE_ID, datetime(2023, 1, 2, tzinfo=UTC)))
    assert early.summary.all_before_cutoff
    assert (
        render_markdown(early)
        .split("\n\n")[1]
        .startswith("**All 1 scored windows fall before the models' training cutoff (2024-04-30)")
    )


def test_backtest_steps_are_tagged_and_the_headline_is_after_the_cutoff() -> None:
    days = [datetime(2024, 4, 25, tzinfo=UTC) + timedelta(days=i) for i in range(12)]
    prices = [PricePoint(time=day, close=100 + i) for i, day in enumerate(days)]
    schedule = WalkForward(prices=prices, steps=[0, 3, 6, 9], every=3)
    book = Book(
        symbol="GOOG",
        flow=Flow.QUANTAGENT,
        allow_short=True,
        schedule=schedule,
        records=[
            StepRecord(
                step=k, as_of=days[s], signal="LONG", position=Position.LONG, workflow_id=f"s{k}"
            )
            for k, s in enumerate(schedule.steps)
        ],
    )
    claims = measure_backtest(
        book, CUTOFF, trials=2, trial_sharpes=[0.1, 0.3], rivals=[], cost_usd=0.4
    )
    assert claims.tags == [CutoffTag.BEFORE, CutoffTag.BEFORE, CutoffTag.AFTER, CutoffTag.AFTER]
    after = claims.period(CutoffTag.AFTER)
    assert after is not None and after.steps == 2
    assert after.strategy.cumulative_return == pytest.approx(111 / 106 - 1)
    assert claims.strategy.cost_per_decision == pytest.approx(0.1)

    strategy, benchmark = book.scores()
    markdown = render_report(book, strategy, benchmark, claims)
    assert markdown.split("\n\n")[1].startswith("**Headline, after the training cutoff: +4.72%")
    assert "| 1 | 2024-04-25 | LONG |  | long | +3.00% |  | before cutoff |" in markdown
    assert "deflated Sharpe ratio" in markdown

    rows = list(csv.DictReader(io.StringIO(equity_csv(book, claims.tags))))
    assert [r["cutoff"] for r in rows[:6]] == ["before cutoff"] * 6
    assert rows[-1]["cutoff"] == "after cutoff"
    assert render_equity_chart(book, CUTOFF.last_day).startswith(b"\x89PNG")
