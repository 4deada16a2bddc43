"""The Scan workflow end to end: time-skipping server, real S3, real activities and tools.

The data are the sim market's (and the bundled index bars). Offline runs check
the graph from the workflow history (who overlapped, who waited for whom, who
ran once), the stored reports and the shortlist against the universe. Runs on
the ``openai`` provider go to ``FakeLlmServer`` over HTTP, which serves a
summary whose shortlist the data refute, to check the repair turn and the
failure after it.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from rich.console import Console
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

import activities.tools as tool_activities
import cli.run as cli_run
import cli.views as cli_views
from activities.llm import LlmActivities
from activities.research import ResearchActivities
from activities.scan import SCAN_ACTIVITIES
from activities.tools import TOOL_ACTIVITIES
from shared.agents.scan.facts import answers_of_results, candidates, flagged, top_sectors
from shared.agents.scan.roles import (
    AGENTS,
    INDUSTRY_DEEP_DIVE,
    MACRO_SYNTHESIS,
    PHASE_ONE,
    SCANNER_AGENTS,
    SMART_MONEY_SCANNER,
    ScannerKind,
)
from shared.agents.scan.schemas import ScanSummary
from shared.config import Settings, load_settings
from shared.data.bundled import BundledVendor
from shared.data.contracts import DataKind
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.data.sim.world import DEFAULT_END
from shared.llm.contracts import ChatRequest, ToolBatch, ToolCall, ToolRequest
from shared.llm.providers import QUEUE_OFFLINE, QUEUE_OPENAI
from shared.market.bars import Timeframe
from shared.queues import TOOLS_QUEUE
from shared.storage.objects import ObjectStore
from shared.tools.registry import ToolServices, run_tool
from tests.fakes.llm_server import FakeLlmServer
from tests.servers import running_workers
from workers.main import WorkerPlan
from workflows.pipeline_contracts import MACRO_CONTEXT_MAX
from workflows.scan import ScanProgress, ScanResult, ScanWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-scan"
KEY = "sk-test-scan-repair"
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
SIM = SimVendor()
EQUITIES = [listing for listing in SIM.universe(AS_OF) if listing.asset_type == "equity"]
ROUTER = DataRouter(
    {"bundled": BundledVendor(), "sim": SIM},
    {kind: ("bundled", "sim") if kind is DataKind.OHLCV else ("sim",) for kind in DataKind},
)
SCREENS = ("screen_unusual_volume", "screen_insider_buying", "screen_52_week_high_breakouts")
TEMPORAL_CLI = Path(sys.executable).parent / "temporal"


@pytest.fixture(scope="module")
def vendor() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    ts_env: WorkflowEnvironment, s3_settings: Settings, vendor: FakeLlmServer
) -> AsyncIterator[ObjectStore]:
    store = ObjectStore.from_settings(s3_settings)
    research = ResearchActivities(s3_settings, router=ROUTER, store=store)
    openai = load_settings(
        openai={"api_key": KEY, "base_url": vendor.base_url_openai},
        data_dir=s3_settings.data_dir,
        s3=s3_settings.s3.model_dump(),
    )
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ScanWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[
                *TOOL_ACTIVITIES,
                research.resolve_as_of,
                research.store_report,
                *SCAN_ACTIVITIES,
            ],
            threads=True,
        ),
        WorkerPlan(
            queue=QUEUE_OFFLINE, activities=[LlmActivities(s3_settings, QUEUE_OFFLINE).chat]
        ),
        WorkerPlan(queue=QUEUE_OPENAI, activities=[LlmActivities(openai, QUEUE_OPENAI).chat]),
    ]
    with pytest.MonkeyPatch.context() as patch:
        # The tools and the shortlist check read through the worker's services; here, the test's.
        patch.setattr(
            tool_activities, "tool_services", lambda: ToolServices(router=ROUTER, store=store)
        )
        async with running_workers(ts_env.client, plans):
            yield store


async def _run(env: WorkflowEnvironment, payload: object) -> tuple[WorkflowHandle[Any, Any], Any]:
    handle = await env.client.start_workflow(
        "Scan", payload, id=f"scan-{uuid.uuid4()}", task_queue=QUEUE, result_type=ScanResult
    )
    return handle, await handle.result()


@dataclass
class Timeline:
    """Each agent's activities in the history: when they were scheduled and completed."""

    starts: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    ends: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    summaries: list[str] = field(default_factory=list)
    tool_calls: dict[str, list[ToolCall]] = field(default_factory=lambda: defaultdict(list))

    def first_start(self, agent: str) -> int:
        return min(self.starts[agent])

    def last_end(self, agent: str) -> int:
        return max(self.ends[agent])


async def _timeline(env: WorkflowEnvironment, handle: WorkflowHandle[Any, Any]) -> Timeline:
    """Every chat and tool activity of the run, by the agent it served."""
    converter = env.client.data_converter
    timeline = Timeline()
    agent_of: dict[int, str] = {}
    for event in (await handle.fetch_history()).events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            [summary] = await converter.decode([event.user_metadata.summary], [str])
            timeline.summaries.append(summary)
            if attrs.activity_type.name == "chat":
                [request] = await converter.decode(attrs.input.payloads, [ChatRequest])
                agent = request.agent
            elif attrs.activity_type.name == "run_tools":
                [batch] = await converter.decode(attrs.input.payloads, [ToolBatch])
                agent = summary.split(":")[0]
                timeline.tool_calls[agent] += batch.calls
            else:
                continue
            agent_of[event.event_id] = agent
            timeline.starts[agent].append(event.event_id)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            if scheduled in agent_of:
                timeline.ends[agent_of[scheduled]].append(event.event_id)
    return timeline


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def latest(
    ts_env: WorkflowEnvironment, workers: ObjectStore
) -> tuple[WorkflowHandle[Any, Any], ScanResult]:
    """A scan started the way docs/scan.md says, with the Temporal CLI and ``--input '{}'``."""
    workflow_id = f"scan-cli-{uuid.uuid4()}"
    address = ts_env.client.service_client.config.target_host
    started = subprocess.run(
        [str(TEMPORAL_CLI), "workflow", "start", "--address", address, "--type", "Scan"]
        + ["--task-queue", QUEUE, "--workflow-id", workflow_id, "--input", "{}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    handle = ts_env.client.get_workflow_handle(workflow_id, result_type=ScanResult)
    return handle, await handle.result()


async def test_an_empty_input_scans_the_latest_data_offline(
    latest: tuple[WorkflowHandle[Any, Any], ScanResult],
) -> None:
    handle, result = latest

    world_end = datetime.combine(DEFAULT_END, datetime.max.time(), UTC)
    assert result.as_of == SIM.ohlcv("XLK", Timeframe.D1, world_end, 1)[-1].time
    assert 1 <= len(result.summary.stocks_to_investigate) <= 10 == result.max_tickers
    assert set(result.usage.by_agent) == set(AGENTS)
    assert result.usage.total.calls == sum(u.calls for u in result.usage.by_agent.values())
    assert not result.repaired
    progress = await handle.query("progress", result_type=ScanProgress)
    assert progress.phase == "done"
    assert {
        step: state.value for step, state in progress.steps.items() if state.value != "done"
    } == {"shortlist_repair": "skipped"}


async def test_the_first_three_scanners_overlap_and_smart_money_waits_for_sector(
    ts_env: WorkflowEnvironment, latest: tuple[WorkflowHandle[Any, Any], ScanResult]
) -> None:
    timeline = await _timeline(ts_env, latest[0])

    phase_one = [SCANNER_AGENTS[kind] for kind in PHASE_ONE]
    assert max(timeline.first_start(a) for a in phase_one) < min(
        timeline.ends[a][0] for a in phase_one
    )
    sector = SCANNER_AGENTS[ScannerKind.SECTOR]
    assert timeline.first_start(SMART_MONEY_SCANNER) > timeline.last_end(sector)
    # Its screens were run for it, once each.
    assert {call.name for call in timeline.tool_calls[SMART_MONEY_SCANNER]} == set(SCREENS)


async def test_the_deep_dive_and_synthesis_run_once_after_all_four_scanners(
    ts_env: WorkflowEnvironment, latest: tuple[WorkflowHandle[Any, Any], ScanResult]
) -> None:
    handle, result = latest
    timeline = await _timeline(ts_env, handle)

    scanners = list(SCANNER_AGENTS.values())
    assert timeline.first_start(INDUSTRY_DEEP_DIVE) > max(map(timeline.last_end, scanners))
    assert timeline.first_start(MACRO_SYNTHESIS) > timeline.last_end(INDUSTRY_DEEP_DIVE)
    for agent in (INDUSTRY_DEEP_DIVE, MACRO_SYNTHESIS):
        assert timeline.summaries.count(f"{agent} round 1") == 1
    industry = [c for c in timeline.tool_calls[INDUSTRY_DEEP_DIVE] if c.name.startswith("get_ind")]
    assert [c.arguments["sector"] for c in industry] == [s.value for s in result.deep_dive_sectors]
    assert len(industry) == 3


async def test_the_shortlist_validates_and_its_tickers_exist_as_of_the_scan(
    latest: tuple[WorkflowHandle[Any, Any], ScanResult],
) -> None:
    _, result = latest

    summary = ScanSummary.model_validate(result.summary.model_dump())
    listings = {listing.symbol: listing for listing in SIM.universe(result.as_of)}
    for stock in summary.stocks_to_investigate:
        assert listings[stock.ticker].asset_type == "equity"
        assert listings[stock.ticker].sector is stock.sector
    screened = [
        run_tool(
            ToolRequest(
                call=ToolCall(id=name, name=name), context={"as_of": result.as_of.isoformat()}
            ),
            lambda: ToolServices(router=ROUTER),
        )
        for name in SCREENS
    ]
    smart = set(flagged(candidates(answers_of_results(screened))))
    assert {s.ticker for s in summary.stocks_to_investigate if s.smart_money} <= smart


async def test_every_report_and_the_summary_are_stored_under_the_run_keys(
    workers: ObjectStore, latest: tuple[WorkflowHandle[Any, Any], ScanResult]
) -> None:
    handle, result = latest
    prefix = f"scan/{handle.id}/"

    stored = workers.get_bytes(result.summary_json.report)
    markdown = workers.get_bytes(result.summary_markdown.report).decode()
    assert ScanSummary.model_validate_json(stored) == result.summary
    assert all(f"| {s.ticker} |" in markdown for s in result.summary.stocks_to_investigate)
    assert set(result.reports) == set(AGENTS) - {MACRO_SYNTHESIS}
    for agent, report in result.reports.items():
        assert report.report.key.startswith(prefix) and report.report.key.endswith(f"{agent}.md")
        assert workers.get_bytes(report.report).decode().startswith("# ")
    assert result.summary_json.report.key == f"{result.summary_markdown.report.key[:-3]}.json"
    # A Pipeline reads the Markdown summary as its macro context (macro_context_key).
    assert len(markdown) <= MACRO_CONTEXT_MAX


async def test_a_dated_scan_digs_into_the_three_largest_sector_moves_and_keeps_max_tickers(
    ts_env: WorkflowEnvironment, workers: ObjectStore
) -> None:
    _, result = await _run(ts_env, {"as_of": AS_OF.isoformat(), "max_tickers": 3})

    expected = [move.sector for move in top_sectors(SIM.sectors(AS_OF))]
    assert result.deep_dive_sectors == expected
    assert result.as_of == AS_OF
    assert 1 <= len(result.summary.stocks_to_investigate) <= 3
    assert result.summary.macro_context.central_bank_stance.startswith("on hold")


async def test_quantdesk_run_scan_follows_the_run_and_prints_the_shortlist(
    ts_env: WorkflowEnvironment, workers: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = Console(record=True, width=240)
    monkeypatch.setattr(cli_run, "console", shown)
    monkeypatch.setattr(cli_views, "console", shown)
    settings = load_settings(
        temporal={"address": ts_env.client.service_client.config.target_host},
        queues={"workflows": QUEUE},
    )
    workflow_id = f"scan-cli-run-{uuid.uuid4()}"

    status = await cli_run._run_scan(
        settings, {"as_of": AS_OF.isoformat(), "max_tickers": 4}, workflow_id
    )

    text = shown.export_text()
    result = await ts_env.client.get_workflow_handle(workflow_id, result_type=ScanResult).result()
    assert status == 0
    assert "Stocks to investigate, scan as of 2012-06-01" in text
    assert all(stock.ticker in text for stock in result.summary.stocks_to_investigate)
    assert result.summary_markdown.url in text.replace("\n", "")


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"max_tickers": 0}, "max_tickers"),
        ({"max_tickers": 26}, "max_tickers"),
        ({"as_of": "2012-06-01T00:00:00"}, "as_of"),
        ({"as_of": "1990-01-01T00:00:00Z"}, "as_of"),
        ({"llm": {"provider": "skynet"}}, "llm.provider"),
    ],
)
async def test_bad_input_fails_the_run_naming_the_field(
    ts_env: WorkflowEnvironment, workers: ObjectStore, payload: dict[str, Any], field: str
) -> None:
    with pytest.raises(WorkflowFailureError) as caught:
        await _run(ts_env, payload)

    cause = _application_error(caught.value)
    assert cause.non_retryable
    assert f"`{field}`" in cause.message


def _application_error(error: WorkflowFailureError) -> ApplicationError:
    cause = error.cause
    while cause is not None and not isinstance(cause, ApplicationError):
        cause = cause.cause
    assert isinstance(cause, ApplicationError)
    return cause


# --- a real vendor's wire format, through FakeLlmServer -------------------------------------

GOOD, OTHER = EQUITIES[0], EQUITIES[-1]
WRONG_SECTOR = next(listing for listing in EQUITIES if listing.sector is not GOOD.sector)


def _report(name: str) -> dict[str, Any]:
    return {
        "headline": f"{name}: the tape is quiet",
        "findings": ["nothing moved more than 1%"],
        "report_markdown": f"# {name}\n\nNothing moved more than 1%.",
    }


def _stock(ticker: str, sector: str) -> dict[str, Any]:
    return {
        "ticker": ticker,
        "name": f"{ticker} Inc",
        "sector": sector,
        "rationale": "led its sector over 21 sessions",
        "thesis_angle": "momentum",
        "conviction": "medium",
    }


def _summary(*stocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "timeframe": "1-3 months",
        "executive_summary": "A quiet market with a few leaders.",
        "macro_context": {"economic_cycle": "mid-cycle", "central_bank_stance": "on hold"},
        "key_themes": [
            {
                "theme": "leadership",
                "description": "a few names lead",
                "conviction": "low",
                "timeframe": "1-3 months",
            }
        ],
        "stocks_to_investigate": list(stocks),
    }


def _script(fake: FakeLlmServer, *summaries: dict[str, Any]) -> None:
    """Five scanner reports (any order serves: they are alike), then the synthesis replies."""
    for index in range(5):
        fake.reply_json(_report(f"scanner {index}"))
    for summary in summaries:
        fake.reply_json(summary)


INVALID = _summary(
    _stock("ZZZQ", GOOD.sector.value), _stock(WRONG_SECTOR.symbol, GOOD.sector.value)
)
"""Schema-valid, refuted by the data: an unknown ticker and a stock in the wrong sector."""


async def test_a_repair_turn_fixes_a_shortlist_the_data_refute(
    ts_env: WorkflowEnvironment, workers: ObjectStore, vendor: FakeLlmServer
) -> None:
    vendor.requests.clear()
    fixed = _summary(
        _stock(GOOD.symbol, GOOD.sector.value), _stock(OTHER.symbol, OTHER.sector.value)
    )
    _script(vendor, INVALID, fixed)

    _, result = await _run(ts_env, {"as_of": AS_OF.isoformat(), "llm": {"provider": "openai"}})

    assert result.repaired
    assert result.summary.tickers() == [GOOD.symbol, OTHER.symbol]
    assert result.usage.by_agent[MACRO_SYNTHESIS].calls == 2
    [repair] = [
        m["content"]
        for m in vendor.last_request.body["messages"]
        if m["role"] == "user" and m["content"].startswith("That reply is not valid")
    ]
    assert "ZZZQ is not in the data universe as of 2012-06-01" in repair
    assert f"{WRONG_SECTOR.symbol} is in {WRONG_SECTOR.sector.value}" in repair
    assert vendor.pending == 0


async def test_a_shortlist_still_refuted_after_the_repair_is_corrected_by_the_data(
    ts_env: WorkflowEnvironment, workers: ObjectStore, vendor: FakeLlmServer
) -> None:
    _script(vendor, INVALID, INVALID)

    _, result = await _run(ts_env, {"as_of": AS_OF.isoformat(), "llm": {"provider": "openai"}})

    assert result.repaired
    # The unknown ticker is dropped; the misfiled stock keeps its place in its true sector.
    [kept] = result.summary.stocks_to_investigate
    assert (kept.ticker, kept.sector) == (WRONG_SECTOR.symbol, WRONG_SECTOR.sector)
    assert any("dropped ZZZQ" in c for c in result.corrections)
    assert any(WRONG_SECTOR.symbol in c and "corrected" in c for c in result.corrections)
    markdown = workers.get_bytes(result.summary_markdown.report).decode()
    assert "## Shortlist corrected by the data" in markdown and "dropped ZZZQ" in markdown
    assert vendor.pending == 0


async def test_a_shortlist_the_data_empty_completes_the_scan_saying_so(
    ts_env: WorkflowEnvironment, workers: ObjectStore, vendor: FakeLlmServer
) -> None:
    # Only names the universe does not hold as stocks, twice: nothing survives the data.
    outside = _summary(_stock("ZZZQ", GOOD.sector.value), _stock("QQQZ", GOOD.sector.value))
    _script(vendor, outside, outside)

    _, result = await _run(ts_env, {"as_of": AS_OF.isoformat(), "llm": {"provider": "openai"}})

    assert result.summary.stocks_to_investigate == []
    assert any("dropped ZZZQ" in c for c in result.corrections)
    assert result.corrections[-1] == (
        "no stock left to investigate: none of the tickers named is a stock of the universe "
        "as of 2012-06-01"
    )
    markdown = workers.get_bytes(result.summary_markdown.report).decode()
    assert "no stock left to investigate" in markdown
    assert vendor.pending == 0
