"""Vendor clients: one ``ChatRequest`` in, one ``ChatResponse`` out, through the official SDKs.

``complete`` is the single entry point. It picks the vendor module by the
provider's client kind, and runs the call the same way for all of them: an
SDK client with its retries switched off (Temporal owns retrying, and
SDK retries would hide 429s and multiply timeouts),
every failure turned into a ``ProviderError`` by one translator. A langchain row goes
through the LangChain chat model its settings name instead (``langchain_chat``), with the
same retries-off rule and the same errors. The offline engine is not a vendor and is served
elsewhere.

A worker passes its ``ClientPool``: the SDK client is then built once per destination
and kept open, which spares each call the client's construction (TLS context and
connection, ~50 ms of CPU here). Without one, each call builds its own and closes it.

A vendor's module, and its SDK with it, is imported on the first call to that vendor: the
Anthropic SDK alone is ~60 MB and 1.6 s of imports, which a worker that never calls
Anthropic (or an `up` with no key) should not pay.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from typing import TYPE_CHECKING, Any

from shared.errors import ConfigError
from shared.llm.clients.common import UNSET_SAMPLING, Sampling, Target, Vendor, key_settings
from shared.llm.clients.errors import reading_reply, translated
from shared.llm.clients.pool import ClientPool
from shared.llm.contracts import ChatRequest, ChatResponse
from shared.llm.providers import ClientKind, ProviderSpec

if TYPE_CHECKING:
    from shared.llm.clients.langchain_chat import ChatModelClass

_VENDORS: dict[ClientKind, str] = {
    ClientKind.OPENAI: "shared.llm.clients.openai_chat",
    ClientKind.OPENAI_COMPATIBLE: "shared.llm.clients.openai_chat",
    ClientKind.ANTHROPIC: "shared.llm.clients.anthropic_chat",
}
"""Each client kind's vendor module (its ``VENDOR``), imported when first called."""


def _vendor(spec: ProviderSpec) -> Vendor:
    try:
        module = _VENDORS[spec.client]
    except KeyError:
        raise ValueError(
            f"provider {spec.name!r} uses the {spec.client.value!r} client, which "
            f"shared.llm.clients does not serve (it serves {', '.join(map(str, _VENDORS))})"
        ) from None
    vendor: Vendor = importlib.import_module(module).VENDOR
    return vendor


def _check_key(spec: ProviderSpec, api_key: str | None) -> None:
    """Fail before the SDK does: both would read keys from the environment on their own."""
    if spec.key_required and not api_key:
        variables = key_settings(spec)
        raise ConfigError(
            variables[0],
            f"no API key for provider {spec.name}",
            fix=f"Set {' or '.join(variables)}.",
        )


async def complete(
    request: ChatRequest,
    *,
    spec: ProviderSpec,
    model: str,
    api_key: str | None,
    base_url: str | None,
    timeout: float,
    images: dict[str, bytes],
    json_schema: dict[str, Any] | None = None,
    sampling: Sampling = UNSET_SAMPLING,
    pool: ClientPool | None = None,
    chat_model: ChatModelClass | None = None,
) -> ChatResponse:
    """One call to ``spec``'s vendor.

    ``images`` maps each ``ObjectRef.key`` in the messages to its bytes, fetched
    by the caller. With ``json_schema`` the vendor is asked for JSON output where
    it has such a switch; the text comes back unparsed either way. A langchain row is
    called through ``chat_model``, its checked class. Raises ``ProviderError`` (retryable
    or not) for every vendor failure.
    """
    target = Target(
        spec=spec,
        model=model,
        role=request.role,
        api_key=api_key,
        base_url=base_url or spec.default_base_url,
        timeout=timeout,
        images=images,
        json_schema=json_schema,
        schema_name=request.response_schema or "reply",
        tools=tuple(request.tools),
        sampling=sampling,
    )
    started = time.perf_counter()
    if spec.client is ClientKind.LANGCHAIN:
        if chat_model is None:
            raise ValueError(f"provider {spec.name!r} is a langchain row: pass its chat_model")
        from shared.llm.clients import langchain_chat

        response = await langchain_chat.complete(
            request,
            target,
            chat_model,
            pool or ClientPool(),
            temperature=sampling.temperature,
            seed=sampling.seed,
        )
    else:
        response = await _through_sdk(request, target, pool)
    latency_ms = (time.perf_counter() - started) * 1000
    return response.model_copy(update={"latency_ms": round(latency_ms, 1)})


async def _through_sdk(
    request: ChatRequest, target: Target, pool: ClientPool | None
) -> ChatResponse:
    """One call through the vendor's own SDK: its client kept open in ``pool``, or built for
    this call and closed after it."""
    # The first call to a vendor imports its SDK (seconds of CPU): off the event loop.
    vendor = await asyncio.to_thread(_vendor, target.spec)
    _check_key(target.spec, target.api_key)
    params = vendor.params(request, target)
    key, url, timeout = target.sdk_key, target.base_url, target.timeout
    with translated(target, vendor.errors):
        if pool is not None:
            client = pool.client(vendor.sdk, api_key=key, base_url=url, timeout=timeout)
            reply = await vendor.create(client, params)
        else:
            async with vendor.sdk(
                api_key=key, base_url=url, max_retries=0, timeout=timeout
            ) as client:
                reply = await vendor.create(client, params)
    with reading_reply(target):
        return vendor.read(reply, target)


__all__ = ["ClientPool", "Sampling", "complete"]
