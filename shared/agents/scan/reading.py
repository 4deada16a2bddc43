"""What the Scan's agents share: tool answers and gaps, the report they write, the scanners' spec.

Every sentence of an offline scanner carries the number it rests on; a missing
answer is a gap the report names, never a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shared.agents.pipeline.facts import unwrap
from shared.agents.scan.inputs import ScannerInputs
from shared.agents.scan.prompts import report_json, scanner_prompt
from shared.agents.scan.roles import SCANNER, ScannerKind
from shared.agents.scan.schemas import ScannerReport
from shared.agents.spec import AgentFamily, AgentSpec
from shared.llm.offline.reading import OfflineInput
from shared.llm.providers import LlmRole

INF = float("inf")
MAX_LISTED = 6
"""Tickers, risks and headlines a scanner names at most: the synthesis reads them all."""


def tool_answers(offline: OfflineInput) -> list[tuple[str, Any]]:
    """(tool, parsed answer) of every call that succeeded."""
    return [(output.name, output.data) for output in offline.tool_outputs if output.ok]


def data_gaps(offline: OfflineInput) -> list[str]:
    """Failed calls and "no data" answers: the report names them rather than guess."""
    return [
        f"{output.name}: {output.data}"
        for output in offline.tool_outputs
        if not output.ok or isinstance(unwrap(output.data), str)
    ]


def unique(items: Sequence[str]) -> list[str]:
    """``items`` without repeats, in their first order."""
    return list(dict.fromkeys(items))


def pct(fraction: float | None) -> str:
    """A fraction as a signed percentage, or n/a."""
    return "n/a" if fraction is None else f"{fraction:+.1%}"


def scanner_report(
    title: str,
    headline: str,
    findings: list[str],
    offline: OfflineInput,
    *,
    tickers: Sequence[str] = (),
    risks: Sequence[str] = (),
) -> ScannerReport:
    """A report whose Markdown shows exactly its headline, findings, names, risks and gaps."""
    gaps = data_gaps(offline)
    findings = findings or [f"no data: {gap}" for gap in gaps] or ["the tools returned nothing"]
    names, risks = unique(tickers)[:MAX_LISTED], unique(risks)[:MAX_LISTED]
    parts = [f"# {title}", f"**{headline}**", "\n".join(f"- {f}" for f in findings)]
    if names:
        parts.append(f"Names worth a look: {', '.join(names)}")
    if risks:
        parts.append("## Risks\n" + "\n".join(f"- {r}" for r in risks))
    if gaps:
        parts.append("## Data gaps\n" + "\n".join(f"- {g}" for g in gaps))
    return ScannerReport(
        headline=headline,
        findings=findings,
        tickers=names,
        risks=risks,
        report_markdown="\n\n".join(parts),
    )


ScannerRule = Callable[
    [AgentSpec[ScannerInputs, ScannerReport], ScannerInputs, OfflineInput], ScannerReport
]


SCANNERS = AgentFamily(SCANNER, LlmRole.QUICK, ScannerInputs, scanner_prompt)
"""The four scanners: quick models with tools, one prompt builder over their focus."""


def scanner_spec(
    kind: ScannerKind,
    name: str,
    *,
    title: str,
    focus: str,
    tools: tuple[str, ...],
    rule: ScannerRule,
) -> AgentSpec[ScannerInputs, ScannerReport]:
    """The spec of ``kind``'s scanner: its title, focus, tools and offline rule; the rest
    (inputs, schema, prompt builder, quick model) is every scanner's."""
    return SCANNERS.spec(
        name,
        title,
        focus,
        output=ScannerReport,
        offline=rule,
        as_text=report_json,
        key=kind.value,
        tools=tools,
    )
