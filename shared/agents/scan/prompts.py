"""The Scan's prompts: one pure builder per kind of agent, and the Markdown of its outputs.

The four scanners share one builder parameterised by their spec (title, focus
and tools: ``shared/agents/scan/<agent>.py``); the
smart-money scanner also reads the sector scanner's report and numbers. The deep
dive is told which sectors to dig into (chosen in code) and what smart money
flagged; the synthesis reads every report and every candidate with its numbers,
and is told the shortlist's rules the workflow will check. A report the scan went
on without is named, with why, wherever it would have been read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from shared.agents.missing import MissingStep, missing_section
from shared.agents.prompt_sections import NOT_GIVEN, section, system_message, user_message
from shared.agents.scan.facts import Candidate
from shared.agents.scan.inputs import (
    SCANNER_PREFETCH,
    DeepDiveInputs,
    ScannerInputs,
    SynthesisInputs,
)
from shared.agents.scan.roles import SCANNER_SPECS, ScannerKind
from shared.agents.scan.schemas import ScannerReport, ScanSummary
from shared.agents.spec import AgentSpec, SpecTable
from shared.data.contracts import IndexLevel, SectorPerformance
from shared.llm.contracts import ChatMessage, ToolCall, ToolResult

SCANNER_BRIEFS: SpecTable[ScannerKind, AgentSpec[Any, Any]] = SCANNER_SPECS
"""Each scanner's spec: who it is (title) and what it looks for (brief)."""

REPORT_TASK = (
    "Then give a one-sentence headline, the findings (each fact with its number and date), "
    "the tickers worth a closer look (best first), the risks (worst first) and a full "
    "Markdown report."
)


def _system(title: str, as_of: datetime) -> ChatMessage:
    return system_message(
        f"{title} on a macro research desk, scanning the whole market as of {as_of:%Y-%m-%d}"
    )


def _pct(fraction: float | None) -> str:
    return NOT_GIVEN if fraction is None else f"{fraction:+.1%}"


def render_sector_moves(moves: Sequence[SectorPerformance]) -> str:
    """One line per sector ETF: its returns over 1, 5 and 21 sessions and the year."""
    return "\n".join(
        f"- {m.sector.value} ({m.etf}): 1d {_pct(m.return_1d)}, 5d {_pct(m.return_5d)}, "
        f"21d {_pct(m.return_21d)}, YTD {_pct(m.return_ytd)}"
        for m in moves
    )


def render_indices(levels: Sequence[IndexLevel]) -> str:
    """One line per index: level, 1-day and 21-day change."""

    def change(value: float | None) -> str:
        return NOT_GIVEN if value is None else f"{value:+.2f}%"

    return "\n".join(
        f"- {i.name} ({i.symbol}): {i.level:.6g}, 1d {change(i.change_1d_pct)}, "
        f"21d {change(i.change_21d_pct)}"
        for i in levels
    )


def render_candidate(candidate: Candidate) -> str:
    """A candidate on one line: who, why it was named, and its numbers."""
    facts = [
        f"last {candidate.last:.6g}" if candidate.last is not None else None,
        f"1d {candidate.change_pct:+.2f}%" if candidate.change_pct is not None else None,
        f"volume {candidate.relative_volume:.2f}x average"
        if candidate.relative_volume is not None
        else None,
        f"21d {_pct(candidate.return_21d)}" if candidate.return_21d is not None else None,
        f"market cap {candidate.market_cap:.3g}" if candidate.market_cap is not None else None,
        f"insiders bought ${candidate.insider_buy_value:,.0f}"
        if candidate.insider_buy_value is not None
        else None,
        f"{candidate.breakout_pct:.2f}% above its 52-week high"
        if candidate.breakout_pct is not None
        else None,
    ]
    sector = candidate.sector.value if candidate.sector else "sector unknown"
    signals = ", ".join(signal.value for signal in candidate.signals)
    numbers = "; ".join(fact for fact in facts if fact)
    return f"- {candidate.ticker} {candidate.name} ({sector}): {signals}; {numbers}"


def render_scanner_report(report: ScannerReport) -> str:
    """A report as later agents read it: headline, findings, names, risks, then the text."""
    lines = [f"**{report.headline}**", *(f"- {finding}" for finding in report.findings)]
    if report.tickers:
        lines.append(f"Names worth a look: {', '.join(report.tickers)}")
    if report.risks:
        lines += ["Risks:", *(f"- {risk}" for risk in report.risks)]
    return "\n".join(lines) + f"\n\n{report.report_markdown}"


def _missing_section(missing: list[MissingStep]) -> str | None:
    return section("Missing reports", missing_section(missing)) if missing else None


def scanner_messages(kind: ScannerKind, inputs: ScannerInputs) -> list[ChatMessage]:
    """The messages of ``kind``'s scanner (its spec's prompt)."""
    return scanner_prompt(SCANNER_SPECS[kind], inputs)


def scanner_prompt(spec: AgentSpec[ScannerInputs, Any], inputs: ScannerInputs) -> list[ChatMessage]:
    """A scanner's opening turns: its focus, its tools and (smart money) the sector picture."""
    kind = ScannerKind(spec.key)
    tools = ", ".join(spec.tools)
    fetched = SCANNER_PREFETCH.get(kind)
    gather = (
        f"The answers of {', '.join(fetched)} are read for you first; call your tools again "
        "only with other arguments."
        if fetched
        else f"Call your tools ({tools}) to gather the data first."
    )
    task = f"Scan the market as of {inputs.as_of.isoformat()}. {spec.brief} {gather} {REPORT_TASK}"
    prior = inputs.sector_report if kind is ScannerKind.SMART_MONEY else None
    return [
        _system(spec.title, inputs.as_of),
        user_message(
            [
                section("Task", task),
                section("Sector scanner report", render_scanner_report(prior)) if prior else None,
                section("Sector moves", render_sector_moves(inputs.sectors))
                if kind is ScannerKind.SMART_MONEY and inputs.sectors
                else None,
                _missing_section(inputs.missing),
            ]
        ),
    ]


def deep_dive_prompt(
    spec: AgentSpec[DeepDiveInputs, Any], inputs: DeepDiveInputs
) -> list[ChatMessage]:
    """The deep dive's opening turns: the sectors chosen for it and the smart-money findings."""
    names = ", ".join(sector.value for sector in inputs.sector_names)
    brief = spec.brief.format(
        names=names, as_of=inputs.as_of.isoformat(), tools=", ".join(spec.tools)
    )
    task = f"{brief} {REPORT_TASK}"
    flagged = "\n".join(render_candidate(candidate) for candidate in inputs.smart_money)
    report = inputs.smart_money_report
    return [
        _system(spec.title, inputs.as_of),
        user_message(
            [
                section("Task", task),
                section("The sectors to dig into", render_sector_moves(inputs.sectors)),
                section("Smart-money scanner report", render_scanner_report(report))
                if report
                else None,
                section("Stocks the smart-money screens flagged", flagged),
                _missing_section(inputs.missing),
            ]
        ),
    ]


def synthesis_prompt(
    spec: AgentSpec[SynthesisInputs, Any], inputs: SynthesisInputs
) -> list[ChatMessage]:
    """The synthesis' turns: every report, the sector and index picture, every candidate."""
    task = spec.brief.format(
        as_of=inputs.as_of.isoformat(),
        max_tickers=inputs.max_tickers,
        series=", ".join(inputs.series),
    )
    reports = "\n\n".join(
        f"### {name}\n{render_scanner_report(report)}"
        for name, report in inputs.reports.given().items()
    )
    return [
        _system(spec.title, inputs.as_of),
        user_message(
            [
                section("Scanner reports", reports),
                _missing_section(inputs.reports.missing),
                section("Sector moves", render_sector_moves(inputs.sectors)),
                section("Deep-dive sectors", ", ".join(s.value for s in inputs.deep_dive_sectors)),
                section("Indices", render_indices(inputs.indices)),
                section("Candidates", "\n".join(map(render_candidate, inputs.candidates))),
                section("Task", task),
            ]
        ),
    ]


def report_json(report: ScannerReport | ScanSummary) -> str:
    """A Scan agent's answer as text: its JSON (the Scan reads it structured)."""
    return report.model_dump_json()


def prefetched_turns(calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> list[ChatMessage]:
    """The turns of a conversation in which the workflow already made ``calls``: the assistant
    turn asking for them and one tool turn per result, as a tool loop would append them."""
    return [
        ChatMessage(role="assistant", tool_calls=list(calls)),
        *(r.message() for r in results),
    ]


def render_summary(
    summary: ScanSummary,
    as_of: datetime,
    workflow_id: str,
    missing: Sequence[MissingStep] = (),
    corrections: Sequence[str] = (),
) -> str:
    """The summary as Markdown: view, macro context, themes, the shortlist table, risks, the
    reports the synthesis went without, and what the data corrected in the shortlist."""
    macro = summary.macro_context
    parts = [
        f"# Market scan, {as_of:%Y-%m-%d}",
        f"Scan as of {as_of.isoformat()} · run `{workflow_id}` · timeframe {summary.timeframe}",
        f"## Executive summary\n{summary.executive_summary}",
        "## Macro context\n"
        f"- Economic cycle: {macro.economic_cycle}\n"
        f"- Central bank: {macro.central_bank_stance}\n"
        + "".join(f"- Geopolitical risk: {risk}\n" for risk in macro.geopolitical_risks),
        "## Key themes\n"
        + "\n".join(
            f"- **{t.theme}** ({t.conviction.value} conviction, {t.timeframe}): {t.description}"
            for t in summary.key_themes
        ),
        "## Stocks to investigate\n| ticker | name | sector | angle | conviction | smart money |\n"
        "|---|---|---|---|---|---|\n"
        + "\n".join(
            f"| {s.ticker} | {s.name} | {s.sector.value} | {s.thesis_angle.value} | "
            f"{s.conviction.value} | {'yes' if s.smart_money else ''} |"
            for s in summary.stocks_to_investigate
        ),
    ]
    for stock in summary.stocks_to_investigate:
        detail = [f"### {stock.ticker}: {stock.name}", stock.rationale]
        detail += [f"- catalyst: {c}" for c in stock.key_catalysts]
        detail += [f"- risk: {r}" for r in stock.risks]
        parts.append("\n".join(detail))
    if summary.risk_factors:
        parts.append("## Risk factors\n" + "\n".join(f"- {r}" for r in summary.risk_factors))
    if missing:
        lines = "\n".join(f"- {step.describe()}" for step in missing)
        parts.append(f"## Missing reports\nThe synthesis went on without:\n{lines}")
    if corrections:
        lines = "\n".join(f"- {correction}" for correction in corrections)
        parts.append(
            "## Shortlist corrected by the data\nStill wrong after the repair turn, so "
            f"corrected in code:\n{lines}"
        )
    return "\n\n".join(parts) + "\n"
