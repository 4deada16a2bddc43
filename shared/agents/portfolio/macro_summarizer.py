"""The macro summarizer: its spec, and its offline reading of the Scan's macro picture.

Offline: cycle and policy words, geopolitical risks, risk factors and high-conviction
themes → a signed score → risk_on / neutral / risk_off.
"""

from __future__ import annotations

import re

from shared.agents.portfolio.inputs import (
    MacroInputs,
)
from shared.agents.portfolio.prompts import (
    macro_prompt,
    render_macro,
)
from shared.agents.portfolio.roles import (
    MACRO_SUMMARIZER,
    PORTFOLIO_GROUP,
)
from shared.agents.portfolio.schemas import (
    MacroSummary,
    MarketStance,
)
from shared.agents.scan.schemas import Conviction
from shared.agents.spec import AgentSpec, from_inputs
from shared.llm.providers import LlmRole

EASY = re.compile(r"\b(expansion|recovery|easing|cut(s|ting)?|accommodative|dovish|growth)\b", re.I)
TIGHT = re.compile(
    r"\b(contraction|recession|slowdown|tightening|hik(e|es|ing)|hawkish|late[- ]cycle)\b", re.I
)
STANCE_BANDS = ((-1.0, MarketStance.RISK_OFF), (1.0, MarketStance.NEUTRAL))
"""Below -1 risk off, below +1 neutral, else risk on."""


def summarize_macro(inputs: MacroInputs) -> MacroSummary:
    """The stance from the Scan's cycle, policy, risks and themes; neutral without a Scan."""
    scan = inputs.scan
    if scan is None:
        return MacroSummary(
            stance=MarketStance.NEUTRAL,
            regime="unknown: no Scan summary",
            key_points=["no Scan summary was given, so no macro view is taken"],
            summary="Without a Scan the book is managed on its holdings and their decisions alone.",
        )
    context = scan.macro_context
    words = f"{context.economic_cycle} {context.central_bank_stance}"
    easy, tight = len(EASY.findall(words)), len(TIGHT.findall(words))
    strong = [t for t in scan.key_themes if t.conviction is Conviction.HIGH]
    geo, risks = len(context.geopolitical_risks), len(scan.risk_factors)
    score = easy - tight + 0.5 * min(len(strong), 3) - 0.5 * max(0, geo - 1) - 0.25 * risks
    stance = next((s for bound, s in STANCE_BANDS if score < bound), MarketStance.RISK_ON)
    points = [
        f"cycle: {context.economic_cycle}",
        f"central bank: {context.central_bank_stance}",
        f"{easy} supportive and {tight} restrictive signals in cycle and policy",
        f"{len(strong)} high-conviction themes of {len(scan.key_themes)}"
        + (f" ({', '.join(t.theme for t in strong)})" if strong else ""),
        f"{geo} geopolitical risks and {risks} risk factors named",
    ]
    return MacroSummary(
        stance=stance,
        regime=f"{context.economic_cycle}; {context.central_bank_stance}",
        key_points=points,
        summary=f"Score {score:+.2f}: {stance.value.replace('_', ' ')}. {scan.executive_summary}",
    )


SPEC: AgentSpec[MacroInputs, MacroSummary] = AgentSpec(
    name=MACRO_SUMMARIZER,
    group=PORTFOLIO_GROUP,
    llm_role=LlmRole.QUICK,
    inputs=MacroInputs,
    output=MacroSummary,
    title="the macro strategist",
    brief="Summarise the market regime as of {date} for the PM: a "
    "stance (risk_on, neutral or risk_off), the regime in a phrase, the key points it rests "
    "on and a short summary. Without a Scan summary, say so and stay neutral.",
    prompt=macro_prompt,
    offline=from_inputs(summarize_macro),
    as_text=render_macro,
)
