"""What every Pipeline analyst shares: ``analyst_spec`` and the ``Desk`` that answers offline.

An analyst is one call to ``analyst_spec``: its kind, title, focus, tools, heading,
whether it may raise a critical abort, and its ``Desk`` (the offline rules that turn
its tool results into evidence, an abort, and any extra fields of its schema). The
rest (inputs, prompt builder, LLM role, the text of its answer) is the same for all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.agents.pipeline.evidence import (
    MAX_POINTS,
    STANCE_BANDS,
    Evidence,
    banded,
    weighted_vote,
)
from shared.agents.pipeline.facts import Payloads, payloads
from shared.agents.pipeline.inputs import AnalystInputs
from shared.agents.pipeline.kinds import ANALYST_GROUP, AnalystKind
from shared.agents.pipeline.prompts import analyst_prompt
from shared.agents.pipeline.schemas import AnalystReport, CriticalAbort, KeyPoint
from shared.agents.schemas import Stance
from shared.agents.spec import AgentFamily, AgentSpec
from shared.llm.offline.reading import OfflineInput
from shared.llm.providers import LlmRole

AbortRule = Callable[[Payloads], str | None]


def _no_extra(found: Payloads) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Desk:
    """One analyst's offline rules: its evidence, its abort rules, and the extra fields of its
    schema. Called as the spec's offline rule, it writes the report from the weighted vote."""

    evidence: Callable[[Payloads], list[Evidence]]
    aborts: tuple[AbortRule, ...] = ()
    extra: Callable[[Payloads], dict[str, Any]] = field(default=_no_extra)

    def __call__(
        self, spec: AgentSpec[AnalystInputs, Any], inputs: AnalystInputs, seen: OfflineInput
    ) -> AnalystReport:
        """The report of ``spec``'s analyst from its tool results; with none, no view."""
        kind = AnalystKind.named(spec.key)
        found = payloads((o.name, o.data) for o in seen.tool_outputs if o.ok)
        # A failed call and a "no data in the window" sentence are both gaps the report names.
        gaps = [f"{o.name}: {o.data}" for o in seen.tool_outputs if not o.ok] + [
            f"{name}: {answer}" for name, answer in found.items() if isinstance(answer, str)
        ]
        evidence = sorted(self.evidence(found), key=lambda e: -abs(e.vote) * e.weight)
        abort = self._abort(found)
        score = weighted_vote(evidence)
        stance = Stance.BEARISH if abort.flag else banded(score, STANCE_BANDS)
        confidence = _confidence(abort, score, evidence)
        points = [KeyPoint(point=e.point, leans=e.leans) for e in evidence][:MAX_POINTS]
        if abort.flag:
            points.insert(0, KeyPoint(point=f"critical: {abort.reason}", leans=Stance.BEARISH))
        points = points or [
            KeyPoint(point=f"no {kind.value} data came back from the tools", leans=Stance.NEUTRAL)
        ]
        heading = (
            f"**{kind.value.capitalize()} analyst: {stance.value}** (weighted vote {score:+.2f} "
            f"from {len(evidence)} facts, confidence {confidence:.2f})"
        )
        report: AnalystReport = spec.schema.model_validate(
            {
                "analyst": kind,
                "stance": stance,
                "confidence": confidence,
                "key_points": points,
                "report_markdown": _markdown(heading, points, abort, gaps),
                "critical_abort": abort,
                **self.extra(found),
            }
        )
        return report

    def _abort(self, found: Payloads) -> CriticalAbort:
        reason = next((r for r in (rule(found) for rule in self.aborts) if r), None)
        return CriticalAbort(flag=reason is not None, reason=reason)


def _confidence(abort: CriticalAbort, score: float, evidence: Sequence[Evidence]) -> float:
    """Near-certain on an abort, 0.1 with nothing that voted, else growing with the vote."""
    if abort.flag:
        return 0.95
    if not any(e.weight > 0 for e in evidence):
        return 0.1
    return round(min(0.9, 0.3 + 0.6 * abs(score)), 2)


def _markdown(heading: str, points: list[KeyPoint], abort: CriticalAbort, gaps: list[str]) -> str:
    lines = "\n".join(f"- ({p.leans.value}) {p.point}" for p in points)
    missing = "".join(f"\n- {gap}" for gap in gaps)
    return (
        f"{heading}\n\n{lines}"
        + (f"\n\n**Critical abort:** {abort.reason}" if abort.flag else "")
        + (f"\n\nData gaps:{missing}" if missing else "")
    )


def _report_text(report: AnalystReport) -> str:
    return report.report_markdown


ANALYSTS = AgentFamily(ANALYST_GROUP, LlmRole.QUICK, AnalystInputs, analyst_prompt)
"""The analysts: quick models with tools, one prompt builder over their focus."""


def analyst_spec(
    kind: str,
    *,
    title: str,
    focus: str,
    tools: tuple[str, ...],
    heading: str,
    desk: Desk,
    may_abort: bool = False,
    output: type[AnalystReport] = AnalystReport,
) -> AgentSpec[AnalystInputs, AnalystReport]:
    """The spec of the ``{kind}_analyst``: everything an analyst of the Pipeline needs.

    ``focus`` is what its task says to read (``{names}`` there lists the indicators the
    run asks for); ``desk`` answers for it offline.
    """
    if kind == "missing":
        raise ValueError("'missing' names the reports the run went without; name it otherwise")
    return ANALYSTS.spec(
        f"{kind}_analyst",
        title,
        focus,
        output=output,
        offline=desk,
        as_text=_report_text,
        key=kind,
        tools=tools,
        may_abort=may_abort,
        heading=heading,
    )
