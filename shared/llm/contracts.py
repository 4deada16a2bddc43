"""Typed contracts of the generic ``chat`` activity and of tool calls.

A ``ChatRequest`` is provider-neutral: each client translates it into its
vendor's wire format. Images travel as object-store references, never as bytes,
so a request stays small in Temporal's history; the activity fetches them. So do
large tool answers: a message or a tool result whose ``stored`` claim is set carries its
text in S3 (``shared.storage.claim_check``), and the chat activity redeems it before
anything reads ``content``. Requests recorded before claims existed have none and read
as they always did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from shared.llm.providers import LlmRole
from shared.storage.claim_check import Claim
from shared.storage.objects import ObjectRef

# The key under which a client keeps tool arguments that are not a JSON object, whole.
UNPARSED_ARGUMENTS = "_raw"


class ToolCall(BaseModel):
    """One function call the model asked for."""

    id: str = Field(description="the vendor's call id; tool results answer it")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @property
    def unparsed_arguments(self) -> str | None:
        """The arguments as the model wrote them, when they were not a JSON object.

        Clients keep such a call (``{UNPARSED_ARGUMENTS: text}``) instead of failing the
        reply, so the tool can answer with an error quoting them that the model fixes.
        """
        raw = self.arguments.get(UNPARSED_ARGUMENTS)
        return raw if isinstance(raw, str) and len(self.arguments) == 1 else None


class ChatMessage(BaseModel):
    """One turn of a conversation."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    images: list[ObjectRef] = Field(default_factory=list, description="charts to show the model")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="assistant turns only")
    tool_call_id: str | None = Field(None, description="tool turns: the call this answers")
    name: str | None = Field(None, description="tool turns: the tool's name")
    stored: Claim | None = Field(
        None, description="where ``content`` is kept when it was too large to travel inline"
    )

    def redeemed(self, redeem: Callable[[Claim], str]) -> ChatMessage:
        """This message with its stored content read back (itself when it has none)."""
        if self.stored is None:
            return self
        return self.model_copy(update={"content": redeem(self.stored), "stored": None})


class ToolSpec(BaseModel):
    """A tool offered to the model: name, purpose and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(description="JSON schema of the arguments object")


class Usage(BaseModel):
    """Calls and tokens, summed per agent and per workflow, with the help a model needed:
    what a run spent and how hard its model was to work with are read off the same sums."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = Field(0.0, ge=0, description="at the worker's price table")
    unpriced_calls: int = Field(0, ge=0, description="calls to a model with no price")
    repairs: int = Field(0, ge=0, description="repair calls after replies that missed the schema")
    recovered_tool_calls: int = Field(
        0, ge=0, description="tool calls read from the reply's text, not its tool_calls"
    )
    trimmed_prompts: int = Field(
        0, ge=0, description="calls whose prompt was cut to fit the model's context window"
    )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields}
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class SpendScope(BaseModel):
    """What a model call counts against: its tree's root run and book, and the run's limits
    as started (a raise is kept in the spending ledger, ``shared.spending``)."""

    run: str = Field(description="the root run's workflow id")
    book: str | None = Field(None, description="the book whose daily limit counts the call")
    run_usd: float | None = Field(None, gt=0)
    run_tokens: int | None = Field(None, ge=1)


class ChatRequest(BaseModel):
    """Everything one LLM call needs, with no secrets: keys live on the worker."""

    agent: str = Field(description="which agent speaks, e.g. indicator_agent; labels the UI")
    role: LlmRole = LlmRole.QUICK
    provider: str = "offline"
    model: str | None = Field(None, description="None: the worker's model for this role")
    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)
    response_schema: str | None = Field(None, description="name in shared.agents.schemas")
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1, le=200_000)
    sample: int = Field(
        0, ge=0, description="the run's repeat number (LlmChoice.sample): part of the cache key"
    )
    inputs: dict[str, Any] = Field(
        default_factory=dict,
        # Requests recorded before the rename carry it as ``context``.
        validation_alias=AliasChoices("inputs", "context"),
        description="the agent's inputs model, serialized once: the prompt was built from it, "
        "and the offline engine validates it back into the agent's inputs type",
    )
    raw_reply_key: ObjectRef | None = Field(
        None, description="where to keep an unusable reply for inspection (chosen by the workflow)"
    )
    spend: SpendScope | None = Field(
        None, description="the run's spending limits; None: counted nowhere (a direct call)"
    )
    language: str | None = Field(
        None, description="the language of prose for people; None: the worker's setting"
    )

    def redeemed(self, redeem: Callable[[Claim], str]) -> ChatRequest:
        """This request with every stored message read back: what a provider is sent."""
        return self.model_copy(
            update={"messages": [message.redeemed(redeem) for message in self.messages]}
        )


class ChatResponse(BaseModel):
    """What a model answered, normalised across vendors."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    structured: dict[str, Any] | None = Field(None, description="validated against the schema")
    usage: Usage = Usage()
    provider: str
    model: str
    latency_ms: float = 0.0
    finish_reason: str | None = None


class ToolRequest(BaseModel):
    """One tool call to execute on the ``tools`` queue."""

    call: ToolCall
    context: dict[str, Any] = Field(
        default_factory=dict, description="values the workflow fixes, e.g. symbol, as_of"
    )
    inline: bool = Field(
        True,
        description="the workflow reads the answer's content: keep it in the result even when "
        "it is stored; False leaves only the claim",
    )


class ToolBatch(BaseModel):
    """The tool calls one chat round asked for, run by one ``run_tools`` activity: one
    activity task instead of one per call, each call still answered on its own."""

    calls: list[ToolCall] = Field(min_length=1)
    context: dict[str, Any] = Field(
        default_factory=dict, description="values the workflow fixes, e.g. symbol, as_of"
    )
    inline: bool = Field(True, description="as ``ToolRequest.inline``, for every call")

    def requests(self) -> list[ToolRequest]:
        """Each call as the request ``run_tool`` answers."""
        return [
            ToolRequest(call=call, context=self.context, inline=self.inline) for call in self.calls
        ]


class ToolResult(BaseModel):
    """A tool's answer, as the text the model reads back."""

    call_id: str
    name: str
    content: str
    ok: bool = True
    vendor: str | None = Field(None, description="the data vendor(s) that answered, e.g. sim")
    passed_over: list[str] = Field(
        default_factory=list,
        description="vendors not asked because they answer only about now, each with why",
    )
    full_result: ObjectRef | None = Field(
        None, description="where the whole answer is stored when content is only a preview"
    )
    stored: Claim | None = Field(
        None,
        description="the claim on ``content`` when it was too large to send on inline; the "
        "tool message the model reads carries this instead of the text",
    )

    @classmethod
    def failed(cls, call: ToolCall, reason: str) -> ToolResult:
        """The answer to a call that failed for good: the reason, for the model to read."""
        return cls(
            call_id=call.id,
            name=call.name,
            ok=False,
            content=f"error: tool {call.name} failed: {reason}",
        )

    def message(self) -> ChatMessage:
        """The tool turn that answers the call: by claim when the content is stored."""
        return ChatMessage(
            role="tool",
            content="" if self.stored else self.content,
            stored=self.stored,
            tool_call_id=self.call_id,
            name=self.name,
        )


class ToolBatchResult(BaseModel):
    """A ``ToolBatch``'s answers, in the order of its calls."""

    results: list[ToolResult]


class UsageReport(BaseModel):
    """Usage of one workflow run: the total and each agent's share."""

    total: Usage = Usage()
    by_agent: dict[str, Usage] = Field(default_factory=dict)

    def add(self, agent: str, usage: Usage) -> None:
        """Count ``usage`` for ``agent`` and in the total."""
        self.by_agent[agent] = self.by_agent.get(agent, Usage()) + usage
        self.total = self.total + usage


class LlmChoice(BaseModel):
    """Which provider and models a flow uses; unset models mean the worker's defaults."""

    provider: str = Field("offline", description="a row of shared.llm.providers.PROVIDERS")
    model: str | None = Field(None, description="quick-role model (analysts, tool loops)")
    deep_model: str | None = Field(None, description="deep-role model (managers)")
    vision_model: str | None = Field(None, description="vision-role model (chart readers)")
    sample: int = Field(
        0,
        ge=0,
        description="which repeat of the same analysis this is (evaluations' --repeats): "
        "0 for the first; a repeat's calls miss the reply-cache entries of the others",
    )

    def model_for(self, role: LlmRole) -> str | None:
        """The model chosen for ``role``, or None for the worker's default."""
        return {
            LlmRole.QUICK: self.model,
            LlmRole.DEEP: self.deep_model,
            LlmRole.VISION: self.vision_model,
        }[role]
