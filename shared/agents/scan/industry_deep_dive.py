"""The industry deep dive: its spec, and its offline reading of the chosen sectors' leaders."""

from __future__ import annotations

from shared.agents.scan.facts import (
    found,
)
from shared.agents.scan.inputs import DeepDiveInputs
from shared.agents.scan.prompts import (
    deep_dive_prompt,
    report_json,
)
from shared.agents.scan.reading import INF, MAX_LISTED, pct, scanner_report, tool_answers, unique
from shared.agents.scan.roles import (
    DEEP_DIVE,
    INDUSTRY_DEEP_DIVE,
)
from shared.agents.scan.schemas import (
    ScannerReport,
)
from shared.agents.spec import AgentSpec
from shared.data.contracts import (
    IndustryCompany,
    SectorPerformance,
)
from shared.llm.offline.reading import OfflineInput
from shared.llm.providers import LlmRole
from shared.tools.catalog import (
    INDUSTRY_TOOLS,
)

LEADERS_PER_SECTOR = 2
DEEP_FALL = -0.10


def _relative(company: IndustryCompany, move: SectorPerformance) -> float | None:
    if company.return_21d is None or move.return_21d is None:
        return None
    return company.return_21d - move.return_21d


def deep_dive_report(
    spec: AgentSpec[DeepDiveInputs, ScannerReport], inputs: DeepDiveInputs, offline: OfflineInput
) -> ScannerReport:
    """Each chosen sector's leading companies against their sector, and smart money in them."""
    companies = found(tool_answers(offline), "get_industry_top_companies", IndustryCompany)
    flagged = {c.ticker: c for c in inputs.smart_money}
    findings, tickers, risks = [], [], []
    for move in inputs.sectors:
        own = [c for c in companies if c.sector is move.sector]
        label = f"{move.sector.value} ({move.etf} {pct(move.return_21d)} over 21 sessions)"
        if not own:
            findings.append(f"{label}: no companies were read")
            continue
        by_strength = sorted(own, key=lambda c: -(_relative(c, move) or -INF))
        best, worst = by_strength[0], by_strength[-1]
        largest = max(own, key=lambda c: c.market_cap or 0.0)
        findings.append(
            f"{label}: {len(own)} leading companies; strongest {best.symbol} "
            f"{pct(best.return_21d)} ({pct(_relative(best, move))} vs the sector), weakest "
            f"{worst.symbol} {pct(worst.return_21d)}; largest {largest.symbol} ({largest.industry})"
        )
        smart = [c.symbol for c in own if c.symbol in flagged]
        if smart:
            findings.append(f"smart money flagged {', '.join(smart)} in {move.sector.value}")
        tickers += smart + [c.symbol for c in by_strength[:LEADERS_PER_SECTOR]]
        falling = [c for c in own if (c.return_21d or 0.0) <= DEEP_FALL]
        if (move.return_21d or 0.0) < 0:
            risks.append(
                f"{move.sector.value} fell {abs(move.return_21d or 0.0):.1%} over 21 sessions; "
                f"{len(falling)} of its {len(own)} leaders fell 10% or more"
            )
    top = inputs.sectors[0]
    headline = (
        f"{top.sector.value} moved most ({pct(top.return_21d)} over 21 sessions); "
        f"names to dig into: {', '.join(unique(tickers)[:MAX_LISTED]) or 'none'}"
    )
    return scanner_report(
        "Industry deep dive", headline, findings, offline, tickers=tickers, risks=risks
    )


SPEC: AgentSpec[DeepDiveInputs, ScannerReport] = AgentSpec(
    name=INDUSTRY_DEEP_DIVE,
    group=DEEP_DIVE,
    llm_role=LlmRole.DEEP,
    inputs=DeepDiveInputs,
    output=ScannerReport,
    title="the industry deep-dive analyst",
    brief="Dig into the industries of {names}: the sectors that moved most over 21 sessions up "
    "to {as_of}. Their leading companies are read for you first; call your tools ({tools}) "
    "for anything else you need. Say which companies lead or lag their sector and by how "
    "much, and where the smart-money screens agree.",
    prompt=deep_dive_prompt,
    offline=deep_dive_report,
    as_text=report_json,
    tools=INDUSTRY_TOOLS,
)
