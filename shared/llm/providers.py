"""The provider registry: one row per LLM vendor.

Adding a provider is one row here. A row says which client speaks to it, which
environment variables hold its key and base URL, which task queue its calls go
to (so its workers and rate limits scale on their own), what it can do, and the
default models per role. Pure data: workflows import it to route calls.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.errors import lookup


class ClientKind(StrEnum):
    """Which wire protocol (and SDK) a provider speaks."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    OPENAI_COMPATIBLE = "openai-compatible"
    OFFLINE = "offline"


class LlmRole(StrEnum):
    """Which model of a provider a step wants: fast, careful, or able to see charts."""

    QUICK = "quick"
    DEEP = "deep"
    VISION = "vision"


class StructuredOutput(StrEnum):
    """How a provider is asked for a reply that fits a schema, most reliable first.

    Whatever the mechanism, the schema is also in the prompt and the worker
    validates every reply against the pydantic model: a mechanism only makes a
    valid reply likelier, it is never trusted.
    """

    JSON_SCHEMA = "json_schema"  # response_format json_schema, strict where the schema allows
    # json_schema sent whole to a server that compiles it to a grammar (llama.cpp): every
    # keyword it enforces kept, free strings and lists capped so a looping model closes
    # its JSON within its reply (shared/llm/grammar_schema.py)
    GRAMMAR = "grammar"
    TOOL = "tool"  # Anthropic: the schema is a tool the model is made to call
    JSON_OBJECT = "json_object"  # response_format json_object: syntactically valid JSON only
    PROMPT = "prompt"  # nothing on the wire: the schema in the prompt is all


_CHAT_COMPLETIONS_MECHANISMS = frozenset(
    {StructuredOutput.JSON_SCHEMA, StructuredOutput.JSON_OBJECT, StructuredOutput.PROMPT}
)
SCHEMA_ON_THE_WIRE = frozenset({StructuredOutput.JSON_SCHEMA, StructuredOutput.GRAMMAR})
"""The mechanisms that make the server decode only replies of a given schema."""
# Which mechanisms each wire format can carry.
_STRUCTURED_BY_CLIENT: dict[ClientKind, frozenset[StructuredOutput]] = {
    ClientKind.OPENAI: _CHAT_COMPLETIONS_MECHANISMS,
    ClientKind.OPENAI_COMPATIBLE: _CHAT_COMPLETIONS_MECHANISMS | {StructuredOutput.GRAMMAR},
    ClientKind.ANTHROPIC: frozenset({StructuredOutput.TOOL, StructuredOutput.PROMPT}),
    ClientKind.OFFLINE: frozenset({StructuredOutput.PROMPT}),
}


class ToolCalling(StrEnum):
    """How tools reach the model and how its calls come back.

    Small local models often answer a tool call as JSON text in ``content`` with
    ``tool_calls`` empty, and some chat templates have no tools at all; a row says
    which of the three a server needs (``shared.llm.text_tools`` does the text side).
    """

    NATIVE = "native"  # tools on the wire; calls read from ``tool_calls`` only
    NATIVE_OR_TEXT = "native_or_text"  # on the wire; a call written as text is recovered too
    TEXT = "text"  # described in the prompt, never on the wire; calls read from the text


class Capabilities(BaseModel):
    """What the provider's chat endpoint accepts."""

    model_config = ConfigDict(frozen=True)

    vision: bool = True
    structured_output: StructuredOutput = Field(
        StructuredOutput.PROMPT,
        description="how replies that fit a schema are asked for; prompt-only is the safe "
        "default for a server whose support is unknown",
    )
    tool_calls: ToolCalling = ToolCalling.NATIVE
    context_tokens: int | None = Field(
        None,
        ge=512,
        description="the model's context window when it is small enough to plan for (local "
        "models); prompts are trimmed to fit it. None: large, never trimmed",
    )


class ProviderSpec(BaseModel):
    """One row of the registry."""

    model_config = ConfigDict(frozen=True)

    name: str
    client: ClientKind
    task_queue: str = Field(description="Temporal task queue whose workers serve this provider")
    key_env: str | None = Field(None, description="standard variable holding the API key")
    base_url_env: str | None = Field(None, description="standard variable overriding the URL")
    default_base_url: str | None = None
    key_required: bool = True
    capabilities: Capabilities = Capabilities()
    embedded: bool = Field(
        False,
        description="served by the `local-llm` component of `quantdesk up` unless a URL is set",
    )
    quick_model: str
    deep_model: str
    vision_model: str | None

    @model_validator(mode="after")
    def _structured_output_fits_the_wire(self) -> ProviderSpec:
        """A row asking for a mechanism its wire format cannot carry is a mistake in the table."""
        allowed = _STRUCTURED_BY_CLIENT[self.client]
        if self.capabilities.structured_output not in allowed:
            raise ValueError(
                f"provider {self.name!r}: structured_output "
                f"{self.capabilities.structured_output.value!r} is not spoken by the "
                f"{self.client.value} client (it takes {', '.join(sorted(allowed))})"
            )
        return self


QUEUE_OPENAI = "llm-openai"
QUEUE_ANTHROPIC = "llm-anthropic"
QUEUE_COMPATIBLE = "llm-openai-compatible"
QUEUE_OFFLINE = "llm-offline"
LLM_QUEUES = (QUEUE_OPENAI, QUEUE_ANTHROPIC, QUEUE_COMPATIBLE, QUEUE_OFFLINE)

OFFLINE_MODEL = "offline-analyst"
LOCAL_MODEL = "local"
"""The model name sent to the embedded llama.cpp server, which serves the one GGUF it loaded."""

# Self-hosted servers enforce JSON schemas as grammars; tool calls work when the
# model's template has them, and small models often write them as text instead.
_LOCAL_SERVER = Capabilities(
    structured_output=StructuredOutput.JSON_SCHEMA, tool_calls=ToolCalling.NATIVE_OR_TEXT
)

PROVIDERS: dict[str, ProviderSpec] = {
    row.name: row
    for row in (
        ProviderSpec(
            name="openai",
            client=ClientKind.OPENAI,
            task_queue=QUEUE_OPENAI,
            key_env="OPENAI_API_KEY",
            base_url_env="OPENAI_BASE_URL",
            capabilities=Capabilities(structured_output=StructuredOutput.JSON_SCHEMA),
            quick_model="gpt-4.1-mini",
            deep_model="gpt-4.1",
            vision_model="gpt-4.1",
        ),
        ProviderSpec(
            name="anthropic",
            client=ClientKind.ANTHROPIC,
            task_queue=QUEUE_ANTHROPIC,
            key_env="ANTHROPIC_API_KEY",
            base_url_env="ANTHROPIC_BASE_URL",
            capabilities=Capabilities(structured_output=StructuredOutput.TOOL),
            quick_model="claude-haiku-4-5",
            deep_model="claude-sonnet-4-5",
            vision_model="claude-sonnet-4-5",
        ),
        ProviderSpec(
            name="qwen",
            client=ClientKind.OPENAI_COMPATIBLE,
            task_queue=QUEUE_COMPATIBLE,
            key_env="DASHSCOPE_API_KEY",
            base_url_env="DASHSCOPE_BASE_URL",
            default_base_url="https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            capabilities=Capabilities(structured_output=StructuredOutput.JSON_OBJECT),
            quick_model="qwen-plus",
            deep_model="qwen-max",
            vision_model="qwen-vl-max",
        ),
        ProviderSpec(
            name="ollama",
            client=ClientKind.OPENAI_COMPATIBLE,
            task_queue=QUEUE_COMPATIBLE,
            key_env=None,
            base_url_env="OLLAMA_BASE_URL",
            key_required=False,
            default_base_url="http://127.0.0.1:11434/v1",
            capabilities=_LOCAL_SERVER,
            quick_model="llama3.1",
            deep_model="llama3.1",
            vision_model="llava",
        ),
        ProviderSpec(
            name="vllm",
            client=ClientKind.OPENAI_COMPATIBLE,
            task_queue=QUEUE_COMPATIBLE,
            key_env="VLLM_API_KEY",
            base_url_env="VLLM_BASE_URL",
            key_required=False,
            default_base_url="http://127.0.0.1:8000/v1",
            capabilities=_LOCAL_SERVER,
            quick_model="Qwen/Qwen2.5-7B-Instruct",
            deep_model="Qwen/Qwen2.5-7B-Instruct",
            vision_model="Qwen/Qwen2.5-VL-7B-Instruct",
        ),
        ProviderSpec(
            name="lmstudio",
            client=ClientKind.OPENAI_COMPATIBLE,
            task_queue=QUEUE_COMPATIBLE,
            key_env=None,
            base_url_env="LMSTUDIO_BASE_URL",
            key_required=False,
            default_base_url="http://127.0.0.1:1234/v1",
            capabilities=_LOCAL_SERVER,
            quick_model="qwen2.5-7b-instruct",
            deep_model="qwen2.5-7b-instruct",
            vision_model="qwen2.5-vl-7b-instruct",
        ),
        ProviderSpec(
            # llama.cpp's own server: the embedded `local-llm` component, or any
            # llama-server at LLAMACPP_BASE_URL. No vision (QuantAgent reads its charts
            # as text), tools described in the prompt (many GGUF templates have none).
            name="llamacpp",
            client=ClientKind.OPENAI_COMPATIBLE,
            task_queue=QUEUE_COMPATIBLE,
            key_env=None,
            base_url_env="LLAMACPP_BASE_URL",
            key_required=False,
            embedded=True,
            capabilities=Capabilities(
                vision=False,
                structured_output=StructuredOutput.GRAMMAR,
                tool_calls=ToolCalling.TEXT,
                context_tokens=4096,
            ),
            quick_model=LOCAL_MODEL,
            deep_model=LOCAL_MODEL,
            vision_model=LOCAL_MODEL,
        ),
        ProviderSpec(
            name="deepseek",
            client=ClientKind.OPENAI_COMPATIBLE,
            task_queue=QUEUE_COMPATIBLE,
            key_env="DEEPSEEK_API_KEY",
            base_url_env="DEEPSEEK_BASE_URL",
            default_base_url="https://api.deepseek.com/v1",
            capabilities=Capabilities(vision=False, structured_output=StructuredOutput.JSON_OBJECT),
            quick_model="deepseek-chat",
            deep_model="deepseek-reasoner",
            vision_model=None,
        ),
        ProviderSpec(
            name="openrouter",
            client=ClientKind.OPENAI_COMPATIBLE,
            task_queue=QUEUE_COMPATIBLE,
            key_env="OPENROUTER_API_KEY",
            base_url_env="OPENROUTER_BASE_URL",
            default_base_url="https://openrouter.ai/api/v1",
            capabilities=Capabilities(structured_output=StructuredOutput.JSON_SCHEMA),
            quick_model="openai/gpt-4.1-mini",
            deep_model="openai/gpt-4.1",
            vision_model="openai/gpt-4.1",
        ),
        ProviderSpec(
            name="offline",
            client=ClientKind.OFFLINE,
            task_queue=QUEUE_OFFLINE,
            key_required=False,
            quick_model=OFFLINE_MODEL,
            deep_model=OFFLINE_MODEL,
            vision_model=OFFLINE_MODEL,
        ),
    )
}


def provider_spec(name: str, *, field: str = "llm.provider") -> ProviderSpec:
    """The registry row for ``name``, or an error listing the known providers."""
    return lookup(PROVIDERS, name, field=field, what="provider")


def providers_on_queue(queue: str) -> list[ProviderSpec]:
    """The providers whose calls a worker on ``queue`` serves."""
    return [row for row in PROVIDERS.values() if row.task_queue == queue]
