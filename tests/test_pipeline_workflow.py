"""The whole Pipeline offline: time-skipping server, real S3, real activities and tools.

GOOG reads the bundled bars; news, social and fundamentals come from the sim
market, which has fictional tickers only, so GOOG's other analysts answer from
"no data" (honestly). A sim ticker has data for all four. A local news file with
a bankruptcy headline for one sim ticker drives the critical-abort path. A fifth
analyst, registered from one spec in the test, runs through the whole graph.
"""

from __future__ import annotations

import json
import statistics
import urllib.request
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from shared.agents.pipeline.analyst import Desk, analyst_spec
from shared.agents.pipeline.evidence import Evidence
from shared.agents.pipeline.facts import Payloads
from shared.agents.pipeline.prompts import render_report
from shared.agents.pipeline.roles import (
    ANALYST_AGENTS,
    BEAR_RESEARCHER,
    BULL_RESEARCHER,
    DEBATER_AGENTS,
    PORTFOLIO_MANAGER,
    RESEARCH_MANAGER,
    TRADER,
)
from shared.agents.pipeline.schemas import AnalystKind, Rating, Speaker
from shared.agents.portfolio.inputs import DecisionLine, TickerDecision
from shared.agents.spec import register_agent, unregister_agent
from shared.config import Settings
from shared.data.bundled import BundledVendor
from shared.data.local import LocalVendor
from shared.data.router import DEFAULT_ROUTES, DataRouter
from shared.data.sim import SimVendor
from shared.llm.contracts import ChatRequest
from shared.memory import Lesson, MemoryRole, MemoryStore, Outcome, SourceRun
from shared.storage.buckets import REPORTS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore
from tests.servers import pipeline_workers
from workflows.debate_contracts import DebateResult, RiskResult
from workflows.pipeline_contracts import (
    PipelineDigest,
    PipelineProgress,
    PipelineResult,
    PipelineState,
)
from workflows.reflect import ReflectResult

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-pipeline"
AS_OF = "2012-06-01T00:00:00Z"
SIM_AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
SIM_SYMBOLS = [listing.symbol for listing in SimVendor().universe(SIM_AS_OF)]
FULL = SIM_SYMBOLS[0]
"""A sim ticker: every analyst has data."""
BANKRUPT = SIM_SYMBOLS[1]
"""A sim ticker whose local company news reports a bankruptcy."""
LESSON = "Trim a winner into strength before earnings"
ABORT_LESSON = "Exit at once on a bankruptcy filing; recoveries come too late"
MACRO = "Scan summary: late-cycle economy, hawkish central bank, tech leadership narrowing."


def _local_data(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    item = {
        "id": "bk1",
        "published_at": "2012-05-30T12:00:00Z",
        "title": f"{BANKRUPT} files for Chapter 11 bankruptcy protection",
        "summary": "The company filed for Chapter 11 after missing a bond payment.",
        "source": "Wire Desk",
        "symbols": [BANKRUPT],
        "topics": ["bankruptcy"],
        "sentiment": -0.9,
    }
    (root / "news.jsonl").write_text(json.dumps(item) + "\n")
    return root


def _memory(path: Path) -> MemoryStore:
    store = MemoryStore(f"sqlite:///{path}")
    store.record_lesson(
        Lesson(
            role=MemoryRole.BULL,
            symbol="GOOG",
            as_of=datetime(2011, 6, 1, tzinfo=UTC),
            situation="GOOG close above its 50-bar SMA, RSI firm, market analyst bullish trend",
            decision="Buy",
            outcome=Outcome(realised_return=-0.05, alpha=-0.04, horizon_days=30),
            lesson=LESSON,
            source=SourceRun(workflow_id="old-run", run_id="r1"),
        )
    )
    store.record_lesson(
        Lesson(
            role=MemoryRole.PORTFOLIO_MANAGER,
            symbol=BANKRUPT,
            as_of=datetime(2011, 3, 1, tzinfo=UTC),
            situation=f"{BANKRUPT} bankruptcy filing Chapter 11 missed bond payment",
            decision="Sell",
            outcome=Outcome(realised_return=0.2, alpha=0.18, horizon_days=30),
            lesson=ABORT_LESSON,
            source=SourceRun(workflow_id="old-run", run_id="r2"),
        )
    )
    return store


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    ts_env: WorkflowEnvironment, s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[None]:
    tmp = tmp_path_factory.mktemp("pipeline")
    router = DataRouter(
        {
            "local": LocalVendor(_local_data(tmp / "data")),
            "bundled": BundledVendor(),
            "sim": SimVendor(seed=s3_settings.data_seed),
        },
        DEFAULT_ROUTES,
    )
    async with pipeline_workers(
        ts_env.client, QUEUE, s3_settings, router, _memory(tmp / "memory.db")
    ):
        yield


RESULTS: dict[str, type] = {
    "Pipeline": PipelineResult,
    "Debate": DebateResult,
    "Risk": RiskResult,
    "Reflect": ReflectResult,
}


async def _start(env: WorkflowEnvironment, payload: object, flow: str = "Pipeline") -> Any:
    return await env.client.start_workflow(
        flow,
        payload,
        id=f"{flow.lower()}-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=RESULTS[flow],
    )


async def _run(env: WorkflowEnvironment, payload: dict[str, Any]) -> tuple[Any, PipelineResult]:
    handle = await _start(env, payload)
    return handle, await handle.result()


async def _chats(env: WorkflowEnvironment, handle: WorkflowHandle[Any, Any]) -> list[Any]:
    """Every ``chat`` activity of a run in schedule order: (summary, request, event id),
    and the completion events' scheduled ids."""
    converter = env.client.data_converter
    history = await handle.fetch_history()
    chats = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attrs = event.activity_task_scheduled_event_attributes
        if attrs.activity_type.name != "chat":
            continue
        [summary] = await converter.decode([event.user_metadata.summary], [str])
        [request] = await converter.decode(attrs.input.payloads, [ChatRequest])
        chats.append((summary, request, event.event_id))
    return chats


def _agents(chats: list[Any]) -> Counter[str]:
    return Counter(request.agent for _, request, _ in chats)


def _child(env: WorkflowEnvironment, handle: Any, name: str) -> Any:
    return env.client.get_workflow_handle(f"{handle.id}-{name}")


@pytest.mark.parametrize("rounds", [1, 2, 3])
async def test_every_agent_speaks_as_often_as_the_rounds_ask(
    ts_env: WorkflowEnvironment, workers: None, rounds: int
) -> None:
    handle, result = await _run(
        ts_env, {"symbol": "GOOG", "as_of": AS_OF, "debate_rounds": rounds, "risk_rounds": rounds}
    )

    debate = _agents(await _chats(ts_env, _child(ts_env, handle, "debate")))
    risk = _agents(await _chats(ts_env, _child(ts_env, handle, "risk")))
    main = _agents(await _chats(ts_env, handle))
    assert debate == {BULL_RESEARCHER: rounds, BEAR_RESEARCHER: rounds, RESEARCH_MANAGER: 1}
    assert risk == {
        DEBATER_AGENTS[s]: rounds
        for s in (Speaker.AGGRESSIVE, Speaker.CONSERVATIVE, Speaker.NEUTRAL)
    }
    assert main[TRADER] == main[PORTFOLIO_MANAGER] == 1
    assert set(main) == {*ANALYST_AGENTS.values(), TRADER, PORTFOLIO_MANAGER}
    assert [t.speaker for t in result.research_transcript] == [Speaker.BULL, Speaker.BEAR] * rounds
    assert len(result.risk_transcript) == 3 * rounds
    assert result.usage.total.calls == sum(main.values()) + sum(debate.values()) + sum(
        risk.values()
    )
    assert result.usage.by_agent[BULL_RESEARCHER].calls == rounds


async def test_the_four_analysts_run_at_once(ts_env: WorkflowEnvironment, workers: None) -> None:
    handle, _ = await _run(ts_env, {"symbol": FULL, "as_of": AS_OF})

    history = await handle.fetch_history()
    chats = await _chats(ts_env, handle)
    first = {}
    for _, request, event_id in chats:
        first.setdefault(request.agent, event_id)
    completed = [
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        and e.activity_task_completed_event_attributes.scheduled_event_id
        in {event_id for _, _, event_id in chats}
    ]
    analysts = [first[agent] for agent in ANALYST_AGENTS.values()]
    assert max(analysts) < min(completed)
    summaries = {summary for summary, _, _ in chats}
    assert {f"{agent} round 1" for agent in ANALYST_AGENTS.values()} <= summaries
    assert {TRADER, PORTFOLIO_MANAGER} <= summaries


async def test_a_sim_ticker_gets_four_informed_reports_and_a_stored_report(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    _, result = await _run(ts_env, {"symbol": FULL, "as_of": AS_OF})

    reports = result.reports.by_kind()
    assert len(reports) == 4
    assert all(len(report.key_points) >= 2 for report in reports.values())
    assert result.price is not None and result.price.last_close and result.price.atr
    assert result.proposal is not None and result.research_plan is not None
    with urllib.request.urlopen(result.report.url, timeout=10) as response:
        markdown = response.read().decode()
    order = ["Market analyst report", "Bull/bear debate", "Research plan", "Trader's proposal"]
    order += ["Risk debate", "Portfolio manager's decision", "# Data"]
    positions = [markdown.index(heading) for heading in order]
    assert positions == sorted(positions)
    assert result.report.report.key.startswith(f"pipeline/{result.workflow_id}/")
    # Every analyst's data tools name the vendor that answered, in the result and the report.
    assert {source.analyst for source in result.data} == set(AnalystKind)
    assert {source.vendor for source in result.data} <= {"sim", "local", "bundled", "sim+bundled"}
    assert "| market | get_ohlcv | sim | - |" in markdown


async def test_each_agent_reads_only_what_it_should(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    handle, result = await _run(ts_env, {"symbol": "GOOG", "as_of": AS_OF})

    main = await _chats(ts_env, handle)
    debate = await _chats(ts_env, _child(ts_env, handle, "debate"))
    firsts = {r.agent: r for _, r, _ in main if r.agent in ANALYST_AGENTS.values()}
    for request in firsts.values():
        assert "reports" not in request.inputs and request.inputs["symbol"] == "GOOG"
        assert request.inputs["as_of"].startswith("2012-06-01")
    # An analyst's tool loop carries only its own tool results.
    market = [r for _, r, _ in main if r.agent == ANALYST_AGENTS["market"]][-1]
    tools = {m.name for m in market.messages if m.role == "tool"}
    assert tools and tools <= {"get_ohlcv", "get_indicators"}
    bull = next(r for _, r, _ in debate if r.agent == BULL_RESEARCHER)
    assert "proposal" not in bull.inputs or bull.inputs["proposal"] is None
    assert LESSON in bull.inputs["memories"]
    assert LESSON not in (result.memories.get(MemoryRole.BEAR) or "")
    [trader] = [r for _, r, _ in main if r.agent == TRADER]
    assert trader.inputs["last_price"] == result.price.last_close
    assert trader.inputs["reports"]["market"]["analyst"] == "market"
    [pm] = [r for _, r, _ in main if r.agent == PORTFOLIO_MANAGER]
    assert {t["speaker"] for t in pm.inputs["transcript"]} == {
        "aggressive",
        "conservative",
        "neutral",
    }


async def test_a_critical_abort_skips_the_debates_the_trader_and_risk(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    handle, result = await _run(ts_env, {"symbol": BANKRUPT, "as_of": AS_OF})

    agents = _agents(await _chats(ts_env, handle))
    assert result.decision.rating in (Rating.SELL, Rating.UNDERWEIGHT)
    assert result.decision.abort_reason and "bankruptcy" in result.decision.abort_reason
    assert result.abort_reason and result.abort_reason.startswith("fundamentals")
    assert TRADER not in agents and agents[PORTFOLIO_MANAGER] == 1
    assert not result.research_transcript and result.proposal is None
    progress = await handle.query("progress", result_type=PipelineProgress)
    assert {progress.steps[s] for s in ("debate", "trader", "risk")} == {"skipped"}
    assert progress.steps["recall_memories"] == "done"
    assert progress.phase == "done"
    [pm] = [r for _, r, _ in await _chats(ts_env, handle) if r.agent == PORTFOLIO_MANAGER]
    assert ABORT_LESSON in pm.inputs["memories"]
    assert ABORT_LESSON in pm.messages[-1].content


async def test_a_stored_scan_summary_reaches_the_analysts_and_both_managers(
    ts_env: WorkflowEnvironment, workers: None, s3_settings: Settings
) -> None:
    key = ObjectRef(bucket=REPORTS_BUCKET, key=f"scan/test-{uuid.uuid4().hex[:6]}/summary.md")
    ObjectStore.from_settings(s3_settings).put_bytes(key, MACRO.encode())
    payload = {"symbol": "GOOG", "as_of": AS_OF, "macro_context_key": key.model_dump()}
    handle, result = await _run(ts_env, {**payload, "analysts": ["market", "news"]})

    main = await _chats(ts_env, handle)
    debate = await _chats(ts_env, _child(ts_env, handle, "debate"))
    readers = [r for _, r, _ in main + debate if r.agent in {*ANALYST_AGENTS.values()}]
    readers += [r for _, r, _ in main + debate if r.agent in {RESEARCH_MANAGER, PORTFOLIO_MANAGER}]
    assert {r.agent for r in readers} == {
        ANALYST_AGENTS["market"],
        ANALYST_AGENTS["news"],
        RESEARCH_MANAGER,
        PORTFOLIO_MANAGER,
    }
    assert all(r.inputs["macro_context"] == MACRO for r in readers)
    assert all(MACRO in r.messages[1].content for r in readers)
    assert result.macro_context == MACRO
    progress = await handle.query("progress", result_type=PipelineProgress)
    assert progress.steps["load_macro_context"] == "done"


async def test_the_next_run_recalls_what_reflecting_on_the_last_one_taught(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    _, first = await _run(ts_env, {"symbol": "GOOG", "as_of": AS_OF})
    reflected = await (
        await _start(ts_env, first.reflect_input(horizon_bars=5), "Reflect")
    ).result()
    learned = reflected.reflections[MemoryRole.TRADER].reflection.lesson
    assert reflected.inserted == len(first.reflect_input().decisions) >= 4
    assert reflected.learned_at > first.as_of

    # Before the horizon has passed the lesson does not exist yet; after it, it is recalled.
    _, early = await _run(ts_env, {"symbol": "GOOG", "as_of": "2012-06-05T00:00:00Z"})
    handle, later = await _run(ts_env, {"symbol": "GOOG", "as_of": "2012-06-15T00:00:00Z"})
    assert learned not in early.memories[MemoryRole.TRADER]
    assert learned in later.memories[MemoryRole.TRADER]
    [trader] = [r for _, r, _ in await _chats(ts_env, handle) if r.agent == TRADER]
    assert learned in trader.messages[-1].content


async def test_a_slim_pipeline_returns_a_line_keeps_its_decision_in_s3_and_starts_its_reflect(
    ts_env: WorkflowEnvironment, workers: None, s3_settings: Settings
) -> None:
    reflect_id = f"reflect-{uuid.uuid4()}"
    payload = {"symbol": FULL, "as_of": AS_OF, "analysts": ["market"], "slim_result": True}
    payload["reflect"] = {"workflow_id": reflect_id, "horizon_bars": 5}
    handle = await ts_env.client.start_workflow(
        "Pipeline",
        payload,
        id=f"pipeline-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=PipelineDigest,
    )

    digest: PipelineDigest = await handle.result()

    state = await handle.query("state", result_type=PipelineState)
    assert state.decision is not None and state.report is not None
    stored = ObjectStore.from_settings(s3_settings).get_bytes(digest.stored_decision)
    decision = TickerDecision.model_validate_json(stored)
    assert decision.executive_summary == state.decision.executive_summary
    assert decision.report == state.report.report
    assert digest.decision == DecisionLine.of(decision) and digest.usage == state.usage.total
    assert len(digest.model_dump_json()) < 1_500  # what a parent keeps of each of its hundred
    assert digest.reflection == reflect_id
    reflected = ts_env.client.get_workflow_handle(reflect_id, result_type=ReflectResult)
    assert (await reflected.result()).source.workflow_id == handle.id


async def test_the_debate_reruns_alone_from_a_finished_pipelines_state(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    handle, result = await _run(ts_env, {"symbol": "GOOG", "as_of": AS_OF, "debate_rounds": 2})
    state = await handle.query("state", result_type=PipelineState)

    again = await _start(ts_env, state.debate_input(), "Debate")
    rerun = await again.result()
    risk = await _start(ts_env, state.risk_input(), "Risk")
    await risk.result()

    assert rerun.transcript == result.research_transcript
    assert rerun.research_plan == result.research_plan
    assert _agents(await _chats(ts_env, again))[BULL_RESEARCHER] == 2
    assert _agents(await _chats(ts_env, risk)) == {
        DEBATER_AGENTS[s]: 1 for s in (Speaker.AGGRESSIVE, Speaker.CONSERVATIVE, Speaker.NEUTRAL)
    }


@pytest.mark.parametrize(
    ("flow", "payload", "field"),
    [
        ("Pipeline", {"symbol": "NOPE", "as_of": AS_OF}, "symbol"),
        ("Pipeline", {"as_of": AS_OF}, "symbol"),
        ("Pipeline", {"symbol": "GOOG", "as_of": "2012-06-01T00:00:00"}, "as_of"),
        ("Pipeline", {"symbol": "GOOG", "as_of": "1990-01-01T00:00:00Z"}, "as_of"),
        ("Pipeline", {"symbol": "GOOG", "debate_rounds": 0}, "debate_rounds"),
        ("Pipeline", {"symbol": "GOOG", "risk_rounds": 6}, "risk_rounds"),
        ("Pipeline", {"symbol": "GOOG", "analysts": ["astrology"]}, "analysts.0"),
        ("Pipeline", {"symbol": "GOOG", "analysts": []}, "analysts"),
        ("Pipeline", {"symbol": "GOOG", "llm": {"provider": "skynet"}}, "llm.provider"),
        (
            "Pipeline",
            {
                "symbol": "GOOG",
                "as_of": AS_OF,
                "macro_context_key": {"bucket": "reports", "key": "no/such.md"},
            },
            "macro_context_key",
        ),
        (
            "Pipeline",
            {
                "symbol": "GOOG",
                "macro_context": "x",
                "macro_context_key": {"bucket": "b", "key": "k"},
            },
            "(input)",
        ),
        ("Debate", {"symbol": "GOOG", "as_of": AS_OF}, "reports"),
        ("Risk", {"symbol": "GOOG", "as_of": AS_OF, "reports": {}}, "proposal"),
    ],
)
async def test_bad_input_fails_the_run_naming_the_field(
    ts_env: WorkflowEnvironment, workers: None, flow: str, payload: object, field: str
) -> None:
    handle = await _start(ts_env, payload, flow)
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()

    cause = caught.value.cause
    while cause is not None and not isinstance(cause, ApplicationError):
        cause = cause.cause
    assert isinstance(cause, ApplicationError)
    assert cause.non_retryable
    assert f"`{field}`" in cause.message


# --- extending: a fifth analyst from one spec --------------------------------------------------


def _volume_evidence(found: Payloads) -> list[Evidence]:
    """The last week's volume against the month's: heavy buying or selling, or nothing."""
    ohlcv = found.get("get_ohlcv")
    rows = ohlcv.get("rows", []) if isinstance(ohlcv, dict) else []
    if len(rows) < 25:
        return []
    volumes, closes = [row[5] for row in rows], [row[4] for row in rows]
    ratio = statistics.fmean(volumes[-5:]) / statistics.fmean(volumes[-25:-5])
    move = closes[-1] / closes[-6] - 1
    return [
        Evidence(
            (1.0 if move > 0 else -1.0) if ratio > 1.2 else 0.0,
            1.0,
            f"last week's volume is {ratio:.2f}x the month before, price {move:+.1%}",
        )
    ]


VOLUME_FLOW = analyst_spec(
    "volume_flow",
    title="the volume-flow analyst",
    focus="Read who is pushing the price: volume surges against the price move.",
    tools=("get_ohlcv",),
    heading="Volume-flow analyst report",
    desk=Desk(_volume_evidence),
)


@pytest.fixture
def fifth_analyst() -> Iterator[None]:
    register_agent(VOLUME_FLOW)
    try:
        yield
    finally:
        unregister_agent(VOLUME_FLOW.name)


async def test_an_analyst_registered_from_one_spec_runs_through_the_whole_pipeline(
    ts_env: WorkflowEnvironment, workers: None, fifth_analyst: None
) -> None:
    handle, result = await _run(ts_env, {"symbol": FULL, "as_of": AS_OF})

    kind = AnalystKind("volume_flow")
    report = result.reports.get(kind)
    assert result.analysts[-1] == kind and len(result.reports.by_kind()) == 5
    assert report is not None and "volume" in report.key_points[0].point
    debate = await _chats(ts_env, _child(ts_env, handle, "debate"))
    bull = next(r for _, r, _ in debate if r.agent == BULL_RESEARCHER)
    prompt = "\n".join(m.content for m in bull.messages)
    assert f"### Volume-flow analyst report\n{render_report(report)}" in prompt
    assert bull.inputs["reports"]["volume_flow"]["analyst"] == "volume_flow"
    with urllib.request.urlopen(result.report.url, timeout=10) as response:
        markdown = response.read().decode()
    assert "## Volume-flow analyst report" in markdown and report.key_points[0].point in markdown
    assert "volume_flow_analyst" in _agents(await _chats(ts_env, handle))
