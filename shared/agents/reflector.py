"""The reflector: its spec, and its offline rule, which judges a past decision by the numbers.

It applies the rule the prompt states (``judged_correct``: long right when alpha
> 0, short when alpha < 0, flat when |alpha| is within the band), and writes why,
what to change and the lesson from the role, the stance, the size of the move
and which of stock and benchmark drove it, quoting each number it rests on.
"""

from __future__ import annotations

from typing import Any

from shared.agents.reflection import (
    REFLECTOR,
    Reflection,
    ReflectionInputs,
    Stance,
    judged_correct,
    reflection_messages,
)
from shared.agents.spec import AgentSpec, from_inputs, register_agent
from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage
from shared.llm.providers import LlmRole

# Moves smaller than this (per horizon) are read as noise rather than a verdict.
SMALL_MOVE = 0.01
# Beyond this alpha a wrong call is "badly" wrong and a right one "clearly" right.
LARGE_ALPHA = 0.05


def _pct(value: float) -> str:
    return f"{value * 100:+.2f}%"


def _number(context: dict[str, Any], key: str) -> float:
    value = context.get(key)
    if not isinstance(value, int | float):
        raise InvalidInput(f"context.{key}", f"the reflector needs a number, got {value!r}")
    return float(value)


def _driver(stock: float, bench: float, symbol: str, benchmark: str) -> str:
    """Which side of the alpha did the work: the stock's own move or the market's."""
    if abs(stock - bench) < SMALL_MOVE and abs(bench) >= SMALL_MOVE:
        return f"{symbol} moved with {benchmark}, so the market, not the stock, set the result"
    if abs(bench) < SMALL_MOVE:
        return f"{benchmark} barely moved ({_pct(bench)}), so the result was {symbol}'s own"
    if (stock > 0) != (bench > 0):
        return f"{symbol} went against {benchmark}: a stock-specific move"
    return f"{symbol} went the market's way but {'further' if abs(stock) > abs(bench) else 'less'}"


def reflect(context: dict[str, Any]) -> Reflection:
    """The reflection for one role's decision, from the numbers alone."""
    role = str(context.get("role", "agent")).replace("_", " ")
    symbol = str(context.get("symbol", "the stock"))
    benchmark = str(context.get("benchmark", "the benchmark"))
    try:
        stance = Stance(str(context.get("stance")))
    except ValueError:
        raise InvalidInput("context.stance", f"{context.get('stance')!r} is not a stance") from None
    stock = _number(context, "stock_return")
    bench = _number(context, "benchmark_return")
    alpha = _number(context, "alpha")
    band = float(context.get("hold_alpha_band", 0.02))
    bars = int(_number(context, "horizon_bars"))
    correct = judged_correct(stance, alpha)
    size = "clearly" if abs(alpha) >= LARGE_ALPHA else "narrowly"
    moves = (
        f"over {bars} trading days {symbol} returned {_pct(stock)} against {benchmark} "
        f"{_pct(bench)}, alpha {_pct(alpha)}"
    )
    driver = _driver(stock, bench, symbol, benchmark)
    if stance is Stance.FLAT:
        verdict = "within" if correct else "outside"
        why = (
            f"The {role} stayed flat; {moves}, {verdict} the ±{band * 100:.1f}% band a Hold "
            f"allows. {driver}."
        )
        if correct:
            change = f"Nothing essential: the {_pct(alpha)} gap did not reward taking a side."
            lesson = (
                f"{symbol}: a Hold held up, alpha {_pct(alpha)} in {bars} days; keep "
                "waiting for a clearer edge in similar set-ups."
            )
        else:
            side = "long" if alpha > 0 else "short"
            change = (
                f"Look harder for the edge the situation offered: a {side} call would have "
                f"earned {_pct(abs(alpha))} over {benchmark}."
            )
            lesson = (
                f"{symbol}: staying flat missed a {_pct(alpha)} alpha in {bars} days; in "
                f"similar set-ups weigh the {side} case more."
            )
    else:
        wanted = "beat" if stance is Stance.LONG else "lag"
        outcome = "did" if correct else "did not"
        why = (
            f"The {role} went {stance.value}, a bet that {symbol} would {wanted} "
            f"{benchmark}; {moves}, so it {outcome} ({size}). {driver}."
        )
        if correct:
            change = (
                f"Keep the reasoning; size it to the {_pct(abs(alpha))} edge, "
                f"{'which was large enough to press' if size == 'clearly' else 'which was thin'}."
            )
            lesson = (
                f"{symbol}: the {stance.value} call paid, alpha {_pct(alpha)} in {bars} days; "
                "similar evidence deserves the same side."
            )
        else:
            other = "short or flat" if stance is Stance.LONG else "long or flat"
            change = f"Weigh the opposing case more: the {_pct(alpha)} alpha favoured {other}. " + (
                "Check the market's direction before a stock call."
                if abs(bench) >= abs(stock - bench)
                else f"Look for what moved {symbol} on its own."
            )
            lesson = (
                f"{symbol}: the {stance.value} call was {size} wrong, alpha {_pct(alpha)} in "
                f"{bars} days; in similar set-ups demand stronger evidence for that side."
            )
    return Reflection(was_correct=correct, why=why, what_to_change=change, lesson=lesson)


def _prompt(
    spec: AgentSpec[ReflectionInputs, Reflection], inputs: ReflectionInputs
) -> list[ChatMessage]:
    return reflection_messages(
        inputs.role, inputs.situation, inputs.decision, inputs.outcome, inputs.stance
    )


def _reflect(inputs: ReflectionInputs) -> Reflection:
    return reflect(inputs.numbers())


def _text(reflection: Reflection) -> str:
    return f"{reflection.why} {reflection.lesson}"


SPEC: AgentSpec[ReflectionInputs, Reflection] = register_agent(
    AgentSpec(
        name=REFLECTOR,
        group="reflection",
        llm_role=LlmRole.QUICK,
        inputs=ReflectionInputs,
        output=Reflection,
        title="the reviewer of a role's past decisions",
        brief="judge the decision by what followed, with a lesson for similar situations",
        prompt=_prompt,
        offline=from_inputs(_reflect),
        as_text=_text,
    )
)
