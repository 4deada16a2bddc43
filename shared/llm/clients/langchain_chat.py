"""Any LangChain chat model as a provider: one adapter over langchain-core's ``BaseChatModel``.

People who come from TradingAgents have their models configured as LangChain chat models:
Bedrock, Vertex and Gemini, Mistral, Groq, Cohere, Azure, their company's own wrapper. A
langchain row (``ClientKind.LANGCHAIN``) serves any of them: its settings name the class
by import path and its keyword arguments (``QUANTDESK_LANGCHAIN__CLASS``, ``__KWARGS``),
and the chat activity calls it like every provider, on its own queue, with our usage and
cost accounting, our error taxonomy and Temporal's retries.

The class is checked when the worker starts (``ChatModelClass.load``), so a class that
cannot be imported, an argument it does not take, a key written into the arguments or a
retry count of its own is refused before any run reaches it, naming the setting.

A call:

- messages become LangChain messages: one system message first (the row's system turns
  joined, as Anthropic needs), images as langchain-core's standard image blocks (each
  integration renders them in its wire format), tool calls and results as ``AIMessage``
  calls and ``ToolMessage`` answers;
- tools go through ``bind_tools`` in OpenAI's function format, which every integration
  converts;
- a reply that must fit a schema, with no data tools offered, goes through the class's own
  ``with_structured_output`` (its native mechanism: json_schema for OpenAI, a forced tool for
  Anthropic), keeping the raw message for its usage; with data tools offered, or a class
  without structured output, the schema in the prompt is all, and the chat activity's repair
  turn follows a reply that misses it;
- usage comes from the reply's ``usage_metadata``.

Retries: the class is built with ``max_retries=0`` where it declares that argument (the
OpenAI and Anthropic integrations, and most others, retry twice by default), so Temporal's
retries are the only ones and a 429 reaches the retry policy with its wait.
"""

from __future__ import annotations

import difflib
import importlib
import json
import types
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from langchain_core import exceptions as lc
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import AliasChoices, SecretStr

from shared.config import MODEL_KWARGS, LangChainSettings, provider_setting
from shared.errors import ConfigError, ProviderError, QuantdeskError
from shared.llm.clients import errors
from shared.llm.clients.common import Target, openai_function, unparsed
from shared.llm.clients.pool import ClientPool, key_digest
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, ToolCall, Usage
from shared.llm.providers import ProviderSpec, StructuredOutput

_KEY_NAMES = ("api_key",)
_TIMEOUT_NAMES = ("timeout", "request_timeout")
_RETRY_NAMES = ("max_retries",)
_MAX_TOKENS_NAMES = ("max_tokens",)
OVERFLOW_CODE = "context_length_exceeded"
"""OpenAI's error code for a prompt over the context window."""
OVERFLOW_PHRASES = ("maximum context length", "prompt is too long", "exceeds the context window")
"""How vendors word that refusal (OpenAI, Anthropic, OpenAI's Responses API)."""
# What langchain-core 1.x's classified errors stand for, as HTTP statuses.
_STATUS_OF_CLASS: tuple[tuple[type[Exception], int], ...] = (
    (lc.ModelAuthenticationError, 401),
    (lc.ModelPermissionDeniedError, 403),
    (lc.ModelNotFoundError, 404),
    (lc.ModelRateLimitError, 429),
    (lc.ModelInvalidRequestError, 400),
    (lc.ModelAPIError, 500),
)


# -- the class, checked at worker start ----------------------------------------------------


def _keywords(cls: type[BaseChatModel]) -> dict[str, str]:
    """Every keyword a class's constructor takes (its fields' names and aliases), each with
    the keyword that surely reaches the field: its alias where it has one, since a class
    that does not populate by name ignores the name (ChatGoogleGenerativeAI's max_retries
    is read from ``retries``)."""
    keywords: dict[str, str] = {}
    for name, field in cls.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        aliases = [a for a in (*choices, field.alias) if isinstance(a, str)]
        for keyword in (name, *aliases):
            keywords[keyword] = aliases[0] if aliases else name
    return keywords


def _is_secret(annotation: object) -> bool:
    """Whether a field's type is (or may be) a ``SecretStr``: a key, kept out of KWARGS."""
    if annotation is SecretStr:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, typing.Annotated):
        return any(_is_secret(arg) for arg in typing.get_args(annotation))
    return False


def _import(path: str, setting: str) -> type[BaseChatModel]:
    """The class at ``module.Class`` (or ``module:Class``), which must be a chat model."""
    module_name, _, name = path.replace(":", ".").rpartition(".")
    if not module_name or not name:
        raise ConfigError(
            setting,
            f"{path!r} is not an import path of a class",
            fix="Give it as module.Class, e.g. langchain_aws.ChatBedrockConverse.",
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(
            setting,
            f"cannot import {module_name!r} ({error})",
            fix=f"Install the integration in the worker's environment (for {module_name}: "
            f"pip install {module_name.split('.')[0].replace('_', '-')}), or correct the path.",
        ) from None
    found = getattr(module, name, None)
    if not isinstance(found, type) or not issubclass(found, BaseChatModel):
        what = "nothing" if found is None else f"a {type(found).__name__}"
        raise ConfigError(
            setting,
            f"{path!r} names {what}, not a LangChain chat model class (a BaseChatModel)",
            fix=f"Name a chat model class of {module_name}, e.g. one whose name starts with Chat.",
        )
    return found


def _first(accepted: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The keyword that sets the first of ``names`` the class takes, or None."""
    return next((accepted[name] for name in names if name in accepted), None)


def _refuse_arguments(
    spec: ProviderSpec,
    model_class: type[BaseChatModel],
    keywords: Mapping[str, str],
    given: Mapping[str, Any],
) -> None:
    """Refuse arguments the class does not take, keys (KWARGS is not kept secret), and what
    quantdesk sets itself: the retries (Temporal's) and the timeout (a setting of its own)."""
    setting = provider_setting(spec.name, "kwargs")
    name = model_class.__name__
    unknown = sorted(keyword for keyword in given if keyword not in keywords)
    if unknown and model_class.model_config.get("extra") != "allow":
        close = {k: difflib.get_close_matches(k, keywords, n=1) for k in unknown}
        hints = [f"{k} (did you mean {m[0]}?)" if m else k for k, m in close.items()]
        raise ConfigError(
            setting,
            f"{name} takes no argument {', '.join(hints)}",
            fix=f"Remove it from {setting}, or spell it as {name} declares it.",
        )
    secret_fields = {
        keywords[field]
        for field, info in model_class.model_fields.items()
        if _is_secret(info.annotation)
    }
    secret = sorted(k for k in given if keywords.get(k) in secret_fields)
    if secret:
        raise ConfigError(
            setting,
            f"{', '.join(secret)} would hold a secret in {setting}, which is not kept as one",
            fix=f"Give the key in {provider_setting(spec.name, 'api_key')} or in the variable "
            f"{name} reads itself, and remove it from {setting}.",
        )
    owned = {
        _first(keywords, _RETRY_NAMES): "Temporal retries every call: the model's own retries "
        "would hide rate limits and multiply timeouts",
        _first(keywords, _TIMEOUT_NAMES): f"the timeout is "
        f"{provider_setting(spec.name, 'timeout_seconds')}",
    }
    for keyword in given:
        why = owned.get(keywords.get(keyword))
        if why is not None and keyword in keywords:
            raise ConfigError(
                setting, f"{keyword} is set by quantdesk ({why})", fix=f"Remove it from {setting}."
            )


def _refuse_key_or_model(
    spec: ProviderSpec,
    model_class: type[BaseChatModel],
    keywords: Mapping[str, str],
    model: str | None,
    api_key: str | None,
) -> str:
    """The quick role's model; refuse a key the class cannot take, and a row with no model."""
    if api_key and _first(keywords, _KEY_NAMES) is None:
        raise ConfigError(
            provider_setting(spec.name, "api_key"),
            f"{model_class.__name__} takes no api_key argument",
            fix=f"Unset it and give the key in the variable {model_class.__name__} reads.",
        )
    if model is None:
        roles = ", ".join(provider_setting(spec.name, f"{r}_model") for r in ("quick", "deep"))
        raise ConfigError(
            provider_setting(spec.name, "quick_model"),
            f"provider {spec.name!r} names no model",
            fix=f'Put a "model" in {provider_setting(spec.name, "kwargs")}, or set {roles}.',
        )
    return model


@dataclass(frozen=True)
class ChatModelClass:
    """A LangChain chat model class checked against a row's settings, and the arguments
    every instance is built with."""

    cls: type[BaseChatModel]
    kwargs: Mapping[str, Any]
    keywords: Mapping[str, str]

    @property
    def name(self) -> str:
        return f"{self.cls.__module__}.{self.cls.__qualname__}"

    @classmethod
    def load(
        cls, spec: ProviderSpec, block: LangChainSettings, model: str | None, api_key: str | None
    ) -> ChatModelClass:
        """Import and check the class a row's settings name, and build it once with
        ``model`` (the quick role's), so wrong arguments fail at worker start, naming the
        setting, instead of on a run's first call."""
        class_setting = provider_setting(spec.name, "class")
        if block.chat_class is None:
            raise ConfigError(
                class_setting,
                f"provider {spec.name!r} names no LangChain chat model class",
                fix=f"Set {class_setting} to one, e.g. langchain_aws.ChatBedrockConverse.",
            )
        model_class = _import(block.chat_class, class_setting)
        if model_class.bind_tools is BaseChatModel.bind_tools:
            raise ConfigError(
                class_setting,
                f"{model_class.__name__} cannot call tools (it has no bind_tools), and every "
                "flow's analysts do",
                fix="Choose a chat model class with tool calling.",
            )
        keywords = _keywords(model_class)
        _refuse_arguments(spec, model_class, keywords, block.arguments)
        model = _refuse_key_or_model(spec, model_class, keywords, model, api_key)
        checked = cls(cls=model_class, kwargs=dict(block.arguments), keywords=keywords)
        try:
            checked.build(model=model, api_key=api_key, timeout=block.timeout_seconds)
        except Exception as error:  # whatever the class's own validation raises
            setting = provider_setting(spec.name, "kwargs")
            raise ConfigError(
                setting,
                f"{model_class.__name__} could not be built with model {model!r}: "
                f"{errors.redact(f'{type(error).__name__}: {error}', api_key)[:500]}",
                fix=f"Correct {setting} (or the class's own variables: a key, a region).",
            ) from None
        return checked

    def build(
        self,
        *,
        model: str,
        api_key: str | None,
        timeout: float,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> BaseChatModel:
        """An instance for one model, its own retries off, with what the call asks for set
        under the keyword the class takes (a value it has no field for is left out); a value
        set here replaces the arguments' own spelling of the same field."""
        kwargs = dict(self.kwargs)
        wished: list[tuple[tuple[str, ...], object]] = [
            (MODEL_KWARGS, model),
            (_KEY_NAMES, api_key),
            (_TIMEOUT_NAMES, timeout),
            (_RETRY_NAMES, 0),
            (_MAX_TOKENS_NAMES, max_tokens),
            (("temperature",), temperature),
            (("seed",), seed),
        ]
        for names, value in wished:
            keyword = _first(self.keywords, names)
            if keyword is None or value is None:
                continue
            kwargs = {k: v for k, v in kwargs.items() if self.keywords.get(k) != keyword}
            kwargs[keyword] = value
        return self.cls(**kwargs)


# -- a call --------------------------------------------------------------------------------


def _text(content: str | list[Any]) -> str:
    """The text of a message's content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or block.get("type") == "text"
    )


def _human(message: ChatMessage, target: Target) -> HumanMessage:
    if not message.images:
        return HumanMessage(content=message.content)
    blocks: list[str | dict[str, Any]] = [{"type": "text", "text": message.content}]
    for ref in message.images:
        image = target.image(ref)
        blocks.append({"type": "image", "base64": image.data, "mime_type": image.media_type})
    return HumanMessage(content=blocks)


def _assistant(message: ChatMessage) -> AIMessage:
    calls = [{"id": c.id, "name": c.name, "args": c.arguments} for c in message.tool_calls]
    return AIMessage(content=message.content, tool_calls=calls)


def _tool(message: ChatMessage) -> ToolMessage:
    return ToolMessage(
        content=message.content, tool_call_id=message.tool_call_id or "", name=message.name
    )


def messages_of(request: ChatRequest, target: Target) -> list[BaseMessage]:
    """The conversation as LangChain messages, the system turns joined into one first."""
    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    converted: list[BaseMessage] = [SystemMessage(content=system)] if system else []
    for message in request.messages:
        if message.role == "user":
            converted.append(_human(message, target))
        elif message.role == "assistant":
            converted.append(_assistant(message))
        elif message.role == "tool":
            converted.append(_tool(message))
    return converted


def _tool_calls(message: AIMessage) -> list[ToolCall]:
    """The calls the model asked for; one whose arguments did not parse is kept whole, for
    the tool to answer with an error the model repairs."""
    calls = [
        ToolCall(id=c["id"] or "", name=c["name"], arguments=c["args"]) for c in message.tool_calls
    ]
    calls += [
        ToolCall(
            id=c.get("id") or "", name=c.get("name") or "", arguments=unparsed(c.get("args") or "")
        )
        for c in message.invalid_tool_calls
    ]
    return calls


def _usage(message: AIMessage) -> Usage:
    counted = message.usage_metadata
    if counted is None:  # an integration that reports no usage: the call is still counted
        return Usage(calls=1)
    return Usage(
        calls=1, input_tokens=counted["input_tokens"], output_tokens=counted["output_tokens"]
    )


def _finish_reason(message: AIMessage) -> str | None:
    metadata = message.response_metadata
    reason = metadata.get("finish_reason") or metadata.get("stop_reason")
    return str(reason) if reason else None


def _structured_text(parsed: object, raw: AIMessage) -> str:
    """The reply's JSON text: what the integration parsed, else what the model wrote (its
    answer tool's arguments, or its text) for the repair turn to quote."""
    if parsed is None and raw.tool_calls:
        return json.dumps(raw.tool_calls[-1]["args"])
    if parsed is None:
        return _text(raw.content)
    if hasattr(parsed, "model_dump"):
        parsed = parsed.model_dump(mode="json")
    return json.dumps(parsed)


def _wants_integration_schema(request: ChatRequest, target: Target) -> bool:
    mechanism = target.spec.capabilities.structured_output
    return (
        target.json_schema is not None
        and not request.tools
        and mechanism is StructuredOutput.INTEGRATION
    )


async def _invoke(model: BaseChatModel, request: ChatRequest, target: Target) -> ChatResponse:
    messages = messages_of(request, target)
    structured: dict[str, Any] | None = None
    if _wants_integration_schema(request, target):
        schema = {**(target.json_schema or {}), "title": target.wire_schema_name}
        try:
            runnable = model.with_structured_output(schema, include_raw=True)
        except NotImplementedError:  # the class has no structured output: the prompt's is all
            runnable = None
        if runnable is not None:
            # include_raw: a dict of the raw message, the parsed value and any parsing error
            structured = cast(dict[str, Any], await runnable.ainvoke(messages))
    if structured is not None:
        raw: AIMessage = structured["raw"]
        text, calls = _structured_text(structured.get("parsed"), raw), []
    else:
        bound = (
            model.bind_tools([openai_function(t) for t in request.tools])
            if request.tools
            else model
        )
        raw = await bound.ainvoke(messages)
        text, calls = _text(raw.content), _tool_calls(raw)
    return ChatResponse(
        text=text,
        tool_calls=calls,
        usage=_usage(raw),
        provider=target.spec.name,
        model=target.model,
        finish_reason=_finish_reason(raw),
    )


async def complete(
    request: ChatRequest,
    target: Target,
    chat_model: ChatModelClass,
    pool: ClientPool,
    *,
    temperature: float | None,
    seed: int | None,
) -> ChatResponse:
    """One call through the row's chat model; every failure a ``ProviderError``."""
    temperature = request.temperature if request.temperature is not None else temperature
    where = (
        chat_model.name,
        target.model,
        key_digest(target.api_key),
        target.timeout,
        request.max_tokens,
        temperature,
        seed,
    )
    built: list[BaseChatModel] = []
    with translated(target, built):
        model = pool.kept(
            where,
            lambda: chat_model.build(
                model=target.model,
                api_key=target.api_key,
                timeout=target.timeout,
                max_tokens=request.max_tokens,
                temperature=temperature,
                seed=seed,
            ),
        )
        built.append(model)
        return await _invoke(model, request, target)


# -- failures --------------------------------------------------------------------------------


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the exceptions it was raised from, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _status(error: BaseException) -> int | None:
    """The HTTP status an exception carries: an SDK's ``status_code``, httpx's response,
    botocore's metadata, google's ``code``; or the one langchain-core's class stands for."""
    for link in _chain(error):
        for candidate in (
            getattr(link, "status_code", None),
            getattr(getattr(link, "response", None), "status_code", None),
            getattr(link, "code", None),
        ):
            if isinstance(candidate, int) and 100 <= candidate < 600:
                return candidate
        metadata = getattr(link, "response", None)
        if isinstance(metadata, dict):
            status = metadata.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if isinstance(status, int):
                return status
    return next((status for kind, status in _STATUS_OF_CLASS if isinstance(error, kind)), None)


def _headers(error: BaseException) -> Mapping[str, str]:
    for link in _chain(error):
        headers = getattr(getattr(link, "response", None), "headers", None)
        if isinstance(headers, Mapping):
            return headers
    return {}


def _detail(error: BaseException) -> str:
    body = getattr(error, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    return message if isinstance(message, str) and message else str(error)


def _named(error: BaseException, *words: str) -> bool:
    """Whether the exception or a cause is named like ``words`` (a timeout, a connection)."""
    return any(any(w in type(link).__name__ for w in words) for link in _chain(error))


def _overflows(error: Exception) -> bool:
    """Whether a refusal is a prompt over the context window. langchain-core classifies it
    (``ContextOverflowError``) where the integration recognises it, but langchain-openai looks
    for OpenAI's code in the exception's text, where the openai SDK 3.x no longer puts it."""
    if isinstance(error, lc.ContextOverflowError):
        return True
    code = getattr(error, "code", None)
    return code == OVERFLOW_CODE or any(p in _detail(error).lower() for p in OVERFLOW_PHRASES)


def provider_error(target: Target, error: Exception) -> ProviderError:
    """What an integration raised, in our taxonomy: langchain-core's classes first, then an
    HTTP status found on the exception or its causes, then its name."""
    if _overflows(error):
        return errors.context_overflow(target, _detail(error))
    if isinstance(error, lc.ModelRefusalError):
        return errors.refusal(target, error)
    if isinstance(error, lc.ModelTimeoutError | TimeoutError) or _named(error, "Timeout"):
        return errors.timeout_error(target)
    if isinstance(error, lc.ModelConnectionError | ConnectionError) or _named(
        error, "ConnectionError", "ConnectError"
    ):
        return errors.connection_error(target, error)
    status = _status(error)
    if status is not None:
        return errors.http_error(target, status, _detail(error), _headers(error))
    return errors.unclassified(target, error)


def _secrets(model: BaseChatModel) -> list[str]:
    """The secrets an instance holds: the key we gave it, or one it read from its own
    variables (``GROQ_API_KEY``, ``AZURE_OPENAI_API_KEY``...), which a vendor may echo back."""
    held = (getattr(model, name, None) for name in type(model).model_fields)
    return [value.get_secret_value() for value in held if isinstance(value, SecretStr)]


def _without(secrets: list[str], error: ProviderError) -> ProviderError:
    """``error`` with each of ``secrets`` redacted from its message and fix."""
    message, fix = error.message, error.fix
    for secret in filter(None, secrets):
        message = errors.redact(message, secret)
        fix = errors.redact(fix, secret) if fix else fix
    return ProviderError(
        message,
        retryable=error.retryable,
        fix=fix,
        retry_after=error.retry_after,
        status=error.status,
    )


@contextmanager
def translated(target: Target, built: list[BaseChatModel]) -> Iterator[None]:
    """Raise every failure of the integration as a ``ProviderError``, without its chain (the
    request it holds may carry the key), and without the secrets of the instance in ``built``
    (once built) in its words."""
    try:
        yield
    except QuantdeskError:
        raise
    except Exception as error:
        secrets = [secret for model in built for secret in _secrets(model)]
        raise _without(secrets, provider_error(target, error)) from None
