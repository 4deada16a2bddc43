"""A small workflow and tool used only by the tests of the LLM layer.

It runs one analyst's tool loop with the generic ``AnalystNote`` schema, so the
tests exercise routing, the tool activity, retries and usage accounting on a real
Temporal server without depending on any product flow.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from shared.agents.schemas import AnalystNote
    from shared.llm.contracts import (
        ChatMessage,
        ChatRequest,
        LlmChoice,
        ToolBatch,
        ToolResult,
        UsageReport,
    )
    from shared.tools.registry import tool_specs
    from tests.probe_tools import TEST_TOOLS_QUEUE
    from workflows.inputs import RunInput
    from workflows.llm_calls import run_tool_loop, run_tools
    from workflows.provider_check import check_provider
    from workflows.resume import Resumable


class ProbeInput(RunInput):
    """Input of the probe workflow."""

    symbol: str = Field(min_length=1)
    closes: list[float] = Field(min_length=2)
    llm: LlmChoice = LlmChoice()


class ProbeResult(BaseModel):
    """What the probe returns."""

    note: AnalystNote
    text: str
    rounds: int
    tool_contents: list[str]
    usage: UsageReport


@workflow.defn(name="ToolLoopProbe")
class ToolLoopProbe(Resumable):
    """One analyst with one tool, through the real chat and tool activities."""

    def __init__(self) -> None:
        self.usage = UsageReport()

    @workflow.query(name="usage")
    def current_usage(self) -> UsageReport:
        """Usage so far."""
        return self.usage

    @workflow.query(name="waiting")
    def waiting(self) -> dict[str, str]:
        """The calls waiting for ``resume``."""
        return self.waiting_steps()

    @workflow.run
    async def run(self, args: ProbeInput) -> ProbeResult:
        """Run the tool loop (a bad input failed the run already, see ``workflows.inputs``)."""
        self.open_gate()
        check_provider(args.llm)
        request = ChatRequest(
            agent="probe_analyst",
            provider=args.llm.provider,
            model=args.llm.model,
            messages=[
                ChatMessage(role="system", content="You are a market analyst."),
                ChatMessage(role="user", content=f"Assess {args.symbol}. Use the tool."),
            ],
            tools=tool_specs(["get_price_history"], fixed=["closes"]),
            response_schema="AnalystNote",
            inputs={"symbol": args.symbol},
        )
        loop = await run_tool_loop(
            request,
            tools_queue=TEST_TOOLS_QUEUE,
            tool_context={"closes": args.closes},
            usage=self.usage,
        )
        assert loop.response.structured is not None
        return ProbeResult(
            note=AnalystNote.model_validate(loop.response.structured),
            text=loop.text,
            rounds=loop.rounds,
            tool_contents=[r.content for r in loop.tool_results],
            usage=self.usage,
        )


@workflow.defn(name="ToolBatchProbe")
class ToolBatchProbe:
    """One round's tool calls as one ``run_tools`` activity: the answers, as the loop gets them."""

    @workflow.run
    async def run(self, batch: ToolBatch) -> list[ToolResult]:
        """Run the batch on the test tools queue."""
        return await run_tools(batch, queue=TEST_TOOLS_QUEUE, agent="probe")
