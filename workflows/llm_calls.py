"""Workflow-side LLM calls: route ``chat`` to its provider's queue, and run tool loops.

A tool loop is: chat → run every tool call the model asked for, in parallel, in one
``run_tools`` activity → append the results → chat again, at most
``MAX_TOOL_ROUNDS`` times. A tool that fails after its retries becomes an error
message the model reads, not a crashed workflow. If the model is still asking
for tools when the rounds run out, one last call without tools makes it answer.

A call is ``optional`` when the graph can do without its step: a reply that stays
invalid after its repair turns then fails the call (``missing_step`` turns that
failure into the ``MissingStep`` the run records) instead of parking it.

Every agent call is built one way, from its spec and its typed inputs
(``agent_request``), and sent by ``call_agent`` (one turn, the spec's output model
back) or ``call_agent_tools`` (its tool loop, the output with the tool results).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic

from pydantic import BaseModel, Field, ValidationError
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.failures import as_temporal_failures
    from activities.tools import run_tool_activity, run_tools_activity
    from shared.agents.missing import MissingStep
    from shared.agents.spec import AgentSpec, InputsT, OutputT
    from shared.llm.contracts import (
        ChatMessage,
        ChatRequest,
        ChatResponse,
        LlmChoice,
        ToolBatch,
        ToolCall,
        ToolRequest,
        ToolResult,
        Usage,
        UsageReport,
    )
    from shared.llm.providers import PROVIDERS, LlmRole
    from shared.storage.buckets import PAYLOADS_BUCKET
    from shared.storage.objects import ObjectRef
    from shared.tools.registry import tool_specs
    from workflows.resume import BAD_REPLY, RESUMABLE_FAILURES, current_gate
    from workflows.retries import HEARTBEAT, durable
    from workflows.run_terms import current_terms

# A vendor call rarely takes more than a minute, but a CPU-bound local model under load
# writes 1-3 tokens a second, and a call may repair twice; the heartbeat catches dead
# workers long before this limit.
CHAT_START_TO_CLOSE = timedelta(minutes=30)
CHAT_HEARTBEAT = timedelta(seconds=30)
TOOL_START_TO_CLOSE = timedelta(minutes=2)
MAX_TOOL_ROUNDS = 5


async def chat(
    request: ChatRequest, *, summary: str | None = None, optional: bool = False
) -> ChatResponse:
    """One ``chat`` activity on the queue of the request's provider; in a resumable run, a
    failure only a settings change can fix waits for ``resume`` instead of failing, except
    an ``optional`` step's reply that stayed invalid, which fails for the caller to record."""
    label = summary or request.agent
    terms = current_terms()
    if terms is not None:
        request = request.model_copy(
            update={"spend": terms.spend(), "language": request.language or terms.language}
        )

    def attempt() -> Awaitable[ChatResponse]:
        return workflow.execute_activity(
            "chat",
            request,
            result_type=ChatResponse,
            task_queue=PROVIDERS[request.provider].task_queue,
            **durable(CHAT_START_TO_CLOSE, heartbeat=CHAT_HEARTBEAT),
            summary=label,
        )

    gate = current_gate()
    if gate is None:
        return await attempt()
    parks = RESUMABLE_FAILURES - {BAD_REPLY} if optional else RESUMABLE_FAILURES
    return await gate.guard(label, attempt, parks)


def missing_step(agent: str, error: ActivityError) -> MissingStep | None:
    """``agent`` as a missing step if ``error`` is its reply staying invalid after
    the repair turns; None for every other failure (which the caller re-raises)."""
    cause = error.cause
    if not isinstance(cause, ApplicationError) or cause.type != BAD_REPLY:
        return None
    if len(cause.details) != 3:
        # Not (schema, problem, raw reply key): a worker older than these details, whose
        # message still says it all.
        return MissingStep(step=agent, reason=cause.message)
    schema, problem, raw_reply_key = cause.details
    return MissingStep(
        step=agent,
        reason=f"its reply did not match {schema}: {problem}",
        raw_reply_key=raw_reply_key,
    )


TOOL_BATCHES_PATCH = "tool-batches"
"""A chat round's tool calls run as one ``run_tools`` activity; runs from before ran one
``run_tool`` activity per call."""


def _reason(error: ActivityError) -> str:
    cause = error.cause
    return cause.message if cause is not None and hasattr(cause, "message") else str(error)


async def run_tool(
    call: ToolCall, context: dict[str, Any], *, queue: str, agent: str, inline: bool = True
) -> ToolResult:
    """One tool call as its own activity (runs from before ``TOOL_BATCHES_PATCH``); a failure
    after all retries comes back as an error result."""
    try:
        return await workflow.execute_activity(
            run_tool_activity,
            ToolRequest(call=call, context=context, inline=inline),
            task_queue=queue,
            **durable(TOOL_START_TO_CLOSE, heartbeat=HEARTBEAT),
            summary=f"{agent}: {call.name}",
        )
    except ActivityError as error:
        return ToolResult.failed(call, _reason(error))


async def run_tools(batch: ToolBatch, *, queue: str, agent: str) -> list[ToolResult]:
    """A round's tool calls as one ``run_tools`` activity, answers in the calls' order. When
    its retries run out, the calls it had answered keep their answers (the failure's
    details) and the others come back as error results."""
    try:
        done = await workflow.execute_activity(
            run_tools_activity,
            batch,
            task_queue=queue,
            **durable(TOOL_START_TO_CLOSE, heartbeat=HEARTBEAT),
            summary=f"{agent}: {', '.join(call.name for call in batch.calls)}",
        )
        return done.results
    except ActivityError as error:
        cause = error.cause
        details = cause.details if isinstance(cause, ApplicationError) else ()
        # (answers so far, reason by call id) from ``run_tools``; none from a timeout.
        kept, reasons = (details[0], details[1]) if len(details) == 2 else ([], {})
        answered = {found.call_id: found for found in map(ToolResult.model_validate, kept)}
        return [
            answered.get(call.id) or ToolResult.failed(call, reasons.get(call.id, _reason(error)))
            for call in batch.calls
        ]


async def answer_tool_calls(
    calls: list[ToolCall], context: dict[str, Any], *, queue: str, agent: str, inline: bool = True
) -> list[ToolResult]:
    """Every call of a round, in parallel, answered in order; ``inline``: the caller reads
    the answers' content (see ``ToolRequest.inline``)."""
    if not calls:
        return []
    if workflow.patched(TOOL_BATCHES_PATCH):
        batch = ToolBatch(calls=calls, context=context, inline=inline)
        return await run_tools(batch, queue=queue, agent=agent)
    return list(
        await asyncio.gather(
            *(run_tool(call, context, queue=queue, agent=agent, inline=inline) for call in calls)
        )
    )


class ToolLoopResult(BaseModel):
    """The outcome of one agent's tool loop."""

    text: str = Field(description="the final report (the last non-empty text if the end was empty)")
    response: ChatResponse
    messages: list[ChatMessage]
    tool_results: list[ToolResult]
    rounds: int
    usage: Usage


async def run_tool_loop(
    request: ChatRequest,
    *,
    tools_queue: str,
    tool_context: dict[str, Any] | None = None,
    max_rounds: int = MAX_TOOL_ROUNDS,
    usage: UsageReport | None = None,
    optional: bool = False,
    read_results: bool = True,
) -> ToolLoopResult:
    """Chat, run tools, repeat; returns the final answer and the whole conversation.
    ``optional``: see ``chat``; ``read_results``: the caller reads the tool results' content
    (else a stored answer comes back as its claim alone)."""
    messages = list(request.messages)
    results: list[ToolResult] = []
    total = Usage()
    last_text = ""
    rounds = 0
    while True:
        rounds += 1
        offer_tools = rounds <= max_rounds
        turn = request.model_copy(
            update={"messages": messages, "tools": request.tools if offer_tools else []}
        )
        response = await chat(turn, summary=f"{request.agent} round {rounds}", optional=optional)
        total = total + response.usage
        if usage is not None:
            usage.add(request.agent, response.usage)
        last_text = response.text.strip() or last_text
        if not response.tool_calls or not offer_tools:
            break
        messages.append(
            ChatMessage(role="assistant", content=response.text, tool_calls=response.tool_calls)
        )
        answered = await answer_tool_calls(
            response.tool_calls,
            tool_context or {},
            queue=tools_queue,
            agent=request.agent,
            inline=read_results,
        )
        results += answered
        messages += [r.message() for r in answered]
    return ToolLoopResult(
        text=response.text.strip() or last_text,
        response=response,
        messages=messages,
        tool_results=results,
        rounds=rounds,
        usage=total,
    )


@dataclass(frozen=True)
class ToolUse:
    """How an agent's tool loop runs: the queue, the values the workflow fixes for every
    call (symbol, as_of, where long results go), and the arguments hidden from the model."""

    queue: str
    context: dict[str, Any]
    hidden: tuple[str, ...] = ()
    prefetched: list[ChatMessage] = field(default_factory=list)
    """Tool turns the workflow ran before the first chat, appended after the prompt."""
    read_results: bool = True
    """The workflow reads the tool results' content; False lets a large one come back as its
    claim alone, so it is written into the history once, by the store, not at all."""


def agent_request(
    spec: AgentSpec[InputsT, OutputT],
    inputs: InputsT,
    llm: LlmChoice,
    raw_key: str,
    *,
    tools: ToolUse | None = None,
    role: LlmRole | None = None,
) -> ChatRequest:
    """The one way an agent's chat request is built: the spec's prompt over ``inputs``, its
    model role, schema and tools, and the inputs themselves (what the offline rule reads).

    A prompt the inputs cannot make (a debate turn of the wrong debate, a manager missing
    its plan) fails the run at once, naming the field; a reply that will not validate is
    kept at ``raw_key`` in the payloads bucket (a retry overwrites it). ``role`` overrides
    the spec's model role (a chart agent reads its chart as text with the quick model).
    """
    with as_temporal_failures():
        messages = spec.messages(inputs)
    role = role or spec.llm_role
    return ChatRequest(
        agent=spec.name,
        role=role,
        provider=llm.provider,
        model=llm.model_for(role),
        messages=[*messages, *(tools.prefetched if tools else [])],
        tools=tool_specs(spec.tools, fixed=tools.hidden) if tools and spec.tools else [],
        response_schema=spec.schema_name,
        inputs=inputs.model_dump(mode="json"),
        raw_reply_key=ObjectRef(bucket=PAYLOADS_BUCKET, key=raw_key),
        sample=llm.sample,
    )


def agent_output(
    spec: AgentSpec[Any, OutputT],
    structured: Mapping[str, Any] | None,
    fixed: Mapping[str, Any] | None = None,
    step: str | None = None,
) -> OutputT:
    """The reply as the spec's output model, with the fields the workflow decides (``fixed``:
    who spoke, which round) over the model's; a reply that still does not fit fails the
    run non-retryably (the chat activity already validated it, so this is a contract bug)."""
    try:
        return spec.schema.model_validate({**(structured or {}), **(fixed or {})})
    except ValidationError as error:
        raise ApplicationError(
            f"{step or spec.name} gave no valid {spec.schema_name}: {error}",
            type="InvalidReply",
            non_retryable=True,
        ) from None


async def call_agent(
    spec: AgentSpec[InputsT, OutputT],
    inputs: InputsT,
    *,
    llm: LlmChoice,
    raw_key: str,
    usage: UsageReport,
    summary: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    role: LlmRole | None = None,
) -> OutputT:
    """One turn of ``spec``'s agent over ``inputs``: its typed answer, its usage counted.
    In a resumable run a failure only a settings change can fix parks (see ``chat``)."""
    request = agent_request(spec, inputs, llm, raw_key, role=role)
    response = await chat(request, summary=summary)
    usage.add(spec.name, response.usage)
    return agent_output(spec, response.structured, fixed, summary)


@dataclass(frozen=True)
class AgentRun(Generic[OutputT]):
    """An agent's tool loop: its answer, or (None) the ``problem`` that left it without one."""

    output: OutputT | None
    loop: ToolLoopResult
    problem: str | None = None


async def call_agent_tools(
    spec: AgentSpec[InputsT, OutputT],
    inputs: InputsT,
    *,
    llm: LlmChoice,
    raw_key: str,
    usage: UsageReport,
    tools: ToolUse,
    fixed: Mapping[str, Any] | None = None,
    optional: bool = False,
) -> AgentRun[OutputT]:
    """``spec``'s agent with its tools: chat, run tools, repeat (``run_tool_loop``). An
    answer that is no valid output (or none at all) comes back as None, with why (an agent
    that answers in prose has only ``loop.text``); ``optional``: see ``chat``, and
    ``call_agent_tools_or_missing`` for an agent the run can do without."""
    request = agent_request(spec, inputs, llm, raw_key, tools=tools)
    loop = await run_tool_loop(
        request,
        tools_queue=tools.queue,
        tool_context=tools.context,
        usage=usage,
        optional=optional,
        read_results=tools.read_results,
    )
    structured = loop.response.structured
    if spec.output is None:
        return AgentRun(None, loop)  # a prose answer: ``loop.text``
    if structured is None:
        reason = "it was still asking for tools when its rounds ran out, with no report"
        return AgentRun(None, loop, reason)
    try:
        return AgentRun(spec.schema.model_validate({**structured, **(fixed or {})}), loop)
    except ValidationError as error:
        return AgentRun(None, loop, f"its answer was no valid {spec.schema_name}: {error}")


async def call_agent_tools_or_missing(
    spec: AgentSpec[InputsT, OutputT], inputs: InputsT, **options: Any
) -> AgentRun[OutputT] | MissingStep:
    """``call_agent_tools`` for an agent the run can do without: its run, or the
    ``MissingStep`` the run records when its reply stayed invalid (every other failure
    propagates)."""
    try:
        return await call_agent_tools(spec, inputs, optional=True, **options)
    except ActivityError as error:
        missing = missing_step(spec.name, error)
        if missing is None:
            raise
        return missing
