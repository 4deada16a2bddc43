"""Every Pipeline agent's prompt, as ``quantdesk prompt show`` prints it, against its golden copy.

The prompts are rehearsed on GOOG as of 2012-06-01 over the default data routes with
an empty local folder (bundled prices, the sim vendor for the rest): real data, no
network, deterministic. The other flows' agents are compared in their own test
modules; every registered agent has a copy (``tests.golden_prompts`` says how to
refresh them).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shared.agents import quantagent as qa
from shared.agents import quantagent_agents as qa_agents
from shared.agents import reflector
from shared.agents.pipeline.rehearsal import rehearse, render_rehearsed
from shared.agents.pipeline.roles import AGENTS
from shared.agents.prompt_text import render_prompt
from shared.agents.reflection import REFLECTOR, MarketOutcome, ReflectionInputs, Stance
from shared.agents.spec import AGENT_SPECS, AgentSpec
from shared.config import load_settings
from shared.data.analysis_time import analysis_time
from shared.data.factory import build_router
from shared.memory import MemoryRole
from shared.storage.buckets import CHARTS_BUCKET
from shared.storage.objects import ObjectRef
from shared.ta.patterns import Bias
from shared.tools.registry import ToolServices
from tests.golden_prompts import SNAPSHOTS, golden_diff, prompt_show

ROOT = Path(__file__).resolve().parent.parent
SYMBOL = "GOOG"
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
BUILT_IN = sorted(AGENTS)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> ToolServices:
    folder = tmp_path_factory.mktemp("prompt-data")
    return ToolServices(router=build_router(load_settings(data_dir=folder)))


@pytest.mark.parametrize("agent", BUILT_IN)
def test_the_prompt_matches_its_golden_copy(agent: str, services: ToolServices) -> None:
    when = analysis_time(services.router, SYMBOL, AS_OF).as_of
    shown = render_rehearsed(rehearse(agent, SYMBOL, when, services))

    diff = golden_diff(agent, shown)
    assert not diff, diff


def _fixed_inputs() -> dict[str, Any]:
    """QuantAgent's and the reflector's inputs, written out: their prompts are short and
    read no data beyond what is given here."""
    chart = "quantagent/golden/{}.png"
    pattern = qa.PatternReport(
        pattern=None, bias=Bias.NEUTRAL, confidence=0.2, analysis="No classical pattern is clear."
    )
    trend = qa.TrendReport(
        prediction=qa.TrendPrediction.UP,
        price_action=qa.PriceAction.BOUNCE,
        confidence=0.55,
        analysis="close 570.98 near support 565.2",
    )
    outcome = MarketOutcome(
        symbol=SYMBOL,
        benchmark="^GSPC",
        start=AS_OF,
        end=datetime(2012, 6, 8, tzinfo=UTC),
        horizon_bars=5,
        horizon_days=7,
        start_close=570.98,
        end_close=580.45,
        benchmark_start_close=1278.04,
        benchmark_end_close=1325.66,
        stock_return=0.0166,
        benchmark_return=0.0373,
        alpha=-0.0207,
        vendor="bundled",
    )
    return {
        qa.INDICATOR_AGENT: qa.IndicatorInputs(
            symbol=SYMBOL, timeframe="1d", bar_count=100, last_time=AS_OF.isoformat()
        ),
        qa.PATTERN_AGENT: qa.ChartInputs(
            symbol=SYMBOL,
            timeframe="1d",
            chart=ObjectRef(bucket=CHARTS_BUCKET, key=chart.format("pattern_chart")),
        ),
        qa.TREND_AGENT: qa.ChartInputs(
            symbol=SYMBOL,
            timeframe="1d",
            chart=ObjectRef(bucket=CHARTS_BUCKET, key=chart.format("trend_chart")),
        ),
        qa.DECISION_AGENT: qa.DecisionInputs(
            symbol=SYMBOL,
            timeframe="1d",
            indicator_report="**Momentum: bearish** (score -0.40 on a -1..+1 scale)",
            pattern_report=pattern,
            trend_report=trend,
        ),
        REFLECTOR: ReflectionInputs(
            role=MemoryRole.BULL,
            stance=Stance.LONG,
            situation="GOOG close below its 50-bar SMA, RSI soft, market analyst bearish",
            decision="Buy the dip: the 50-bar SMA is above the 200-bar SMA.",
            outcome=outcome,
        ),
    }


@pytest.mark.parametrize("agent", [*qa_agents.QUANTAGENT, reflector.SPEC], ids=lambda s: s.name)
def test_a_fixed_input_prompt_matches_its_golden_copy(agent: AgentSpec[Any, Any]) -> None:
    note = "inputs: written out in tests/test_prompt_snapshots.py"
    shown = render_prompt(agent, _fixed_inputs()[agent.name], [note])

    diff = golden_diff(agent.name, shown)

    assert not diff, diff


def test_every_agent_has_a_golden_prompt() -> None:
    assert sorted(path.stem for path in SNAPSHOTS.glob("*.txt")) == sorted(AGENT_SPECS)


def test_prompt_show_prints_the_golden_prompt(tmp_path: Path) -> None:
    done = prompt_show(tmp_path, "bull_researcher", "--symbol", SYMBOL, "--as-of", "2012-06-01")

    assert done.returncode == 0, done.stderr
    assert done.stdout == (SNAPSHOTS / "bull_researcher.txt").read_text()


def test_prompt_show_names_the_known_agents_for_an_unknown_one(tmp_path: Path) -> None:
    done = prompt_show(tmp_path, "bull", "--as-of", "2012-06-01")

    assert done.returncode == 1
    assert "unknown agent 'bull'" in done.stderr
    assert "bull_researcher" in done.stderr and "portfolio_manager" in done.stderr
