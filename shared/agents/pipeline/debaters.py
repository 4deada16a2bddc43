"""The five debaters (bull/bear researchers, aggressive/conservative/neutral risk analysts):
their specs, and the offline rule that argues a side from the reports' key points."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from shared.agents.pipeline.evidence import ACTION_SIGN, VOTE_OF_STANCE
from shared.agents.pipeline.inputs import (
    AnalystReports,
    DebaterInputs,
)
from shared.agents.pipeline.prompts import debater_prompt, render_order
from shared.agents.pipeline.roles import (
    AGGRESSIVE_DEBATER,
    BEAR_RESEARCHER,
    BULL_RESEARCHER,
    CONSERVATIVE_DEBATER,
    DEBATER,
    NEUTRAL_DEBATER,
)
from shared.agents.pipeline.schemas import (
    DEBATE_OF,
    AnalystKind,
    Debate,
    DebateTurn,
    KeyPoint,
    Speaker,
    TraderProposal,
)
from shared.agents.spec import AgentFamily, AgentSpec
from shared.llm.offline.reading import OfflineInput
from shared.llm.providers import LlmRole

SIDE: dict[Speaker, int] = {
    Speaker.BULL: 1,
    Speaker.BEAR: -1,
    Speaker.AGGRESSIVE: 1,
    Speaker.CONSERVATIVE: -1,
    Speaker.NEUTRAL: 0,
}
"""Which evidence a speaker argues from: researchers by direction; risk debaters for (+1) or
against (-1) the proposal's direction, the neutral one from both."""
SIZING_FACTOR: dict[Speaker, float] = {Speaker.AGGRESSIVE: 1.5, Speaker.CONSERVATIVE: 0.5}
MAX_POSITION = 0.15
"""The Portfolio's cap on one position: no debater argues past it."""
TURN_POINTS = 3


@dataclass(frozen=True)
class Cited:
    """A report's key point, with who made it and how sure they were."""

    analyst: AnalystKind
    confidence: float
    point: KeyPoint

    def text(self) -> str:
        """The point attributed to its analyst."""
        return f"{self.analyst.value}: {self.point.point}"


def cited_points(reports: AnalystReports) -> list[Cited]:
    """Every key point of the reports, the most confident analyst's first."""
    cited = [
        Cited(kind, report.confidence, point)
        for kind, report in reports.by_kind().items()
        for point in report.key_points
    ]
    # Two analysts may quote the same fact (both read company news): cite it once.
    unique = {c.point.point: c for c in sorted(cited, key=lambda c: c.confidence)}
    return sorted(unique.values(), key=lambda c: -c.confidence)


def _direction(speaker: Speaker, proposal: TraderProposal | None) -> int:
    """+1 argues the bullish evidence, -1 the bearish, 0 both."""
    if DEBATE_OF[speaker] is Debate.RESEARCH or proposal is None:
        return SIDE[speaker]
    # A Hold is weighed on its upside: "for" means the bullish evidence.
    return SIDE[speaker] * (ACTION_SIGN[proposal.action] or 1)


def _pick(pool: list[Cited], direction: int, turn: int) -> list[Cited]:
    """The speaker's evidence, rotated so each of its rounds leads with fresh points."""
    if direction:
        mine = [c for c in pool if VOTE_OF_STANCE[c.point.leans] == direction]
    else:
        sides = ([c for c in pool if VOTE_OF_STANCE[c.point.leans] == s] for s in (1, -1))
        mine = [c for pair in zip(*sides, strict=False) for c in pair]
    if not mine:
        return []
    start = (turn - 1) * TURN_POINTS % len(mine)
    return (mine[start:] + mine[:start])[:TURN_POINTS]


def _sizing(speaker: Speaker, inputs: DebaterInputs) -> float | None:
    """Aggressive up, conservative down, neutral the middle of the two's last sizes."""
    if inputs.proposal is None or DEBATE_OF[speaker] is not Debate.RISK:
        return None
    base = inputs.proposal.position_sizing
    if speaker in SIZING_FACTOR:
        return round(min(MAX_POSITION, base * SIZING_FACTOR[speaker]), 4)
    argued = [t.position_sizing for t in inputs.answering(speaker) if t.position_sizing is not None]
    return round(statistics.fmean(argued), 4) if argued else base


LEANING_WORDS: dict[int, str] = {1: "bullish", -1: "bearish", 0: "two-sided"}


def debate_turn(speaker: Speaker, inputs: DebaterInputs) -> DebateTurn:
    """The speaker's turn: its side's strongest evidence, and a rebuttal of the last opponent."""
    direction = _direction(speaker, inputs.proposal)
    round_ = inputs.next_round(speaker)
    picked = _pick(cited_points(inputs.reports), direction, round_)
    points = [c.text() for c in picked] or [
        f"the reports hold no {LEANING_WORDS[direction]} evidence for {inputs.symbol}"
    ]
    answering = inputs.answering(speaker)
    target = answering[0] if answering else None
    sentences = [
        f"The {speaker.value} case on {inputs.symbol}, round {round_}: the "
        f"{LEANING_WORDS[direction]} evidence is {'; '.join(points)}."
    ]
    if target is not None:
        sentences.append(
            f'The {target.speaker.value} argued "{target.key_points[0]}", but that is outweighed '
            f"by {points[0]}."
        )
    sizing = _sizing(speaker, inputs)
    if inputs.proposal is not None and sizing is not None:
        sentences.append(
            f"The trader proposes {render_order(inputs.proposal)}; I argue for {sizing:.1%} "
            "of the portfolio."
        )
    return DebateTurn(
        speaker=speaker,
        round=round_,
        argument=" ".join(sentences),
        rebuttal_of=target.speaker if target else None,
        key_points=points,
        position_sizing=sizing,
    )


def _turn(
    spec: AgentSpec[DebaterInputs, DebateTurn], inputs: DebaterInputs, seen: OfflineInput
) -> DebateTurn:
    return debate_turn(Speaker(spec.key), inputs)


def _argument(turn: DebateTurn) -> str:
    return turn.argument


DEBATERS = AgentFamily(DEBATER, LlmRole.QUICK, DebaterInputs, debater_prompt)
"""The four debaters: quick models, one prompt builder over the debate so far."""


def debater_spec(
    speaker: Speaker, name: str, title: str, goal: str
) -> AgentSpec[DebaterInputs, DebateTurn]:
    """The spec of ``speaker``'s debater: its title and goal; the rest is every debater's."""
    return DEBATERS.spec(
        name, title, goal, output=DebateTurn, offline=_turn, as_text=_argument, key=speaker.value
    )


SPECS: tuple[AgentSpec[DebaterInputs, DebateTurn], ...] = (
    debater_spec(
        Speaker.BULL,
        BULL_RESEARCHER,
        "the bull researcher",
        "Make the strongest evidence-based case for investing: growth, competitive strengths "
        "and the bullish signals in the reports.",
    ),
    debater_spec(
        Speaker.BEAR,
        BEAR_RESEARCHER,
        "the bear researcher",
        "Make the strongest evidence-based case against investing: risks, weaknesses and the "
        "bearish signals in the reports.",
    ),
    debater_spec(
        Speaker.AGGRESSIVE,
        AGGRESSIVE_DEBATER,
        "the aggressive risk analyst",
        "Champion the reward: argue for taking the trader's proposal with a larger position "
        "where the upside justifies it, and challenge excessive caution.",
    ),
    debater_spec(
        Speaker.CONSERVATIVE,
        CONSERVATIVE_DEBATER,
        "the conservative risk analyst",
        "Protect the capital: argue for a smaller position or tighter stops wherever the "
        "downside is underpriced, and challenge over-confidence.",
    ),
    debater_spec(
        Speaker.NEUTRAL,
        NEUTRAL_DEBATER,
        "the neutral risk analyst",
        "Weigh both sides: argue for the position size that balances the upside against the "
        "risks, correcting whichever side overreaches.",
    ),
)
"""The bull/bear researchers, then the three risk debaters."""
