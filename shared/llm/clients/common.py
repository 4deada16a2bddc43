"""What both vendor clients share: where a call goes, images as base64, the dispatch row.

The vendor modules differ only in wire format; everything about the call that is
not wire format (model, key, timeout, image bytes, the JSON-output wish) travels
in one ``Target`` so neither module re-derives it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple

from shared.config import provider_setting
from shared.errors import InvalidInput
from shared.llm.contracts import UNPARSED_ARGUMENTS, ChatRequest, ChatResponse, ToolSpec
from shared.llm.providers import LlmRole, ProviderSpec, ToolCalling
from shared.storage.objects import ObjectRef

# The SDKs refuse to start without a key; keyless servers (ollama, vllm) ignore this one.
KEYLESS_PLACEHOLDER = "not-needed"

# Leading bytes of the formats charts come in, for refs stored without an image/* type.
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))


def setting(spec: ProviderSpec, field: str) -> str:
    """The quantdesk variable of one provider setting, e.g. ``QUANTDESK_QWEN__QUICK_MODEL``."""
    return provider_setting(spec.name, field)


def key_settings(spec: ProviderSpec) -> list[str]:
    """The variables that can hold the provider's key, the vendor's own first."""
    return [name for name in (spec.key_env, setting(spec, "api_key")) if name]


def url_settings(spec: ProviderSpec) -> list[str]:
    """The variables that can hold the provider's base URL, quantdesk's first."""
    return [name for name in (setting(spec, "base_url"), spec.base_url_env) if name]


def without_none(**params: Any) -> dict[str, Any]:
    """The optional request parameters that are set: the SDKs reject explicit nulls."""
    return {name: value for name, value in params.items() if value is not None}


def openai_function(tool: ToolSpec) -> dict[str, Any]:
    """A tool in OpenAI's function format: what chat completions take, and what every
    LangChain integration's ``bind_tools`` converts to its own."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def unparsed(raw: str) -> dict[str, Any]:
    """Tool arguments that are not a JSON object, kept whole for the tool to quote back."""
    return {UNPARSED_ARGUMENTS: raw}


class EncodedImage(NamedTuple):
    """An image as both vendors want it: a media type and base64 text."""

    media_type: str
    data: str

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


def _media_type(ref: ObjectRef, data: bytes) -> str:
    """The ref's type when it names an image, else what the bytes say they are."""
    if ref.content_type.startswith("image/"):
        return ref.content_type
    return next((kind for magic, kind in _MAGIC if data.startswith(magic)), ref.content_type)


@dataclass(frozen=True)
class Sampling:
    """How the provider block asks the model to sample when a request does not say: a
    temperature and a seed make a server that honours them answer the same way each time."""

    temperature: float | None = None
    seed: int | None = None


UNSET_SAMPLING = Sampling()
"""The server's own sampling."""


@dataclass(frozen=True)
class Target:
    """One call's destination and everything about it that is not the conversation."""

    spec: ProviderSpec
    model: str
    role: LlmRole
    api_key: str | None
    base_url: str | None
    timeout: float
    images: Mapping[str, bytes]
    json_schema: dict[str, Any] | None
    schema_name: str
    tools: tuple[ToolSpec, ...] = ()
    sampling: Sampling = UNSET_SAMPLING

    @property
    def tools_as_text(self) -> bool:
        """Whether the offered tools go in the prompt and calls come back as text only."""
        return bool(self.tools) and self.spec.capabilities.tool_calls is ToolCalling.TEXT

    @property
    def recovers_text_calls(self) -> bool:
        """Whether a reply without native calls is searched for calls written as text."""
        return bool(self.tools) and self.spec.capabilities.tool_calls is not ToolCalling.NATIVE

    @property
    def sdk_key(self) -> str:
        """The key to hand the SDK: the real one, or the placeholder for keyless servers."""
        return self.api_key or KEYLESS_PLACEHOLDER

    @property
    def wire_schema_name(self) -> str:
        """The schema name as OpenAI accepts it: ``[A-Za-z0-9_-]{1,64}``."""
        return re.sub(r"[^A-Za-z0-9_-]", "_", self.schema_name)[:64] or "reply"

    def image(self, ref: ObjectRef) -> EncodedImage:
        """The fetched bytes of ``ref``, encoded; the caller must have fetched every image."""
        try:
            data = self.images[ref.key]
        except KeyError:
            raise InvalidInput(
                "images", f"no bytes were fetched for image {ref.key!r} of bucket {ref.bucket!r}"
            ) from None
        return EncodedImage(_media_type(ref, data), base64.b64encode(data).decode("ascii"))


class SdkErrors(NamedTuple):
    """One SDK's exception classes; both SDKs share their shape, so one translator serves."""

    status: type[Exception]
    timeout: type[Exception]
    connection: type[Exception]

    @classmethod
    def of(cls, sdk: ModuleType) -> SdkErrors:
        """The classes of the ``sdk`` module (``anthropic``, ``openai``): both name them alike."""
        return cls(sdk.APIStatusError, sdk.APITimeoutError, sdk.APIConnectionError)


class Vendor(NamedTuple):
    """A row of the dispatch table: one SDK, and how a request goes through it.

    Both SDK clients take the same constructor arguments, so the call itself
    (open, create, close, read) is written once, in ``complete``; a vendor
    module supplies only the translation both ways.
    """

    sdk: Callable[..., Any]  # the async client class, used as an async context manager
    create: Callable[[Any, dict[str, Any]], Awaitable[Any]]  # (client, params) -> SDK reply
    params: Callable[[ChatRequest, Target], dict[str, Any]]
    read: Callable[[Any, Target], ChatResponse]  # raises on a wrong-shaped reply
    errors: SdkErrors
