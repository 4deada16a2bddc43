"""The provider registry: one row per LLM vendor.

Adding a provider is one row here. A row says which client speaks to it, which
environment variables hold its key and base URL, which task queue its calls go
to (so its workers and rate limits scale on their own), what it can do, how a
worker serves it, the default models per role and their prices. Everything else
is derived from the rows: the settings block ``QUANTDESK_<NAME>__*``
(``shared.config``), the workers on its queue, the wire dialect. Pure data:
workflows import it to route calls.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.errors import lookup
from shared.llm.pricing import ModelPrice


class ClientKind(StrEnum):
    """Which wire protocol (and SDK) a provider speaks."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    OPENAI_COMPATIBLE = "openai-compatible"
    LANGCHAIN = "langchain"  # any LangChain chat model, named by the provider's settings
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
    # a LangChain chat model's own ``with_structured_output`` (its native mechanism, whatever
    # that is for the integration); the prompt alone where the class has none
    INTEGRATION = "integration"


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
    ClientKind.LANGCHAIN: frozenset({StructuredOutput.INTEGRATION, StructuredOutput.PROMPT}),
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
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens",
        description="the chat-completions parameter that caps the reply (OpenAI's reasoning "
        "models refuse max_tokens; most compatible servers know only max_tokens)",
    )


class Serving(BaseModel):
    """How a worker serves one provider's calls. Each field is also a setting
    (``QUANTDESK_<PROVIDER>__<FIELD>``) whose default is the row's value."""

    model_config = ConfigDict(frozen=True)

    max_concurrent: int = Field(8, ge=1, le=1024, description="activities at once per worker")
    requests_per_second: float = Field(
        5.0, gt=0, le=10_000, description="calls per second for the whole task queue"
    )
    timeout_seconds: float = Field(120.0, gt=0, le=3600, description="one HTTP call")
    reply_tokens: int = Field(
        1024,
        ge=16,
        le=200_000,
        description="tokens kept free for the reply when a context window is planned for; "
        "also the reply's cap there, so a small model cannot ramble until the window is full",
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
    serving: Serving = Serving()
    embedded: bool = Field(
        False,
        description="served by the `local-llm` component of `quantdesk up` unless a URL is set",
    )
    quick_model: str | None = Field(
        description="None: no default; the provider's settings name it (langchain rows)"
    )
    deep_model: str | None
    vision_model: str | None
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="list prices of the models this provider serves; a model without one "
        "is counted as unpriced",
    )
    catalog: str | None = Field(
        None,
        description="the provider's id in models.dev, whose `knowledge` field gives its "
        "models' training cutoffs (shared.llm.knowledge)",
    )
    knowledge_cutoffs: dict[str, str] = Field(
        default_factory=dict,
        description="training cutoffs (YYYY-MM or YYYY-MM-DD) of models the catalog lacks, "
        "over the catalog's",
    )

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

    @model_validator(mode="after")
    def _a_needed_key_has_a_variable(self) -> ProviderSpec:
        """A missing key is refused naming the variable to set, so a row needing one names it."""
        if self.key_required and not self.key_env:
            raise ValueError(f"provider {self.name!r} requires a key but names no key_env")
        return self


QUEUE_OPENAI = "llm-openai"
QUEUE_ANTHROPIC = "llm-anthropic"
QUEUE_COMPATIBLE = "llm-openai-compatible"
QUEUE_LANGCHAIN = "llm-langchain"
QUEUE_OFFLINE = "llm-offline"
_QUEUE_OF_CLIENT = {
    ClientKind.OPENAI: QUEUE_OPENAI,
    ClientKind.ANTHROPIC: QUEUE_ANTHROPIC,
    ClientKind.OPENAI_COMPATIBLE: QUEUE_COMPATIBLE,
    ClientKind.LANGCHAIN: QUEUE_LANGCHAIN,
    ClientKind.OFFLINE: QUEUE_OFFLINE,
}

OFFLINE_MODEL = "offline-analyst"
LOCAL_MODEL = "local"
"""The model name sent to the embedded llama.cpp server, which serves the one GGUF it loaded."""

Models = tuple[str | None, str | None, str | None]
"""A row's default (quick, deep, vision) models; vision None: no model reads images; all None:
the provider's settings name them (a langchain row, whose class is the user's choice)."""
KeyUse = Literal["required", "optional", "none"]
"""Whether calls need a key (``{env}_API_KEY``), may carry one, or have no key variable."""
# What a row that says nothing gets: prompt-only structured output, the safe guess for a
# server whose support is unknown, and the generic serving limits.
_UNKNOWN_SERVER = Capabilities()
_DEFAULT_SERVING = Serving()


def row(
    name: str,
    models: Models,
    *,
    client: ClientKind = ClientKind.OPENAI_COMPATIBLE,
    env: str | None = None,
    key: KeyUse = "required",
    url: str | None = None,
    capabilities: Capabilities = _UNKNOWN_SERVER,
    serving: Serving = _DEFAULT_SERVING,
    prices: dict[str, tuple[float, float]] | None = None,
    embedded: bool = False,
    catalog: str | None = None,
    cutoffs: dict[str, str] | None = None,
) -> ProviderSpec:
    """One registry row, the conventions every row shares spelled once.

    Most providers speak OpenAI's chat completions, the default client. ``env`` is the
    vendor's variable prefix: ``{env}_BASE_URL`` overrides ``url``, and ``{env}_API_KEY``
    holds the key unless ``key`` is ``none``. The task queue is the client's. ``prices``
    are USD per million (input, output) tokens of each model the provider serves.
    ``catalog`` is the provider's models.dev id, ``cutoffs`` the training cutoffs of models
    the catalog does not list.
    """
    quick, deep, vision = models
    return ProviderSpec(
        name=name,
        client=client,
        task_queue=_QUEUE_OF_CLIENT[client],
        key_env=f"{env}_API_KEY" if env and key != "none" else None,
        base_url_env=f"{env}_BASE_URL" if env else None,
        default_base_url=url,
        key_required=key == "required",
        capabilities=capabilities,
        serving=serving,
        embedded=embedded,
        quick_model=quick,
        deep_model=deep,
        vision_model=vision,
        prices={
            model: ModelPrice(input=usd_in, output=usd_out)
            for model, (usd_in, usd_out) in (prices or {}).items()
        },
        catalog=catalog,
        knowledge_cutoffs=cutoffs or {},
    )


_JSON_SCHEMA = Capabilities(structured_output=StructuredOutput.JSON_SCHEMA)
_JSON_OBJECT = Capabilities(structured_output=StructuredOutput.JSON_OBJECT)
# Self-hosted servers enforce JSON schemas as grammars; tool calls work when the
# model's template has them, and small models often write them as text instead.
_LOCAL_SERVER = _JSON_SCHEMA.model_copy(update={"tool_calls": ToolCalling.NATIVE_OR_TEXT})
_TWO_SLOTS = Serving(max_concurrent=2)


def self_hosted(
    name: str,
    models: Models,
    *,
    port: int,
    key: KeyUse = "none",
    serving: Serving = _TWO_SLOTS,
    cutoffs: dict[str, str] | None = None,
) -> ProviderSpec:
    """A row for a model server of one's own (ollama, vLLM, LM Studio): on this machine at
    ``port`` unless ``{NAME}_BASE_URL`` says where, unpriced, two calls at once by default."""
    return row(
        name,
        models,
        env=name.upper(),
        key=key,
        url=f"http://127.0.0.1:{port}/v1",
        capabilities=_LOCAL_SERVER,
        serving=serving,
        cutoffs=cutoffs,
    )


PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        row(
            "openai",
            ("gpt-4.1-mini", "gpt-4.1", "gpt-4.1"),
            client=ClientKind.OPENAI,
            env="OPENAI",
            catalog="openai",
            capabilities=_JSON_SCHEMA.model_copy(
                update={"max_tokens_param": "max_completion_tokens"}
            ),
            prices={
                "gpt-4.1": (2.0, 8.0),
                "gpt-4.1-mini": (0.4, 1.6),
                "gpt-4o": (2.5, 10.0),
                "gpt-4o-mini": (0.15, 0.6),
                "o4-mini": (1.1, 4.4),
            },
        ),
        row(
            "anthropic",
            ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5"),
            client=ClientKind.ANTHROPIC,
            env="ANTHROPIC",
            catalog="anthropic",
            capabilities=Capabilities(structured_output=StructuredOutput.TOOL),
            prices={
                "claude-sonnet-4-5": (3.0, 15.0),
                "claude-haiku-4-5": (1.0, 5.0),
                "claude-opus-4-1": (15.0, 75.0),
            },
        ),
        row(
            "qwen",
            ("qwen-plus", "qwen-max", "qwen-vl-max"),
            env="DASHSCOPE",
            catalog="alibaba",
            url="https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            capabilities=_JSON_OBJECT,
        ),
        # Llama 3.1's cutoff as models.dev gives it for the hosts that serve it.
        self_hosted(
            "ollama", ("llama3.1", "llama3.1", "llava"), port=11434, cutoffs={"llama3.1": "2023-12"}
        ),
        self_hosted(
            "vllm",
            ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct"),
            port=8000,
            key="optional",
            serving=_DEFAULT_SERVING,
        ),
        self_hosted(
            "lmstudio",
            ("qwen2.5-7b-instruct", "qwen2.5-7b-instruct", "qwen2.5-vl-7b-instruct"),
            port=1234,
        ),
        # llama.cpp's own server: the embedded `local-llm` component, or any
        # llama-server at LLAMACPP_BASE_URL. No vision (QuantAgent reads its charts
        # as text), tools described in the prompt (many GGUF templates have none).
        # One slot: a second call would only queue behind it, and a CPU model under
        # load answers at 1-3 tokens a second.
        row(
            "llamacpp",
            (LOCAL_MODEL, LOCAL_MODEL, LOCAL_MODEL),
            env="LLAMACPP",
            key="none",
            embedded=True,
            capabilities=Capabilities(
                vision=False,
                structured_output=StructuredOutput.GRAMMAR,
                tool_calls=ToolCalling.TEXT,
                context_tokens=4096,
            ),
            serving=Serving(max_concurrent=1, timeout_seconds=900),
        ),
        row(
            "deepseek",
            ("deepseek-chat", "deepseek-reasoner", None),
            env="DEEPSEEK",
            catalog="deepseek",
            url="https://api.deepseek.com/v1",
            capabilities=_JSON_OBJECT.model_copy(update={"vision": False}),
            prices={"deepseek-chat": (0.27, 1.1), "deepseek-reasoner": (0.55, 2.19)},
        ),
        row(
            "openrouter",
            ("openai/gpt-4.1-mini", "openai/gpt-4.1", "openai/gpt-4.1"),
            env="OPENROUTER",
            catalog="openrouter",
            url="https://openrouter.ai/api/v1",
            capabilities=_JSON_SCHEMA,
            prices={"openai/gpt-4.1": (2.0, 8.0), "openai/gpt-4.1-mini": (0.4, 1.6)},
        ),
        # Google's OpenAI-compatible endpoint: images as data URLs, response_format
        # json_schema (strict), native tools, max_tokens.
        row(
            "gemini",
            ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash"),
            env="GEMINI",
            catalog="google",
            url="https://generativelanguage.googleapis.com/v1beta/openai/",
            capabilities=_JSON_SCHEMA,
            prices={"gemini-2.5-flash": (0.30, 2.50), "gemini-2.5-pro": (1.25, 10.0)},
        ),
        # Any LangChain chat model (Bedrock, Vertex, Groq, Mistral, an in-house wrapper): its
        # class and keyword arguments are settings (QUANTDESK_LANGCHAIN__CLASS, __KWARGS), and
        # so are its models; keys come from the class's own variables or __API_KEY.
        row(
            "langchain",
            (None, None, None),
            client=ClientKind.LANGCHAIN,
            key="none",
            capabilities=Capabilities(structured_output=StructuredOutput.INTEGRATION),
        ),
        row(
            "offline",
            (OFFLINE_MODEL, OFFLINE_MODEL, OFFLINE_MODEL),
            client=ClientKind.OFFLINE,
            key="none",
            serving=Serving(max_concurrent=16, requests_per_second=1000),
            prices={OFFLINE_MODEL: (0, 0)},
            # A rule, not a trained model: it remembers no period (shared.llm.knowledge).
            cutoffs={OFFLINE_MODEL: "never"},
        ),
    )
}


def list_prices() -> dict[str, ModelPrice]:
    """Every row's list prices: the defaults of the ``prices`` setting."""
    return {model: price for spec in PROVIDERS.values() for model, price in spec.prices.items()}


def provider_spec(name: str, *, field: str = "llm.provider") -> ProviderSpec:
    """The registry row for ``name``, or an error listing the known providers."""
    return lookup(PROVIDERS, name, field=field, what="provider")


def providers_on_queue(queue: str) -> list[ProviderSpec]:
    """The providers whose calls a worker on ``queue`` serves."""
    return [spec for spec in PROVIDERS.values() if spec.task_queue == queue]


def vision_providers() -> list[str]:
    """The providers whose rows take images."""
    return [spec.name for spec in PROVIDERS.values() if spec.capabilities.vision]
