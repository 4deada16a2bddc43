"""The Scan's agents without Temporal: schemas, facts, prompts, the shortlist check, and the
offline analysts reading real tool answers from the sim market.

``_scan`` walks the graph the way the workflow does (prefetched calls, then the
offline engine's own tool calls through the real tool registry), so the
offline analysts are tested on exactly the answers they get in a run.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache

import pytest
from pydantic import BaseModel, ValidationError

from shared.agents.prompt_text import render_prompt
from shared.agents.scan import facts, industry_deep_dive, macro_synthesis, prompts, roles
from shared.agents.scan.facts import Candidate, Signal, answers_of_results, candidates
from shared.agents.scan.inputs import (
    DeepDiveInputs,
    ScannerInputs,
    ScanReports,
    SynthesisInputs,
    scanner_prefetch,
)
from shared.agents.scan.macro_synthesis import Scored, Weighted, fits_thesis
from shared.agents.scan.roles import MACRO_SYNTHESIS, SECTOR_SCANNER, ScannerKind
from shared.agents.scan.schemas import ScannerReport, ScanSummary
from shared.agents.scan.shortlist import shortlist_problems
from shared.agents.schemas import RESPONSE_SCHEMAS
from shared.data.contracts import Listing, Sector, SectorPerformance
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage, ChatRequest, ToolCall, ToolRequest, ToolResult
from shared.llm.offline import answer_offline
from shared.llm.providers import OFFLINE_MODEL
from shared.tools.registry import TOOLS, ToolServices, run_tool, tool_specs
from tests.golden_prompts import golden_diff

SIM = SimVendor()
ROUTER = DataRouter({"sim": SIM}, {kind: ("sim",) for kind in SIM.kinds})
SLUMP = datetime(2012, 6, 1, tzinfo=UTC)
"""A month in which every sector but health care fell (the S&P 500 lost about 9%)."""
RALLY = datetime(2017, 1, 3, tzinfo=UTC)


def _tool(call: ToolCall, as_of: datetime) -> ToolResult:
    request = ToolRequest(call=call, context={"as_of": as_of.isoformat()})
    return run_tool(request, lambda: ToolServices(router=ROUTER))


def _agent(
    agent: str, messages: list[ChatMessage], inputs: object, prefetch: list[ToolCall]
) -> tuple[str, list[ToolResult]]:
    """One agent's conversation as the workflow runs it; its reply text and tool results."""
    as_of = inputs.as_of  # type: ignore[attr-defined]
    results = [_tool(call, as_of) for call in prefetch]
    if prefetch:
        messages = [*messages, *prompts.prefetched_turns(prefetch, results)]
    row = roles.AGENTS[agent]
    request = ChatRequest(
        agent=agent,
        messages=messages,
        tools=tool_specs(row.tools),
        response_schema=row.schema_name,
        context=inputs.model_dump(mode="json"),  # type: ignore[attr-defined]
    )
    while True:
        response = answer_offline(request, OFFLINE_MODEL)
        if not response.tool_calls:
            return response.text, results
        answered = [_tool(call, as_of) for call in response.tool_calls]
        results += answered
        turns = prompts.prefetched_turns(response.tool_calls, answered)
        request = request.model_copy(update={"messages": [*request.messages, *turns]})


def _scanner(kind: ScannerKind, inputs: ScannerInputs) -> tuple[ScannerReport, list]:
    text, results = _agent(
        roles.SCANNER_AGENTS[kind],
        prompts.scanner_messages(kind, inputs),
        inputs,
        scanner_prefetch(kind),
    )
    return ScannerReport.model_validate_json(text), answers_of_results(results)


def _scan(as_of: datetime, max_tickers: int = 10) -> tuple[SynthesisInputs, ScanSummary]:
    given, summary = _chain(as_of, max_tickers)
    inputs = given[MACRO_SYNTHESIS]
    assert isinstance(inputs, SynthesisInputs)
    return inputs, summary


@cache
def _chain(as_of: datetime, max_tickers: int = 10) -> tuple[dict[str, BaseModel], ScanSummary]:
    """The whole Scan offline: every agent's inputs, by name, and the summary."""
    opening = ScannerInputs(as_of=as_of)
    geo, _ = _scanner(ScannerKind.GEOPOLITICAL, opening)
    movers, movers_answers = _scanner(ScannerKind.MARKET_MOVERS, opening)
    sector, sector_answers = _scanner(ScannerKind.SECTOR, opening)
    moves = facts.sector_moves(sector_answers)
    smart_inputs = opening.model_copy(update={"sector_report": sector, "sectors": moves})
    smart, smart_answers = _scanner(ScannerKind.SMART_MONEY, smart_inputs)
    dive = DeepDiveInputs(
        as_of=as_of,
        sectors=facts.top_sectors(moves),
        smart_money_report=smart,
        smart_money=[c for c in candidates(smart_answers) if c.smart_money],
    )
    text, dive_results = _agent(
        roles.INDUSTRY_DEEP_DIVE, industry_deep_dive.SPEC.messages(dive), dive, dive.prefetch()
    )
    inputs = SynthesisInputs(
        as_of=as_of,
        max_tickers=max_tickers,
        reports=ScanReports(
            geopolitical=geo,
            market_movers=movers,
            sector=sector,
            smart_money=smart,
            industry_deep_dive=ScannerReport.model_validate_json(text),
        ),
        sectors=moves,
        deep_dive_sectors=dive.sector_names,
        indices=facts.index_levels(movers_answers),
        candidates=candidates([*movers_answers, *smart_answers, *answers_of_results(dive_results)]),
    )
    summary, _ = _agent(
        MACRO_SYNTHESIS, macro_synthesis.SPEC.messages(inputs), inputs, inputs.prefetch()
    )
    given: dict[str, BaseModel] = {
        **{roles.SCANNER_AGENTS[kind]: opening for kind in roles.PHASE_ONE},
        roles.SCANNER_AGENTS[ScannerKind.SMART_MONEY]: smart_inputs,
        roles.INDUSTRY_DEEP_DIVE: dive,
        MACRO_SYNTHESIS: inputs,
    }
    return given, ScanSummary.model_validate_json(summary)


def _stock(ticker: str = "QBTX", sector: str = "Information Technology", **extra: object) -> dict:
    return {
        "ticker": ticker,
        "name": "Qubitrix",
        "sector": sector,
        "rationale": "up 12% in a month",
        "thesis_angle": "momentum",
        "conviction": "high",
        **extra,
    }


def _summary(*stocks: dict) -> ScanSummary:
    return ScanSummary.model_validate(
        {
            "timeframe": "1-3 months",
            "executive_summary": "Tech leads.",
            "macro_context": {"economic_cycle": "expansion", "central_bank_stance": "on hold"},
            "key_themes": [
                {"theme": "tech", "description": "XLK +5%", "conviction": "high", "timeframe": "1m"}
            ],
            "stocks_to_investigate": list(stocks or [_stock()]),
        }
    )


# --- schemas, facts, prompts -----------------------------------------------------------------


def test_a_summary_normalises_tickers_and_keeps_the_first_of_a_repeated_one() -> None:
    assert _summary(_stock(" qbtx ")).tickers() == ["QBTX"]
    repeated = _summary(_stock(), _stock("LMNW"), _stock("qbtx", rationale="said twice"))

    assert repeated.tickers() == ["QBTX", "LMNW"]
    assert repeated.stocks_to_investigate[0].rationale != "said twice"


@pytest.mark.parametrize(
    ("field", "value"),
    [("thesis_angle", "speculative"), ("conviction", "certain"), ("sector", "Tech")],
)
def test_a_summary_refuses_values_outside_its_enums(field: str, value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _summary(_stock(**{field: value}))

    assert caught.value.errors()[0]["loc"] == ("stocks_to_investigate", 0, field)


def _move(sector: Sector, month: float | None) -> SectorPerformance:
    return SectorPerformance(
        sector=sector, etf="X", return_1d=0, return_5d=0, return_21d=month, return_ytd=0
    )


def test_the_deep_dive_sectors_are_the_largest_absolute_monthly_moves() -> None:
    moves = [
        _move(Sector.ENERGY, -0.12),
        _move(Sector.UTILITIES, 0.02),
        _move(Sector.FINANCIALS, 0.08),
        _move(Sector.MATERIALS, None),
        _move(Sector.INDUSTRIALS, -0.08),
    ]

    chosen = [m.sector for m in facts.top_sectors(moves)]

    assert chosen == [Sector.ENERGY, Sector.FINANCIALS, Sector.INDUSTRIALS]
    assert [
        c.arguments["sector"]
        for c in DeepDiveInputs(
            as_of=SLUMP,
            sectors=facts.top_sectors(moves),
            smart_money_report=ScannerReport(headline="h", findings=["f"], report_markdown="m"),
        ).prefetch()
    ] == ["Energy", "Financials", "Industrials"]


def test_candidates_merge_every_sighting_of_a_ticker() -> None:
    answers = [
        (
            "get_market_movers",
            {
                "as_of": "x",
                "data": {
                    "gainers": [
                        {"symbol": "QBTX", "name": "Q", "last": 10, "change_pct": 4.0, "volume": 9}
                    ],
                    "losers": [],
                    "most_active": ["... 3 of 4 items left out ..."],
                },
            },
        ),
        (
            "screen_insider_buying",
            {
                "as_of": "x",
                "data": {
                    "screened": 3,
                    "without_data": 0,
                    "passed": 1,
                    "rows": [
                        {
                            "symbol": "QBTX",
                            "name": "Q",
                            "sector": "Information Technology",
                            "buy_value": 5e5,
                            "buys": 2,
                            "sell_value": 0,
                            "insiders": ["A. Lee"],
                            "last_filed_at": "2012-05-30T00:00:00Z",
                        }
                    ],
                },
            },
        ),
    ]

    [merged] = candidates(answers)

    assert merged.signals == [Signal.GAINER, Signal.INSIDER_BUYING]
    assert merged.sector is Sector.INFORMATION_TECHNOLOGY and merged.change_pct == 4.0
    assert merged.insider_buy_value == 5e5 and merged.smart_money
    assert facts.screen_tally(answers, "screen_insider_buying").passed == 1  # type: ignore[union-attr]


def test_only_the_sector_and_smart_money_scanners_get_prefetched_calls() -> None:
    assert [c.name for c in scanner_prefetch(ScannerKind.SECTOR)] == ["get_sector_performance"]
    assert len(scanner_prefetch(ScannerKind.SMART_MONEY)) == 3
    assert scanner_prefetch(ScannerKind.GEOPOLITICAL) == []


def test_each_prompt_carries_the_data_its_agent_decides_from() -> None:
    inputs, _ = _scan(SLUMP)
    smart = roles.SCANNER_AGENTS[ScannerKind.SMART_MONEY]

    opening = prompts.scanner_messages(ScannerKind.GEOPOLITICAL, ScannerInputs(as_of=SLUMP))
    smart_money = prompts.scanner_messages(
        ScannerKind.SMART_MONEY,
        ScannerInputs(as_of=SLUMP, sector_report=inputs.reports.sector, sectors=inputs.sectors),
    )
    synthesis = macro_synthesis.SPEC.messages(inputs)[-1].content

    assert "Sector scanner report" not in opening[-1].content
    assert inputs.reports.sector.headline in smart_money[-1].content  # type: ignore[union-attr]
    assert all(tool in smart_money[-1].content for tool in roles.AGENTS[smart].tools)
    assert f"at most {inputs.max_tickers} stocks" in synthesis
    assert all(f"- {c.ticker} " in synthesis for c in inputs.candidates)
    assert all(s.value in synthesis for s in inputs.deep_dive_sectors)


# --- the shortlist check ----------------------------------------------------------------------

UNIVERSE = [
    Listing(symbol="QBTX", name="Qubitrix", sector=Sector.INFORMATION_TECHNOLOGY),
    Listing(symbol="FRTB", name="Fortbridge", sector=Sector.FINANCIALS),
    Listing(symbol="XLK", name="Tech ETF", asset_type="etf"),
]


def test_a_sound_shortlist_has_no_problems() -> None:
    summary = _summary(_stock(smart_money=True), _stock("FRTB", "Financials"))

    assert shortlist_problems(summary, UNIVERSE, SLUMP, max_tickers=2, flagged={"QBTX"}) == []


def test_the_shortlist_check_names_every_problem_and_its_field() -> None:
    summary = _summary(
        _stock("NOPE"),
        _stock("FRTB"),
        _stock("XLK"),
        _stock(smart_money=True),
    )

    problems = shortlist_problems(summary, UNIVERSE, SLUMP, max_tickers=3, flagged={"FRTB"})

    assert problems == [
        "stocks_to_investigate lists 4 stocks but at most 3 are allowed: keep the 3 strongest",
        "stocks_to_investigate[0].ticker: NOPE is not in the data universe as of 2012-06-01: "
        "choose among the candidates the scanners reported",
        "stocks_to_investigate[1].sector: FRTB is in Financials, not Information Technology",
        "stocks_to_investigate[2].ticker: XLK is an etf, not a stock: shortlist stocks only",
        "stocks_to_investigate[3].smart_money: no smart-money screen flagged QBTX (flagged: "
        "FRTB): set it to false",
    ]


# --- the offline analysts ---------------------------------------------------------------------


def test_the_offline_sector_scanner_reports_the_real_leader_and_laggard() -> None:
    inputs, _ = _scan(SLUMP)
    moves = sorted(SIM.sectors(SLUMP), key=lambda m: m.return_21d or 0.0)

    headline = inputs.reports.sector.headline  # type: ignore[union-attr]

    assert headline.startswith(f"{moves[-1].sector.value} leads over 21 sessions")
    assert f"{moves[0].sector.value} lags ({moves[0].return_21d:+.1%})" in headline
    assert "risk-off" in headline


@pytest.mark.parametrize("as_of", [SLUMP, RALLY])
def test_the_offline_shortlist_passes_the_check_and_marks_only_screened_names(
    as_of: datetime,
) -> None:
    inputs, summary = _scan(as_of)
    smart = set(facts.flagged(inputs.candidates))

    problems = shortlist_problems(
        summary, SIM.universe(as_of), as_of, max_tickers=inputs.max_tickers, flagged=smart
    )

    assert problems == []
    assert 1 <= len(summary.stocks_to_investigate) <= inputs.max_tickers
    assert set(summary.tickers()) <= {c.ticker for c in inputs.candidates}


def test_the_offline_synthesis_reasons_from_the_data_not_a_template() -> None:
    slump_inputs, slump = _scan(SLUMP)
    _, rally = _scan(RALLY)
    funds = json.loads(
        _tool(
            ToolCall(id="f", name="get_macro_series", arguments={"series": "FEDFUNDS"}), SLUMP
        ).content
    )["data"]["points"][-1]["value"]

    assert slump.tickers() != rally.tickers()
    assert f"fed funds {funds:.2f}%" in slump.macro_context.central_bank_stance
    assert any(t.theme == "Market correction" for t in slump.key_themes)
    assert slump.macro_context.geopolitical_risks == slump_inputs.reports.geopolitical.risks  # type: ignore[union-attr]
    assert all(stock.rationale.startswith(stock.name) for stock in slump.stocks_to_investigate)


def test_the_offline_synthesis_keeps_max_tickers() -> None:
    _, summary = _scan(RALLY, max_tickers=2)

    assert len(summary.stocks_to_investigate) == 2


def test_heavy_volume_on_a_falling_day_is_not_a_smart_money_confirmation() -> None:
    selling = Candidate(
        ticker="TWRQ",
        name="T",
        signals=[Signal.UNUSUAL_VOLUME],
        change_pct=-2.9,
        relative_volume=4.5,
    )
    buying = selling.model_copy(update={"change_pct": 2.9})

    support = [Weighted(1.5, "heavy volume")]

    assert selling.smart_money and buying.smart_money
    assert not fits_thesis(Scored(selling, support))
    assert fits_thesis(Scored(buying, support))
    assert not fits_thesis(Scored(buying, [Weighted(-0.5, "sector slump"), *support[:0]]))


def test_the_offline_synthesis_refuses_to_shortlist_from_nothing() -> None:
    inputs, _ = _scan(SLUMP)
    empty = inputs.model_copy(update={"candidates": []})
    request = ChatRequest(
        agent=MACRO_SYNTHESIS,
        messages=macro_synthesis.SPEC.messages(empty),
        response_schema="ScanSummary",
        context=empty.model_dump(mode="json"),
    )

    with pytest.raises(InvalidInput, match="nothing to shortlist"):
        answer_offline(request, OFFLINE_MODEL)


def test_an_offline_scanner_writes_only_its_own_schema() -> None:
    request = ChatRequest(
        agent=SECTOR_SCANNER,
        messages=[ChatMessage(role="user", content="scan")],
        response_schema="ScanSummary",
        context=ScannerInputs(as_of=SLUMP).model_dump(mode="json"),
    )

    with pytest.raises(InvalidInput, match="writes ScannerReport"):
        answer_offline(request, OFFLINE_MODEL)


def test_every_scan_spec_is_complete_and_answers_offline_in_its_schema() -> None:
    inputs, summary = _scan(SLUMP)  # every agent of the Scan, each from its spec, offline

    specs = list(roles.AGENTS.values())
    assert len(specs) == 6 and set(roles.SCANNER_AGENTS.values()) < set(roles.AGENTS)
    assert all(RESPONSE_SCHEMAS[spec.schema_name] is spec.output for spec in specs)
    assert all(spec.tools and set(spec.tools) <= set(TOOLS) for spec in specs)
    assert inputs.reports.given() and summary.stocks_to_investigate


@pytest.mark.parametrize("agent", list(roles.AGENTS))
def test_the_prompt_matches_its_golden_copy(agent: str) -> None:
    given, _ = _chain(SLUMP)
    note = "inputs: the Scan run offline on the sim market as of 2012-06-01 (test_scan_agents)"

    diff = golden_diff(agent, render_prompt(roles.AGENTS[agent], given[agent], [note]))

    assert not diff, diff
