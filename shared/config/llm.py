"""The model side of the settings: one block per provider row (a LangChain row's class and
arguments too), the context window prompts are planned for, the embedded llama.cpp server,
and the daily spending limits on model calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, NamedTuple

from pydantic import AliasChoices, BaseModel, BeforeValidator, Field, SecretStr
from pydantic_settings import NoDecode

from shared.llm.providers import ClientKind, ProviderSpec, Serving


class ProviderSettings(Serving):
    """One provider's block, ``QUANTDESK_<PROVIDER>__<FIELD>``: the serving limits (their
    defaults are the provider row's) and overrides that fall back to the row and the
    vendor's variables when unset."""

    quick_model: str | None = None
    deep_model: str | None = None
    vision_model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    context_tokens: int | None = Field(
        None,
        ge=512,
        description="the model's context window, over the registry row's (prompts are "
        "trimmed to fit it)",
    )

    temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description="the sampling temperature when a call sets none (0: the likeliest token)",
    )
    seed: int | None = Field(
        None,
        ge=0,
        description="the sampling seed sent with every call (OpenAI-style servers; llama.cpp "
        "answers the same way each time with a seed and temperature 0)",
    )
    knowledge_cutoff: str | None = Field(
        None,
        pattern=r"^(\d{4}-\d{2}(-\d{2})?|never)$",
        description="the training cutoff of this provider's models (YYYY-MM or YYYY-MM-DD; "
        "never: a rule that learned from no period), over models.dev's and the registry row's",
    )

    @classmethod
    def of(cls, spec: ProviderSpec) -> ProviderSettings:
        """The block a provider has when nothing is set: its row's serving limits."""
        return cls(**spec.serving.model_dump())


MODEL_KWARGS = ("model", "model_name", "model_id")
"""The keyword arguments a LangChain class names its model with, the usual one first."""


def _json_object(value: object) -> object:
    """A JSON object given as text (an environment variable) parsed, anything else as given."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise ValueError('expected a JSON object of keyword arguments, e.g. {"region_name": "x"}')
    return parsed


class LangChainSettings(ProviderSettings):
    """The block of a langchain row: which LangChain chat model class serves it, built with
    which keyword arguments. The class is imported and the arguments checked against it when
    the worker starts (``shared.llm.clients.langchain_chat``), not here: settings are read by
    every process, and only the worker serving the row needs the integration installed."""

    chat_class: str | None = Field(
        None,
        validation_alias=AliasChoices("class", "chat_class"),
        description="the chat model class by import path, e.g. langchain_aws.ChatBedrockConverse "
        "(QUANTDESK_LANGCHAIN__CLASS); unset: the row cannot answer",
    )
    # Not named `kwargs`: pydantic's generated __init__ takes **kwargs.
    arguments: Annotated[dict[str, Any], NoDecode, BeforeValidator(_json_object)] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("kwargs", "arguments"),
        description='the class\'s keyword arguments as JSON, e.g. {"region_name": "us-east-1"}; '
        "a `model` here is every role's model unless QUICK_MODEL, DEEP_MODEL or VISION_MODEL "
        "says otherwise; keys go in API_KEY or the class's own variables, never here",
    )

    @property
    def default_model(self) -> str | None:
        """The model the keyword arguments name, if any: every role's unless set apart."""
        given = self.arguments
        named = next((given[name] for name in MODEL_KWARGS if name in given), None)
        return named if isinstance(named, str) and named else None


def settings_block_of(spec: ProviderSpec) -> type[ProviderSettings]:
    """The settings block type of a row: langchain rows name a class and its arguments too."""
    return LangChainSettings if spec.client is ClientKind.LANGCHAIN else ProviderSettings


class ContextWindow(NamedTuple):
    """The context window prompts are planned for, and the variable that sets it."""

    tokens: int
    setting: str


class BudgetSettings(BaseModel):
    """Each book's daily spending limit on model calls, across all its runs (a book's own
    limit, set with `quantdesk budget raise --book`, is kept in the database and wins)."""

    daily_usd: float | None = Field(
        None, gt=0, description="USD a book's runs may spend on models in a UTC day"
    )
    daily_tokens: int | None = Field(
        None, ge=1, description="tokens a book's runs may spend in a UTC day (unpriced models)"
    )


class LocalLlmSettings(BaseModel):
    """The embedded llama.cpp server that `quantdesk up` runs when a GGUF model is named."""

    model: Path | None = Field(
        None,
        description="a GGUF file; when set, `up` starts the local-llm component and provider "
        "llamacpp uses it (`quantdesk model install smollm2` fetches a small one)",
    )
    port: int = Field(8410, ge=1, le=65535)
    context_tokens: int = Field(
        4096, ge=512, le=1_048_576, description="the server's context window (n_ctx)"
    )
    threads: int | None = Field(None, ge=1, le=512, description="CPU threads; None: all cores")

    @property
    def url(self) -> str:
        """The server's OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self.port}/v1"
