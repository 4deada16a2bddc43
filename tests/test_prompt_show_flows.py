"""``quantdesk prompt show`` for the QuantAgent, Scan and reflector agents: the prompt printed is
the one the workflow's request carries for the inputs its run builds as of T.

Data: the default routes over an empty local folder (bundled prices, the sim vendor for the
rest), GOOG / the Scan as of 2012-06-01, no network, no Temporal server.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.market import LoadBarsRequest, read_window
from activities.reflection import DEFAULT_HORIZON_BARS
from client.prompt_preview import PromptRequest, flow_of, preview
from shared.agents import quantagent as qa
from shared.agents import quantagent_agents as agents
from shared.agents.prompt_text import render_prompt
from shared.agents.reflection import ReflectionInputs
from shared.agents.rehearsed import Rehearsed, offline_answer, render_rehearsed
from shared.agents.scan.facts import top_sectors
from shared.agents.scan.roles import AGENTS as SCAN_AGENTS
from shared.agents.spec import AGENT_SPECS
from shared.config import Settings, load_settings
from shared.data.factory import build_router
from shared.errors import InvalidInput
from shared.llm.contracts import LlmChoice
from shared.market.bars import Bar, Timeframe
from shared.memory import MemoryRole
from shared.tools.registry import ToolServices
from tests.golden_prompts import prompt_show
from workflows.llm_calls import agent_request
from workflows.quantagent import DEFAULT_LOOKBACK, MIN_BARS

ROOT = Path(__file__).resolve().parent.parent
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Desk:
    """The settings and the tools' services a run of this machine reads through."""

    settings: Settings
    services: ToolServices


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Desk:
    settings = load_settings(data_dir=tmp_path_factory.mktemp("prompt-data"))
    return Desk(settings, ToolServices(router=build_router(settings)))


def _shown(agent: str, desk: Desk, **flags: object) -> tuple[Rehearsed, str]:
    request = PromptRequest(agent=agent, as_of=AS_OF, **flags)  # type: ignore[arg-type]
    rehearsed = preview(request, desk.settings, desk.services)
    return rehearsed, render_rehearsed(rehearsed)


def _assert_printed_as_requested(rehearsed: Rehearsed, shown: str) -> None:
    """What is printed is the workflow's request for these inputs (``agent_request``)."""
    request = agent_request(rehearsed.spec, rehearsed.inputs, LlmChoice(), "preview.raw.txt")
    assert request.messages == rehearsed.messages()
    header = shown.split("\n\n", 1)[0].splitlines()
    notes = [line.removeprefix("# ") for line in header[2:]]
    assert shown == render_prompt(rehearsed.spec, rehearsed.inputs, notes)
    for message in request.messages:
        assert message.content in shown


def _window() -> list[Bar]:
    request = LoadBarsRequest(
        symbol="GOOG",
        timeframe=Timeframe.D1,
        as_of=AS_OF,
        lookback=DEFAULT_LOOKBACK,
        min_bars=MIN_BARS,
    )
    return read_window(request).bars


@pytest.mark.parametrize("agent", [spec.name for spec in agents.QUANTAGENT])
def test_a_quantagent_prompt_is_the_request_over_the_bars_as_of_t(agent: str, desk: Desk) -> None:
    rehearsed, shown = _shown(agent, desk, symbol="GOOG")

    _assert_printed_as_requested(rehearsed, shown)
    assert "2012-06-01" in shown and "2012-06-04" not in shown


def test_the_pattern_agent_sees_the_chart_image_by_default(desk: Desk) -> None:
    rehearsed, shown = _shown(agents.PATTERN.name, desk)

    assert isinstance(rehearsed.inputs, qa.ChartInputs)
    assert rehearsed.inputs.chart is not None and rehearsed.inputs.window == []
    assert "[image s3://charts/quantagent/<workflow id>/<run id>/pattern_chart.png]" in shown


def test_the_trend_agent_reads_the_last_50_bars_as_text_when_asked(
    desk: Desk,
) -> None:
    rehearsed, shown = _shown(agents.TREND.name, desk, chart_input="text")

    assert isinstance(rehearsed.inputs, qa.ChartInputs)
    assert rehearsed.inputs.chart is None and "[image" not in shown
    assert rehearsed.inputs.window == _window()[-qa.TREND_WINDOW :]
    assert rehearsed.inputs.trendlines is not None


def test_the_decision_agent_reads_its_upstream_reports_from_the_offline_rules(
    desk: Desk,
) -> None:
    rehearsed, _ = _shown(agents.DECISION.name, desk)
    pattern, _ = _shown(agents.PATTERN.name, desk)
    trend, _ = _shown(agents.TREND.name, desk)

    inputs = rehearsed.inputs
    assert isinstance(inputs, qa.DecisionInputs)
    assert isinstance(pattern.inputs, qa.ChartInputs) and isinstance(trend.inputs, qa.ChartInputs)
    assert inputs.pattern_report == offline_answer(agents.PATTERN, pattern.inputs)
    assert inputs.trend_report == offline_answer(agents.TREND, trend.inputs)
    assert sorted(inputs.indicator_outputs) == ["macd", "roc", "rsi", "stoch", "willr"]
    assert rehearsed.offline_upstream == ("indicator_agent", "pattern_agent", "trend_agent")


@pytest.mark.parametrize("agent", list(SCAN_AGENTS))
def test_a_scan_prompt_is_the_request_over_the_scans_reads_as_of_t(agent: str, desk: Desk) -> None:
    rehearsed, shown = _shown(agent, desk)

    _assert_printed_as_requested(rehearsed, shown)
    assert rehearsed.inputs.as_of == AS_OF  # type: ignore[attr-defined]
    assert list(SCAN_AGENTS).index(agent) == len(rehearsed.offline_upstream)


def test_the_deep_dive_digs_into_the_sectors_the_sector_scanner_read(
    desk: Desk,
) -> None:
    smart, _ = _shown("smart_money_scanner", desk)
    deep, _ = _shown("industry_deep_dive", desk)

    assert deep.inputs.sectors == top_sectors(smart.inputs.sectors)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("agent", "flag", "value"),
    [
        ("macro_synthesis", "symbol", "GOOG"),
        ("decision_agent", "chart_input", "text"),
        ("bull_researcher", "timeframe", Timeframe.H1),
        ("bull_researcher", "role", MemoryRole.BULL),
        ("reflector", "timeframe", Timeframe.D1),
    ],
)
def test_a_flag_the_agent_does_not_take_is_refused_by_name(
    agent: str, flag: str, value: object, desk: Desk
) -> None:
    with pytest.raises(InvalidInput) as refused:
        request = PromptRequest(agent=agent, **{flag: value})  # type: ignore[arg-type]
        preview(request, desk.settings, desk.services)

    assert f"--{flag.replace('_', '-')}" in str(refused.value)
    assert "Drop" in str(refused.value)


def test_prompt_show_prints_a_quantagent_prompt_in_text_mode(tmp_path: Path, desk: Desk) -> None:
    done = prompt_show(tmp_path, "pattern_agent", "--as-of", "2012-06-01", "--chart-input", "text")

    assert done.returncode == 0, done.stderr
    assert done.stdout == _shown(agents.PATTERN.name, desk, chart_input="text")[1]


def test_prompt_show_refuses_a_flag_the_agent_does_not_take(tmp_path: Path) -> None:
    done = prompt_show(tmp_path, "sector_scanner", "--symbol", "GOOG")

    assert done.returncode == 1
    assert "sector_scanner (Scan) takes no --symbol" in done.stderr


@pytest.mark.parametrize("role", [MemoryRole.PORTFOLIO_MANAGER, MemoryRole.BULL])
def test_the_reflector_grades_an_offline_decision_whose_horizon_ended_by_t(
    role: MemoryRole, desk: Desk
) -> None:
    rehearsed, shown = _shown("reflector", desk, role=role)

    _assert_printed_as_requested(rehearsed, shown)
    inputs = rehearsed.inputs
    assert isinstance(inputs, ReflectionInputs)
    assert inputs.role is role
    assert inputs.outcome.end == AS_OF and inputs.outcome.start < AS_OF
    assert inputs.outcome.horizon_bars == DEFAULT_HORIZON_BARS
    decided = rehearsed.offline_upstream
    assert decided[-1] == "portfolio_manager" and "bull_researcher" in decided


def test_every_registered_agent_can_be_shown() -> None:
    flows = {spec.name: flow_of(spec).name for spec in AGENT_SPECS.values()}

    assert set(flows.values()) == {"Pipeline", "Scan", "QuantAgent", "Portfolio", "Reflect"}
