"""The Pipeline's prompts: one pure builder per kind of agent, parameterised by its role.

TradingAgents pasted one preamble into four analyst files and kept near-identical
bull/bear and risk-debater files. Here the role is the agent's spec (its title,
its brief, its tools: ``shared.agents.pipeline.agents``) and each builder renders
that spec with the agent's typed inputs (``shared.agents.pipeline.inputs``). Each agent sees only
what its kind should: analysts their brief, researchers the reports and their
own debate, risk debaters also the trader's proposal, the research manager no
proposal, the portfolio manager the risk debate and, after a critical abort,
only the abort and the reports. Reports always appear under their own
analyst's heading, and a report the run had to go on without appears there as
missing, with the reason and where its raw reply is kept.
"""

from __future__ import annotations

import json
from typing import Any

from shared.agents.missing import MISSING_NOTE
from shared.agents.pipeline.inputs import (
    AnalystInputs,
    AnalystReports,
    DebaterInputs,
    ManagerInputs,
    TraderInputs,
)
from shared.agents.pipeline.roles import (
    AGENTS,
    ANALYST,
    ANALYST_SPECS,
    DEBATER,
    MANAGER,
    MANAGER_DEBATE,
    TRADER,
    ManagerKind,
)
from shared.agents.pipeline.schemas import (
    ABORT_ANALYSTS,
    DEBATE_OF,
    LEVEL_ORDER,
    AnalystKind,
    AnalystReport,
    Debate,
    DebateTurn,
    ResearchPlan,
    SentimentReport,
    Speaker,
    TraderProposal,
)
from shared.agents.prompt_sections import NOT_GIVEN, section, system_message, user_message
from shared.agents.spec import AgentSpec, SpecTable, by_key, specs_by_key
from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage

ANALYST_BRIEFS: SpecTable[AnalystKind, AgentSpec[Any, Any]] = ANALYST_SPECS
"""Each analyst's spec: who it is (title), what it looks at (brief), its tools."""

REPORT_HEADINGS: SpecTable[AnalystKind, str] = by_key(
    ANALYST, AnalystKind, lambda spec: spec.heading
)
"""The heading each analyst's report appears under, in prompts and the run report."""

DEBATER_BRIEFS: SpecTable[Speaker, AgentSpec[Any, Any]] = specs_by_key(DEBATER, Speaker)
"""Each debater's spec: who it is (title) and what it argues for (brief)."""

MANAGER_BRIEFS: SpecTable[ManagerKind, AgentSpec[Any, Any]] = SpecTable(
    (MANAGER,), lambda spec: ManagerKind(spec.name), lambda spec: spec
)
"""Each manager's spec: who it is, its task, and which inputs it needs or must not see."""

SIZING_RULES: dict[Debate, str] = {
    Debate.RESEARCH: "Leave position_sizing null: sizing is the risk debate's job.",
    Debate.RISK: "Set position_sizing to the fraction of the portfolio you argue for.",
}


def abort_rule(may_abort: bool) -> str:
    """What an analyst is told about the critical abort, by whether it may raise one."""
    if may_abort:
        return (
            "If the data shows a catastrophic condition (a trading halt, delisting, bankruptcy, "
            "fraud, a crash of more than 90%, negative equity), set critical_abort.flag to true "
            "with the reason: the Pipeline then goes straight to a Sell. Otherwise leave it false."
        )
    allowed = [kind.value for kind in ABORT_ANALYSTS]
    if not allowed:
        return "Leave critical_abort.flag false: no analyst may raise one."
    who = " and ".join([", ".join(allowed[:-1]), allowed[-1]] if len(allowed) > 1 else allowed)
    return f"Leave critical_abort.flag false: only the {who} analysts may raise one."


ABORT_TASK = (
    "The {analyst} analyst raised a critical abort: {reason}. The debates and the trader were "
    "skipped. Rate the stock Sell or Underweight (nothing else is allowed), set abort_reason "
    "to that reason, and explain the decision from the reports."
)


def _system(title: str, symbol: str) -> ChatMessage:
    return system_message(f"{title} at a trading firm, working on {symbol}")


def _number(value: float | None) -> str:
    return NOT_GIVEN if value is None else f"{value:.6g}"


def render_report(report: AnalystReport) -> str:
    """One report as the debaters and managers read it: stance, facts, then the full text."""
    lines = [f"Stance: {report.stance.value} (confidence {report.confidence:.2f})"]
    if isinstance(report, SentimentReport):
        lines.append(f"Sentiment: {report.band.value}, score {report.score:.1f}/10")
        lines.append(f"Narrative: {report.narrative}")
    if report.critical_abort.flag:
        lines.append(f"CRITICAL ABORT: {report.critical_abort.reason}")
    lines += [f"- ({point.leans.value}) {point.point}" for point in report.key_points]
    return "\n".join(lines) + f"\n\n{report.report_markdown}"


def report_or_absence(reports: AnalystReports, kind: AnalystKind) -> str:
    """A report, or why it is missing, or that its analyst was not asked."""
    report = reports.by_kind().get(kind)
    if report is not None:
        return render_report(report)
    missing = reports.missing.get(kind)
    return missing.describe() if missing else NOT_GIVEN


def _reports_section(reports: AnalystReports) -> str:
    parts = [
        f"### {REPORT_HEADINGS[kind]}\n{report_or_absence(reports, kind)}" for kind in AnalystKind
    ]
    if reports.missing:
        parts.append(MISSING_NOTE)
    return section("Analyst reports", "\n\n".join(parts))


def _turn_text(turn: DebateTurn) -> str:
    sizing = (
        f" (argues for {turn.position_sizing:.1%} of the portfolio)"
        if turn.position_sizing is not None
        else ""
    )
    points = "".join(f"\n- {point}" for point in turn.key_points)
    return f"**{turn.speaker.value}, round {turn.round}**{sizing}: {turn.argument}{points}"


def _turns_section(heading: str, turns: list[DebateTurn]) -> str:
    return section(heading, "\n\n".join(_turn_text(turn) for turn in turns))


def render_order(proposal: TraderProposal) -> str:
    """The trader's order in a phrase: action, levels and size."""
    levels = ", ".join(
        f"{name.replace('_', ' ')} {_number(getattr(proposal, name))}"
        for name in LEVEL_ORDER.get(proposal.action, ("entry_price",))
    )
    return f"{proposal.action.value} ({levels}), {proposal.position_sizing:.1%} of the portfolio"


def render_proposal(proposal: TraderProposal) -> str:
    """The trader's order and its reasoning."""
    return f"{render_order(proposal)}. Reasoning: {proposal.reasoning}"


def render_plan(plan: ResearchPlan) -> str:
    """The research plan: recommendation, rationale, actions."""
    actions = "\n".join(f"- {action}" for action in plan.strategic_actions)
    return f"Recommendation: {plan.recommendation.value}\nRationale: {plan.rationale}\n{actions}"


def _macro_section(macro_context: str | None) -> str | None:
    return section("Macro context", macro_context) if macro_context else None


def _memories_section(memories: str) -> str | None:
    if not memories.strip():
        return None
    return section("Lessons from similar past situations", memories)


def _check_debate(debate: Debate, transcript: list[DebateTurn], agent: str) -> None:
    strays = sorted({t.speaker.value for t in transcript if DEBATE_OF[t.speaker] is not debate})
    if strays:
        raise InvalidInput(
            "transcript",
            f"{agent} reads the {debate.value} debate, but turns of {', '.join(strays)} were given",
            fix=f"Pass only the {debate.value} debate's turns.",
        )


def analyst_messages(kind: AnalystKind, inputs: AnalystInputs) -> list[ChatMessage]:
    """The messages of ``kind``'s analyst (its spec's prompt)."""
    return analyst_prompt(ANALYST_SPECS[kind], inputs)


def analyst_prompt(spec: AgentSpec[AnalystInputs, Any], inputs: AnalystInputs) -> list[ChatMessage]:
    """An analyst's opening turns: its focus, its tools, the abort rule and its context."""
    focus = spec.brief.format(names=", ".join(name.value for name in inputs.names))
    task = (
        f"Analyse {inputs.symbol} as of {inputs.as_of.isoformat()}. {focus} Call your tools "
        f"({', '.join(spec.tools)}) to gather the data first. Then give your stance with a "
        "confidence, the key points (each fact with its number, and which way it leans) and a "
        f'full Markdown report, with analyst "{spec.key}". '
        f"{abort_rule(spec.may_abort)}"
    )
    position = None if inputs.position is None else json.dumps(inputs.position, default=str)
    return [
        _system(spec.title, inputs.symbol),
        user_message(
            [
                section("Task", task),
                _macro_section(inputs.macro_context),
                section("Current position", position) if position else None,
            ]
        ),
    ]


def debater_messages(speaker: Speaker, inputs: DebaterInputs) -> list[ChatMessage]:
    """The messages of ``speaker``'s turn (its spec's prompt)."""
    return debater_prompt(DEBATER_BRIEFS[speaker], inputs)


def debater_prompt(spec: AgentSpec[DebaterInputs, Any], inputs: DebaterInputs) -> list[ChatMessage]:
    """A debater's turn: the reports, its debate so far, the turns to answer, its lessons."""
    speaker = Speaker(spec.key)
    debate = DEBATE_OF[speaker]
    _check_debate(debate, inputs.transcript, spec.title)
    if debate is Debate.RISK and inputs.proposal is None:
        raise InvalidInput(
            "proposal", f"{spec.title} debates the trader's proposal, and none was given"
        )
    answering = inputs.answering(speaker)
    round_ = inputs.next_round(speaker)
    answer = (
        f"Rebut the last points of {' and '.join(t.speaker.value for t in answering)} directly "
        f'and set rebuttal_of to "{answering[0].speaker.value}".'
        if answering
        else "You open the debate: set rebuttal_of to null."
    )
    task = (
        f"{spec.brief} {answer} {SIZING_RULES[debate]} Reply as one debate turn with speaker "
        f'"{speaker.value}", round {round_}, your argument and the key points it rests on.'
    )
    proposal = inputs.proposal if debate is Debate.RISK else None
    return [
        _system(spec.title, inputs.symbol),
        user_message(
            [
                _reports_section(inputs.reports),
                section("The trader's proposal", render_proposal(proposal)) if proposal else None,
                _turns_section("The debate so far", inputs.transcript)
                if inputs.transcript
                else None,
                _turns_section("The arguments to answer", answering) if answering else None,
                _memories_section(inputs.memories),
                section("Task", task),
            ]
        ),
    ]


def trader_messages(inputs: TraderInputs) -> list[ChatMessage]:
    """The trader's messages (its spec's prompt)."""
    return trader_prompt(AGENTS[TRADER], inputs)


def trader_prompt(spec: AgentSpec[TraderInputs, Any], inputs: TraderInputs) -> list[ChatMessage]:
    """The trader's turns: the plan, the reports and the price facts to set levels from."""
    prices = (
        f"Last price: {_number(inputs.last_price)}; ATR: {_number(inputs.atr)}; daily "
        f"volatility: {_number(inputs.volatility)}"
    )
    task = spec.brief.format(symbol=inputs.symbol)
    return [
        _system(spec.title, inputs.symbol),
        user_message(
            [
                section("Research plan", render_plan(inputs.research_plan)),
                _reports_section(inputs.reports),
                section("Price", prices),
                _memories_section(inputs.memories),
                section("Task", task),
            ]
        ),
    ]


def _check_inputs(spec: AgentSpec[ManagerInputs, Any], inputs: ManagerInputs) -> None:
    for name in spec.needs:
        if getattr(inputs, name) is None:
            raise InvalidInput(name, f"{spec.title} decides from it, and none was given")
    for name in spec.refuses:
        if getattr(inputs, name) is not None:
            raise InvalidInput(name, f"{spec.title} decides before it exists; give none")


def _abort_messages(report: AnalystReport, inputs: ManagerInputs) -> list[ChatMessage]:
    """The portfolio manager after a critical abort: the reason, the reports, the lessons."""
    task = ABORT_TASK.format(analyst=report.analyst.value, reason=report.critical_abort.reason)
    return [
        _system(MANAGER_BRIEFS[ManagerKind.PORTFOLIO_MANAGER].title, inputs.symbol),
        user_message(
            [
                section(
                    "Critical abort", f"{report.analyst.value}: {report.critical_abort.reason}"
                ),
                _macro_section(inputs.macro_context),
                _reports_section(inputs.reports),
                _memories_section(inputs.memories),
                section("Task", task),
            ]
        ),
    ]


def manager_messages(kind: ManagerKind, inputs: ManagerInputs) -> list[ChatMessage]:
    """The messages of ``kind``'s manager (its spec's prompt)."""
    return manager_prompt(MANAGER_BRIEFS[kind], inputs)


def manager_prompt(spec: AgentSpec[ManagerInputs, Any], inputs: ManagerInputs) -> list[ChatMessage]:
    """A manager's turns: the reports, the debate it judges, and (portfolio) plan and proposal.

    When a report raised a critical abort, the portfolio manager gets the abort path instead:
    no debate and no proposal, only the reason and a Sell/Underweight to decide.
    """
    kind = ManagerKind(spec.name)
    aborted = inputs.reports.critical_abort()
    if kind is ManagerKind.PORTFOLIO_MANAGER and aborted is not None:
        return _abort_messages(aborted, inputs)
    debate = MANAGER_DEBATE[kind]
    _check_debate(debate, inputs.transcript, spec.title)
    _check_inputs(spec, inputs)
    plan, proposal = inputs.research_plan, inputs.proposal
    return [
        _system(spec.title, inputs.symbol),
        user_message(
            [
                section("Research plan", render_plan(plan)) if plan else None,
                section("The trader's proposal", render_proposal(proposal)) if proposal else None,
                section("Last price", _number(inputs.last_price)) if inputs.last_price else None,
                _macro_section(inputs.macro_context),
                _reports_section(inputs.reports),
                _turns_section(f"The {debate.value} debate", inputs.transcript),
                _memories_section(inputs.memories),
                section("Task", spec.brief),
            ]
        ),
    ]
