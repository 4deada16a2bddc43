"""The Steps table of the Run page, folded: a run of a hundred names shows a summary first.

An AutoRun has a step per ticker (``pipeline AAPL``...), so listing every step puts a
hundred rows between a person and what the run made. Steps sharing their first word are
folded into one row with their count by state (``pipeline: 100 steps, 97 done, 3
running``) once there are more than ``FOLD_OVER`` of them; a folded step that needs a
person (waiting for a fix, stuck, failed) is still listed on its own, under its group,
so nothing that asks for attention hides in a count. The run's own table of the group (an
AutoRun's tickers, paged) is linked from the folded row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from activities.stuck_runs import StuckRun
from workflows.progress import StepState

FOLD_OVER = 12
"""A group of more steps than this is folded into one row."""
ATTENTION = frozenset({"waiting", "stuck", StepState.FAILED.value})
"""States a folded step is still listed in."""
DETAILED_IN = {"pipeline": "tickers"}
"""A folded group → the id of the page's table that shows it step by step."""


@dataclass(frozen=True)
class StepRow:
    """One row of the Steps table: a step, or a folded group of steps."""

    name: str
    state: str
    """The step's state as shown (``stuck`` and ``waiting`` over the progress's state);
    a group's: its commonest."""
    message: str = ""
    """Why it is stuck or waits."""
    count: int = 0
    """How many steps a folded row stands for (0: one step)."""
    states: str = ""
    """A folded row's steps by state: ``97 done, 3 running``."""
    detail: str = ""
    """The id of the table that lists a folded group's steps."""


def step_rows(
    steps: Mapping[str, StepState],
    waiting: Mapping[str, str],
    stuck: Mapping[str, StuckRun],
) -> list[StepRow]:
    """The Steps table's rows in the progress's order, large groups folded where their first
    step is; ``stuck`` steps the progress does not know are listed last."""
    shown = {name: _shown(name, state, waiting, stuck) for name, state in steps.items()}
    shown |= {name: ("stuck", held.message) for name, held in stuck.items() if name not in steps}
    groups = Counter(_group(name) for name in shown)
    rows: list[StepRow] = []
    folded: set[str] = set()
    for name, (state, message) in shown.items():
        group = _group(name)
        if groups[group] <= FOLD_OVER:
            rows.append(StepRow(name, state, message))
            continue
        if group not in folded:
            folded.add(group)
            members = [s for n, (s, _) in shown.items() if _group(n) == group]
            rows.append(_folded(group, members))
        if state in ATTENTION:
            rows.append(StepRow(name, state, message))
    return rows


def _shown(
    name: str, state: StepState, waiting: Mapping[str, str], stuck: Mapping[str, StuckRun]
) -> tuple[str, str]:
    if name in stuck:
        return "stuck", stuck[name].message
    if name in waiting:
        return "waiting", waiting[name]
    return state.value, ""


def _group(step: str) -> str:
    """A step's group: its first word (``pipeline`` of ``pipeline AAPL``)."""
    return step.split(" ", 1)[0]


def _folded(group: str, states: list[str]) -> StepRow:
    counts = Counter(states).most_common()
    return StepRow(
        name=group,
        state=counts[0][0],
        count=len(states),
        states=", ".join(f"{count} {state}" for state, count in counts),
        detail=DETAILED_IN.get(group, ""),
    )
