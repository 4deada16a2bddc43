"""The agent against one baseline on the same windows: McNemar's exact test.

Accuracy intervals overlap long before two callers differ, and they ignore that
the agent and a baseline were judged on exactly the same windows. McNemar's test
uses that pairing: a window both called right (or both wrong) says nothing about
which caller is better, so only the discordant windows count,

- ``wins`` (b): the agent called the window right and the baseline wrong;
- ``losses`` (c): the baseline called it right and the agent wrong.

If both are equally accurate (the null), each discordant window is a fair coin,
so b ~ Binomial(b + c, 1/2), and the two-sided p-value is twice the smaller tail,
capped at 1. The exact binomial is used rather than the chi-squared
approximation because a row holds few windows (20 per asset when cut), where the
approximation is poor; it is computed in integers and fractions, so the same
counts always give the same float, with no numerical library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

from pydantic import BaseModel, Field

SMALLEST_SHOWN_P = 0.001
"""Below this a p-value is shown as ``p<0.001``: more digits only suggest precision."""


def mcnemar_exact_p(wins: int, losses: int) -> float:
    """The two-sided exact McNemar p-value of ``wins`` (b) against ``losses`` (c).

    ``min(1, 2 * P[X <= min(b, c)])`` with X ~ Binomial(b + c, 1/2); 1.0 when no
    window is discordant (nothing tells the two callers apart). Past ~1,070
    discordant windows all one way the exact value is below the smallest float: 0.0.
    """
    for name, value in (("wins", wins), ("losses", losses)):
        if value < 0:
            raise ValueError(f"{name} is a count of windows, 0 or more; got {value}")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


class PairedTest(BaseModel):
    """The agent against one baseline on a row's scored windows (McNemar's exact test)."""

    wins: int = Field(ge=0, description="windows the agent called right and the baseline wrong")
    losses: int = Field(ge=0, description="windows the baseline called right and the agent wrong")
    p_value: float = Field(
        ge=0,
        le=1,
        description="two-sided exact p-value of the split if both were equally accurate",
    )

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> PairedTest:
        """The test over (agent right, baseline right), one pair per window."""
        wins = losses = 0
        for agent_right, baseline_right in pairs:
            wins += agent_right and not baseline_right
            losses += baseline_right and not agent_right
        return cls(wins=wins, losses=losses, p_value=mcnemar_exact_p(wins, losses))


def format_p(p_value: float) -> str:
    """``p=0.0312`` (three significant digits), ``p=1``, or ``p<0.001``."""
    if p_value < SMALLEST_SHOWN_P:
        return f"p<{SMALLEST_SHOWN_P}"
    return f"p={p_value:.3g}"


def paired_cell(test: PairedTest | None) -> str:
    """A table cell: ``wins–losses, p``; a dash for a row without scored windows."""
    if test is None:
        return "–"
    return f"{test.wins}–{test.losses}, {format_p(test.p_value)}"
