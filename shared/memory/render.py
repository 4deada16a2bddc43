"""Recalled lessons as prompt text.

The decision and its measured outcome come before the lesson, so the model
can judge whether the lesson applies rather than take it on trust.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.memory.models import Recollection

HEADING = "Reflections from similar situations:"
NOTHING = "No comparable past situations."


def render_recollections(recollections: Sequence[Recollection]) -> str:
    """A numbered list with date, symbol, similarity, decision, outcome and lesson."""
    if not recollections:
        return NOTHING
    lines = [HEADING]
    for number, memory in enumerate(recollections, start=1):
        outcome = memory.outcome
        lines.append(
            f"{number}. {memory.as_of.date().isoformat()} {memory.symbol} "
            f"(similarity {memory.score:.2f}). Decision: {memory.decision}. "
            f"Outcome after {outcome.horizon_days} days: return {outcome.realised_return:+.1%}, "
            f"alpha {outcome.alpha:+.1%}. Lesson: {memory.lesson}"
        )
    return "\n".join(lines)
