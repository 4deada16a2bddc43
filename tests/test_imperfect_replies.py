"""Imperfect replies degrade a run, never kill it: Pipeline and Scan through the OpenAI wire.

Everything is real except the vendor: the time-skipping Temporal server, the chat
activity on ``llm-openai`` through the OpenAI SDK, the research, tool and scan
activities, and S3. The vendor is ``RoutedFake``, which answers each agent from
its own script (agents run at once), so a test makes one agent misbehave while the
others answer well, and then reads what every later agent was sent.

- A field code can derive (the sentiment band) is derived: a band that disagrees with
  its score costs nothing, not even a repair.
- A step the graph can do without (an analyst, a scanner) whose reply stays invalid
  after the two repair turns is recorded as missing, with its raw reply's key, and the
  run goes on; every later prompt and the stored report name it.
- A step nothing can replace (the trader) parks like a refused key: the run waits with
  the schema, the problems, the raw reply's key and the fix, and ``resume`` retries it.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

import activities.tools as tool_activities
from activities.llm import LlmActivities
from activities.research import ResearchActivities
from activities.scan import SCAN_ACTIVITIES
from activities.tools import TOOL_ACTIVITIES
from shared.agents.pipeline.prompts import ANALYST_BRIEFS, DEBATER_BRIEFS, MANAGER_BRIEFS
from shared.agents.pipeline.roles import (
    ANALYST_AGENTS,
    DEBATER_AGENTS,
    NEWS_ANALYST,
    PORTFOLIO_MANAGER,
    RESEARCH_MANAGER,
    SOCIAL_ANALYST,
    TRADER,
    ManagerKind,
)
from shared.agents.pipeline.schemas import AnalystKind, SentimentBand, Speaker
from shared.agents.scan.prompts import SCANNER_BRIEFS
from shared.agents.scan.roles import (
    GEOPOLITICAL_SCANNER,
    INDUSTRY_DEEP_DIVE,
    MACRO_SYNTHESIS,
    SCANNER_AGENTS,
)
from shared.config import Settings, load_settings
from shared.data.contracts import DataKind
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.llm.providers import QUEUE_ANTHROPIC, QUEUE_COMPATIBLE, QUEUE_OPENAI
from shared.memory import MemoryStore
from shared.queues import TOOLS_QUEUE
from shared.storage.objects import ObjectRef, ObjectStore
from shared.tools.registry import ToolServices
from tests.fakes.agent_routed import user_text
from tests.fakes.llm_server import RecordedRequest, Scripted
from tests.fakes.routed import RoutedFake
from tests.servers import running_workers
from workers.main import WorkerPlan
from workflows.debates import DebateWorkflow, RiskWorkflow
from workflows.pipeline import PipelineWorkflow
from workflows.pipeline_contracts import PipelineProgress, PipelineResult
from workflows.scan import ScanProgress, ScanResult, ScanWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-imperfect-replies"
KEY = "sk-test-imperfect-replies"
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
SIM = SimVendor()
ROUTER = DataRouter({"sim": SIM}, {kind: ("sim",) for kind in DataKind})
"""The sim market alone: every agent answers from the script, and the workflows' own reads
(the analysis time, the sector moves, the screens, the universe) come from it."""
EQUITIES = [listing for listing in SIM.universe(AS_OF) if listing.asset_type == "equity"]
SYMBOL = EQUITIES[0].symbol
PROSE = Scripted(text="Honestly, I think the outlook is mixed; no JSON from me today.")

# Who an agent is on the wire: the title its system prompt opens with (the prompt tables).
ROLES: dict[str, str] = {
    **{ANALYST_AGENTS[kind]: brief.title for kind, brief in ANALYST_BRIEFS.items()},
    **{DEBATER_AGENTS[speaker]: brief.title for speaker, brief in DEBATER_BRIEFS.items()},
    **{kind.value: brief.title for kind, brief in MANAGER_BRIEFS.items()},
    TRADER: "the trader",
    **{SCANNER_AGENTS[kind]: brief.title for kind, brief in SCANNER_BRIEFS.items()},
    INDUSTRY_DEEP_DIVE: "the industry deep-dive analyst",
    MACRO_SYNTHESIS: "the chief macro strategist",
}
LATER_AGENTS = [*(DEBATER_AGENTS[s] for s in Speaker), RESEARCH_MANAGER, TRADER, PORTFOLIO_MANAGER]
"""Everyone after the analysts: each reads the reports."""


def told(request: RecordedRequest) -> str:
    """What an agent was told: its user turns (strings on the OpenAI wire, text blocks on
    Anthropic's)."""
    return user_text(request.body)


def _json(value: dict[str, Any]) -> Scripted:
    return Scripted(text=json.dumps(value))


def _analyst(kind: AnalystKind, **extra: Any) -> dict[str, Any]:
    return {
        "analyst": kind.value,
        "stance": "bullish",
        "confidence": 0.6,
        "key_points": [{"point": f"{kind.value}: revenue up 12% in 2012 Q1", "leans": "bullish"}],
        "report_markdown": f"# {kind.value}\n\nRevenue grew 12% year on year.",
        **extra,
    }


def _turn(speaker: Speaker) -> dict[str, Any]:
    return {
        "speaker": speaker.value,
        "round": 1,
        "argument": f"The {speaker.value} case rests on the 12% revenue growth.",
        "key_points": ["revenue +12%"],
        "position_sizing": 0.05,
    }


TRADE = {
    "action": "Buy",
    "reasoning": "The plan says buy; levels from the ATR.",
    "entry_price": 100.0,
    "stop_loss": 95.0,
    "take_profit": 110.0,
    "position_sizing": 0.05,
}


def script_pipeline(fake: RoutedFake) -> None:
    """A well-behaved answer for every Pipeline agent (a test then spoils one)."""
    for kind, agent in ANALYST_AGENTS.items():
        extra = {"score": 6.5, "narrative": "upbeat posts"} if kind is AnalystKind.SOCIAL else {}
        fake.always(agent, _json(_analyst(kind, **extra)))
    for speaker, agent in DEBATER_AGENTS.items():
        fake.always(agent, _json(_turn(speaker)))
    plan = {"recommendation": "Buy", "rationale": "growth wins", "strategic_actions": ["buy"]}
    fake.always(ManagerKind.RESEARCH_MANAGER.value, _json(plan))
    fake.always(TRADER, _json(TRADE))
    decision = {
        "rating": "Overweight",
        "executive_summary": "Add on growth.",
        "investment_thesis": "Revenue +12%.",
        "time_horizon": "3-6 months",
    }
    fake.always(ManagerKind.PORTFOLIO_MANAGER.value, _json(decision))


@pytest.fixture(scope="module")
def vendor() -> Iterator[RoutedFake]:
    with RoutedFake(ROLES) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    ts_env: WorkflowEnvironment,
    s3_settings: Settings,
    vendor: RoutedFake,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[ObjectStore]:
    store = ObjectStore.from_settings(s3_settings)
    memory = MemoryStore(f"sqlite:///{tmp_path_factory.mktemp('imperfect') / 'memory.db'}")
    research = ResearchActivities(s3_settings, router=ROUTER, memory=memory, store=store)
    vendors = load_settings(
        openai={"api_key": KEY, "base_url": vendor.base_url_openai},
        anthropic={"api_key": KEY, "base_url": vendor.base_url_anthropic},
        ollama={"base_url": vendor.base_url_openai},
        data_dir=s3_settings.data_dir,
        s3=s3_settings.s3.model_dump(),
    )
    plans = [
        WorkerPlan(
            queue=QUEUE, workflows=[PipelineWorkflow, DebateWorkflow, RiskWorkflow, ScanWorkflow]
        ),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[*TOOL_ACTIVITIES, *research.activities(), *SCAN_ACTIVITIES],
            threads=True,
        ),
        *(
            WorkerPlan(queue=queue, activities=[LlmActivities(vendors, queue).chat])
            for queue in (QUEUE_OPENAI, QUEUE_ANTHROPIC, QUEUE_COMPATIBLE)
        ),
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            tool_activities, "tool_services", lambda: ToolServices(router=ROUTER, store=store)
        )
        async with running_workers(ts_env.client, plans):
            yield store


@pytest.fixture
def fake(vendor: RoutedFake, workers: ObjectStore) -> RoutedFake:
    vendor.reset()
    return vendor


async def _start(
    env: WorkflowEnvironment, flow: str, payload: dict[str, Any], provider: str = "openai"
) -> Any:
    result = {"Pipeline": PipelineResult, "Scan": ScanResult}[flow]
    return await env.client.start_workflow(
        flow,
        {**payload, "llm": {"provider": provider}},
        id=f"{flow.lower()}-imperfect-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=result,
    )


def _pipeline(env: WorkflowEnvironment, provider: str = "openai") -> Any:
    return _start(env, "Pipeline", {"symbol": SYMBOL, "as_of": AS_OF.isoformat()}, provider)


def _raw_key(handle: WorkflowHandle[Any, Any], flow: str, agent: str, run_id: str) -> ObjectRef:
    return ObjectRef(bucket="payloads", key=f"{flow}/{handle.id}/{run_id}/{agent}.raw.txt")


# --- Pipeline --------------------------------------------------------------------------------


# Each wire format: OpenAI's json_schema, Anthropic's forced answer tool, and a compatible
# server's (ollama's) json_schema over the chat-completions wire.
WIRES = ("openai", "anthropic", "ollama")


@pytest.mark.parametrize("provider", WIRES)
async def test_a_band_that_disagrees_with_its_score_is_derived_and_costs_no_repair(
    ts_env: WorkflowEnvironment, fake: RoutedFake, provider: str
) -> None:
    script_pipeline(fake)
    inconsistent = _analyst(
        AnalystKind.SOCIAL, band="very_negative", score=5, narrative="calm chatter"
    )
    fake.always(SOCIAL_ANALYST, _json(inconsistent))

    result = await (await _pipeline(ts_env, provider)).result()

    social = result.reports.get(AnalystKind.SOCIAL)
    assert social is not None and social.score == 5
    assert social.band is SentimentBand.NEUTRAL
    assert len(fake.routed[SOCIAL_ANALYST]) == 1
    assert not result.missing
    # What the debaters read is the derived band.
    assert "Sentiment: neutral, score 5.0/10" in told(fake.routed[DEBATER_AGENTS[Speaker.BULL]][0])


# Prose needs a wire that lets a model answer in prose: Anthropic's forced tool does not.
@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_an_analyst_answering_prose_three_times_is_missing_and_every_later_prompt_says_so(
    ts_env: WorkflowEnvironment, fake: RoutedFake, workers: ObjectStore, provider: str
) -> None:
    script_pipeline(fake)
    fake.always(NEWS_ANALYST, PROSE)

    handle = await _pipeline(ts_env, provider)
    result = await handle.result()

    assert len(fake.routed[NEWS_ANALYST]) == 3  # the reply and two repair turns
    raw = _raw_key(handle, "pipeline", NEWS_ANALYST, result.run_id)
    [missing] = result.missing
    assert missing.step == NEWS_ANALYST
    assert missing.raw_reply_key == f"s3://{raw.bucket}/{raw.key}"
    assert "AnalystReport" in missing.reason and "no JSON object" in missing.reason
    assert result.reports.get(AnalystKind.NEWS) is None
    assert set(result.reports.missing) == {AnalystKind.NEWS}
    assert workers.get_bytes(raw).decode() == PROSE.text
    assert result.decision.rating.value == "Overweight"
    progress = await handle.query("progress", result_type=PipelineProgress)
    assert progress.steps[NEWS_ANALYST] == "missing" and progress.phase == "done"
    for agent in LATER_AGENTS:
        assert fake.routed[agent], agent
        for request in fake.routed[agent]:
            text = told(request)
            assert f"MISSING: {NEWS_ANALYST} gave no usable output" in text, agent
            assert missing.raw_reply_key in text, agent
            assert "Market analyst report" in text and "revenue up 12%" in text
    markdown = workers.get_bytes(result.report.report).decode()
    assert f"Decided without the report of: {NEWS_ANALYST}" in markdown
    assert f"## News analyst report\nMISSING: {NEWS_ANALYST}" in markdown


async def test_a_trader_answering_prose_parks_the_run_until_resumed_with_a_usable_reply(
    ts_env: WorkflowEnvironment, fake: RoutedFake
) -> None:
    script_pipeline(fake)
    del fake.standing[TRADER]
    fake.on(TRADER, PROSE, PROSE, PROSE)

    handle = await _pipeline(ts_env)
    progress = await _until_waiting(handle)

    reason = progress.waiting[TRADER]
    assert "TraderProposal" in reason and "no JSON object" in reason
    assert f"s3://payloads/pipeline/{handle.id}/" in reason and "trader.raw.txt" in reason
    assert "QUANTDESK_OPENAI__QUICK_MODEL" in reason and "llm-openai" in reason
    assert progress.steps[TRADER] == "running"

    fake.always(TRADER, _json(TRADE))
    await handle.signal("resume")
    result = await handle.result()

    assert result.proposal is not None and result.proposal.stop_loss == 95.0
    assert len(fake.routed[TRADER]) == 4
    assert not result.missing


async def _until_waiting(handle: WorkflowHandle[Any, Any]) -> PipelineProgress:
    """The run's progress once a call waits for ``resume``."""
    for _ in range(400):
        progress = await handle.query("progress", result_type=PipelineProgress)
        if progress.waiting:
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError("the run never waited")


# --- Scan ------------------------------------------------------------------------------------


def _scanner_report(name: str) -> dict[str, Any]:
    return {
        "headline": f"{name}: the tape is quiet",
        "findings": ["nothing moved more than 1%"],
        "report_markdown": f"# {name}\n\nNothing moved more than 1%.",
    }


def _summary() -> dict[str, Any]:
    stocks = [
        {
            "ticker": listing.symbol,
            "name": listing.name,
            "sector": listing.sector.value if listing.sector else "",
            "rationale": "led its sector over 21 sessions",
            "thesis_angle": "momentum",
            "conviction": "medium",
        }
        for listing in (EQUITIES[0], EQUITIES[-1])
    ]
    return {
        "timeframe": "1-3 months",
        "executive_summary": "A quiet market with a few leaders.",
        "macro_context": {"economic_cycle": "mid-cycle", "central_bank_stance": "on hold"},
        "key_themes": [
            {
                "theme": "leadership",
                "description": "few lead",
                "conviction": "low",
                "timeframe": "1m",
            }
        ],
        "stocks_to_investigate": stocks,
    }


async def test_a_scanner_answering_garbage_is_missing_and_the_synthesis_goes_on(
    ts_env: WorkflowEnvironment, fake: RoutedFake, workers: ObjectStore
) -> None:
    for agent in [*SCANNER_AGENTS.values(), INDUSTRY_DEEP_DIVE]:
        fake.always(agent, _json(_scanner_report(agent)))
    fake.always(GEOPOLITICAL_SCANNER, Scripted(text='{"headline": "war", "findings": '))
    fake.always(MACRO_SYNTHESIS, _json(_summary()))

    handle = await _start(ts_env, "Scan", {"as_of": AS_OF.isoformat()})
    result = await handle.result()

    assert len(fake.routed[GEOPOLITICAL_SCANNER]) == 3
    run_id = (await handle.describe()).run_id
    raw = _raw_key(handle, "scan", GEOPOLITICAL_SCANNER, run_id)
    [missing] = result.missing
    assert (missing.step, missing.raw_reply_key) == (
        GEOPOLITICAL_SCANNER,
        f"s3://{raw.bucket}/{raw.key}",
    )
    assert "ScannerReport" in missing.reason
    assert GEOPOLITICAL_SCANNER not in result.reports
    assert set(result.reports) == {*SCANNER_AGENTS.values(), INDUSTRY_DEEP_DIVE} - {
        GEOPOLITICAL_SCANNER
    }
    assert result.summary.tickers() == [EQUITIES[0].symbol, EQUITIES[-1].symbol]
    progress = await handle.query("progress", result_type=ScanProgress)
    assert progress.steps[GEOPOLITICAL_SCANNER] == "missing" and progress.phase == "done"
    [synthesis] = fake.routed[MACRO_SYNTHESIS]
    text = told(synthesis)
    assert f"MISSING: {GEOPOLITICAL_SCANNER} gave no usable output" in text
    assert missing.raw_reply_key in text
    markdown = workers.get_bytes(result.summary_markdown.report).decode()
    assert "## Missing reports" in markdown and missing.raw_reply_key in markdown
