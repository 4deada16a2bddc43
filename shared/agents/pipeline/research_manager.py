"""The research manager, judge of the bull/bear debate: its spec and its offline verdict."""

from __future__ import annotations

from shared.agents.pipeline.debaters import LEANING_WORDS, Cited, cited_points
from shared.agents.pipeline.evidence import ACTION_SIGN, INF, VOTE_OF_STANCE, Bands, banded
from shared.agents.pipeline.inputs import (
    AnalystReports,
    ManagerInputs,
)
from shared.agents.pipeline.prompts import manager_prompt, render_plan
from shared.agents.pipeline.roles import MANAGER, RESEARCH_MANAGER
from shared.agents.pipeline.schemas import (
    Action,
    AnalystKind,
    ResearchPlan,
)
from shared.agents.spec import AgentSpec, from_inputs
from shared.llm.providers import LlmRole

PLAN_BANDS: Bands[Action] = ((-0.2, Action.SELL), (0.2, Action.HOLD), (INF, Action.BUY))
PLAN_STEPS: dict[Action, tuple[str, ...]] = {
    Action.BUY: (
        "Buy {symbol}: {agree} of {count} reports lean bullish (weighted stance {score:+.2f})",
        "Guard against the strongest counterpoint: {against}",
        "Reassess if the {lead} report turns bearish",
    ),
    Action.SELL: (
        "Sell or avoid {symbol}: {agree} of {count} reports lean bearish (weighted stance "
        "{score:+.2f})",
        "Watch what would change the view: {against}",
        "Reassess if the {lead} report turns bullish",
    ),
    Action.HOLD: (
        "Hold {symbol}: the reports balance (weighted stance {score:+.2f})",
        "Buy on confirmation of: {strongest_bull}",
        "Sell on confirmation of: {strongest_bear}",
    ),
}
"""The research plan's steps per recommendation, filled from the reports."""


def report_score(reports: AnalystReports) -> float:
    """Mean of the reports' stances (+1/-1/0) weighted by their confidence, in [-1, 1]."""
    given = list(reports.by_kind().values())
    if not given:
        return 0.0
    return sum(VOTE_OF_STANCE[r.stance] * r.confidence for r in given) / len(given)


def _strongest(pool: list[Cited], direction: int) -> str:
    found = next((c for c in pool if VOTE_OF_STANCE[c.point.leans] == direction), None)
    return found.text() if found else f"no {LEANING_WORDS[direction]} point was made"


def research_plan(inputs: ManagerInputs) -> ResearchPlan:
    """Weigh the reports' stances by confidence; the debate's best points become the steps."""
    reports = inputs.reports.by_kind()
    score = report_score(inputs.reports)
    action = Action.SELL if inputs.reports.critical_abort() else banded(score, PLAN_BANDS)
    sign = ACTION_SIGN[action]
    pool = cited_points(inputs.reports)
    agreeing = [k for k, r in reports.items() if VOTE_OF_STANCE[r.stance] == sign]
    values = {
        "symbol": inputs.symbol,
        "score": score,
        "count": len(reports),
        "agree": len(agreeing),
        "lead": (agreeing[0] if agreeing else AnalystKind.MARKET).value,
        "against": _strongest(pool, -sign or -1),
        "strongest_bull": _strongest(pool, 1),
        "strongest_bear": _strongest(pool, -1),
    }
    stances = ", ".join(
        f"{k.value} {r.stance.value} ({r.confidence:.2f})" for k, r in reports.items()
    )
    heard = sorted({turn.speaker.value for turn in inputs.transcript})
    return ResearchPlan(
        recommendation=action,
        rationale=(
            f"{action.value}: the reports' confidence-weighted stance is {score:+.2f} ({stances}). "
            f"Strongest bullish point: {values['strongest_bull']}. Strongest bearish point: "
            f"{values['strongest_bear']}. Debate heard from: {', '.join(heard) or 'nobody'} "
            f"over {len(inputs.transcript)} turns."
        ),
        strategic_actions=[step.format(**values) for step in PLAN_STEPS[action]],
    )


SPEC: AgentSpec[ManagerInputs, ResearchPlan] = AgentSpec(
    name=RESEARCH_MANAGER,
    group=MANAGER,
    llm_role=LlmRole.DEEP,
    inputs=ManagerInputs,
    output=ResearchPlan,
    title="the research manager and judge of the bull/bear debate",
    brief="Weigh the debate and the reports and commit to Buy, Sell or Hold: Hold only when the "
    "evidence truly balances, never as a safe default. Give the rationale (the strongest "
    "points on each side and why one wins) and concrete strategic actions for the trader.",
    prompt=manager_prompt,
    offline=from_inputs(research_plan),
    as_text=render_plan,
    refuses=("research_plan", "proposal"),
)
