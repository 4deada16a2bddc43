"""The generic ``chat`` activity, registered on every LLM provider's queue.

Keys are read here, on the worker, from its own environment: they never enter
a request, a result, a log line or an error. Everything that cannot succeed on
retry (unknown model, missing key, images for a model that cannot see, a reply
that will not fit its schema after ``REPAIR_TURNS`` repairs) fails non-retryably
with a message that says what to set.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import BaseModel
from temporalio import activity

from activities.failures import as_temporal_failures
from activities.heartbeat import heartbeating
from shared.agents.schemas import schema_named
from shared.config import ENV_PREFIX, ContextWindow, Settings, provider_setting
from shared.errors import (
    ConfigError,
    InvalidInput,
    ProviderError,
    QuantdeskError,
    StructuredOutputError,
)
from shared.llm import clients
from shared.llm.contracts import ChatRequest, ChatResponse, Usage
from shared.llm.language import in_language
from shared.llm.offline import answer_offline
from shared.llm.prompt_budget import estimated_tokens, fit_to_context, server_overflow
from shared.llm.providers import (
    ClientKind,
    LlmRole,
    ProviderSpec,
    provider_spec,
    providers_on_queue,
    vision_providers,
)
from shared.llm.reply_cache import ReplyCache, cache_key
from shared.llm.structured import (
    json_schema,
    repair_messages,
    validate_reply,
    with_schema_instruction,
)
from shared.observability.metrics import ModelCall, spend_used
from shared.observability.tracing import model_call_span, record_usage
from shared.spending.calls import call_estimate
from shared.spending.ledger import Spend, SpendLedger
from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.claim_check import ClaimCheck
from shared.storage.objects import ObjectRef, ObjectStore

if TYPE_CHECKING:
    from shared.llm.clients.langchain_chat import ChatModelClass

OVERFLOW_RESIZES = 2
"""Times a prompt is cut again after the server said it exceeds the context window."""
OVERFLOW_MARGIN = 1.1
"""Cut a little more than the server's count asks: the estimate is not exact per message."""
REPAIR_TURNS = 2
"""Repair calls after a reply that does not fit its schema, each quoting the exact problems:
small models often fix one problem per turn."""
INPUT_FIELD_OF_ROLE: dict[LlmRole, str] = {
    LlmRole.QUICK: "llm.model",
    LlmRole.DEEP: "llm.deep_model",
    LlmRole.VISION: "llm.vision_model",
}
"""The run input that chooses each role's model."""


class LlmActivities:
    """Chat activities for the providers served by one task queue."""

    def __init__(self, settings: Settings, queue: str, store: ObjectStore | None = None) -> None:
        self.settings = settings
        self.queue = queue
        if store is not None:  # injected: stands where ``store`` below looks first
            vars(self)["store"] = store
        self.chat_models = self._chat_models()

    def _chat_models(self) -> dict[str, ChatModelClass]:
        """The LangChain chat model classes of this queue's langchain rows that name one,
        imported and checked now: a worker whose class or arguments are wrong fails to start,
        naming the setting, instead of failing a run's first call. LangChain is imported only
        by a worker serving such a row."""
        rows = [
            spec
            for spec in providers_on_queue(self.queue)
            if spec.client is ClientKind.LANGCHAIN and self.settings.can_answer(spec)
        ]
        if not rows:
            return {}
        from shared.llm.clients.langchain_chat import ChatModelClass

        return {
            spec.name: ChatModelClass.load(
                spec,
                self.settings.langchain_block(spec),
                self.settings.model_for(spec, LlmRole.QUICK),
                self.settings.api_key(spec),
            )
            for spec in rows
        }

    @cached_property
    def store(self) -> ObjectStore:
        """The object store, connected on first use (images, claims and bad replies need it)."""
        return ObjectStore.from_settings(self.settings)

    @cached_property
    def clients(self) -> clients.ClientPool:
        """This worker's open vendor clients, built on first use and kept for its life."""
        return clients.ClientPool()

    @cached_property
    def spending(self) -> SpendLedger:
        """The desk's spending ledger, opened on the first call of a run."""
        return SpendLedger.from_settings(self.settings)

    @cached_property
    def claims(self) -> ClaimCheck:
        """Where the large tool answers of a request are stored."""
        return ClaimCheck.from_settings(self.settings, self.store)

    def _check(self, request: ChatRequest) -> tuple[ProviderSpec, str]:
        """Everything that can be refused before any call: provider, model, images, key."""
        spec = provider_spec(request.provider)
        if spec.task_queue != self.queue:
            raise InvalidInput(
                "llm.provider",
                f"provider {spec.name!r} is served on {spec.task_queue!r}, "
                f"but this call reached {self.queue!r}",
                fix="Route chat calls by the provider registry's task_queue.",
            )
        if spec.client is ClientKind.LANGCHAIN and spec.name not in self.chat_models:
            setting = provider_setting(spec.name, "class")
            raise ConfigError(
                setting,
                f"provider {spec.name!r} names no LangChain chat model class",
                fix=f"Set {setting} (and {provider_setting(spec.name, 'kwargs')}) in the "
                f"environment of the {self.queue} worker, restart it, then resume the run.",
            )
        model = request.model or self.settings.model_for(spec, request.role)
        if model is None:
            raise ConfigError(
                f"{ENV_PREFIX}{spec.name.upper()}__{request.role.value.upper()}_MODEL",
                f"provider {spec.name!r} has no default {request.role.value} model",
                fix="Set it, or choose another provider for this role.",
            )
        if any(m.images for m in request.messages) and not spec.capabilities.vision:
            raise InvalidInput(
                "llm.vision_model",
                f"provider {spec.name!r} (model {model!r}) does not accept images",
                fix=f"Use a vision-capable provider for chart agents "
                f"({', '.join(vision_providers())}).",
            )
        if spec.key_required and not self.settings.api_key(spec):
            raise ConfigError(
                spec.key_env or f"{ENV_PREFIX}{spec.name.upper()}__API_KEY",
                f"no API key for provider {spec.name!r}",
                fix=f"Set {spec.key_env} (or {ENV_PREFIX}{spec.name.upper()}__API_KEY) in the "
                f"environment of the {self.queue} worker.",
            )
        return spec, model

    async def _redeemed(self, request: ChatRequest) -> ChatRequest:
        """``request`` with its stored messages read back, before anything reads a message; a
        store that is down fails the attempt retryably, and the claim's object is still there
        when it comes back. A request without claims never reaches S3."""
        claims = {m.stored.digest: m.stored for m in request.messages if m.stored is not None}
        if not claims:
            return request
        # Side by side: an analyst's second turn holds several tool answers, each an S3 read.
        texts = await asyncio.gather(
            *(asyncio.to_thread(self.claims.redeem, claim) for claim in claims.values())
        )
        read = dict(zip(claims, texts, strict=True))
        return request.redeemed(lambda claim: read[claim.digest])

    async def _images(self, request: ChatRequest) -> dict[str, bytes]:
        refs = {ref.key: ref for message in request.messages for ref in message.images}
        blobs = await asyncio.gather(
            *(asyncio.to_thread(self.store.get_bytes, ref) for ref in refs.values())
        )
        return dict(zip(refs, blobs, strict=True))

    async def _complete(
        self, request: ChatRequest, spec: ProviderSpec, model: str, images: dict[str, bytes]
    ) -> ChatResponse:
        if spec.client is ClientKind.OFFLINE:
            return answer_offline(request, model)
        schema = schema_named(request.response_schema) if request.response_schema else None

        block = self.settings.provider(spec.name)
        sampling = clients.Sampling(temperature=block.temperature, seed=block.seed)

        def send(sized: ChatRequest) -> Awaitable[ChatResponse]:
            return clients.complete(
                sized,
                spec=spec,
                model=model,
                api_key=self.settings.api_key(spec),
                base_url=self.settings.base_url(spec),
                timeout=block.timeout_seconds,
                images=images,
                json_schema=json_schema(schema) if schema else None,
                sampling=sampling,
                pool=self.clients,
                chat_model=self.chat_models.get(spec.name),
            )

        window = self.settings.context_window(spec)
        if window is None:
            return await send(request)
        return await self._within_window(request, spec, model, window, send)

    async def _within_window(
        self,
        request: ChatRequest,
        spec: ProviderSpec,
        model: str,
        window: ContextWindow,
        send: Callable[[ChatRequest], Awaitable[ChatResponse]],
    ) -> ChatResponse:
        """Send ``request`` cut to fit the context ``window``, with room for the reply; a
        server that still finds it too long says by how much, and it is cut again."""
        reply_tokens = request.max_tokens or self.settings.provider(spec.name).reply_tokens
        setting = window.setting
        fix = (
            f"Give {model!r} a larger context window ({setting}, now {window.tokens}; the server's "
            f"own limit too) or a smaller reply reserve ({ENV_PREFIX}{spec.name.upper()}"
            f"__REPLY_TOKENS, now {reply_tokens}) on the {self.queue} worker, restart it, "
            "then resume the run."
        )
        budget = window.tokens - reply_tokens
        resizes = 0
        while True:
            messages, cut = fit_to_context(
                request.messages,
                budget_tokens=budget,
                tools=request.tools,
                setting=setting,
                fix=fix,
            )
            sized = request.model_copy(update={"messages": messages, "max_tokens": reply_tokens})
            try:
                response = await send(sized)
            except ProviderError as error:
                counted = server_overflow(error.message)
                if counted is None or resizes == OVERFLOW_RESIZES:
                    raise
                resizes += 1
                # The server counted `prompt` tokens: cut what it found too many, and a
                # margin for the estimate's error on what remains.
                prompt, server_window = counted
                over = prompt - (server_window - reply_tokens)
                sent = estimated_tokens(messages, request.tools)
                budget = min(budget, sent) - math.ceil(over * OVERFLOW_MARGIN)
                continue
            if cut:
                activity.logger.info("%s: cut %d characters to fit", request.agent, cut)
                response = response.model_copy(
                    update={"usage": response.usage.model_copy(update={"trimmed_prompts": 1})}
                )
            return response

    def _keep_raw_reply(self, request: ChatRequest, reply: str) -> str:
        """Store an unusable reply so a human can read it; return its key."""
        digest = hashlib.sha256(reply.encode()).hexdigest()[:16]
        ref = request.raw_reply_key or ObjectRef(
            bucket=PAYLOADS_BUCKET, key=f"raw-replies/{request.agent}/{digest}.txt"
        )
        ref = ref.model_copy(update={"content_type": "text/plain; charset=utf-8"})
        self.store.put_bytes(ref, reply.encode())
        return f"s3://{ref.bucket}/{ref.key}"

    @activity.defn(name="chat")
    @heartbeating
    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One LLM turn: validate, call the provider, validate the structure, repair it; its
        calls, tokens, cost and time measured (``shared.observability.metrics``)."""
        with as_temporal_failures():
            started = time.monotonic()
            spec, model = self._check(request)
            measured = ModelCall(provider=spec.name, model=model, agent=request.agent)
            with model_call_span(spec.name, model, request.agent) as span:
                try:
                    response, cached = await self._answer(request, spec, model, started)
                except Exception as error:
                    seconds = time.monotonic() - started
                    measured.failed(activity.metric_meter(), _error_type(error), seconds)
                    raise
                record_usage(span, response.usage, cached=cached)
            seconds = time.monotonic() - started
            measured.answered(activity.metric_meter(), response.usage, seconds, cached=cached)
            return response

    async def _answer(
        self, request: ChatRequest, spec: ProviderSpec, model: str, started: float
    ) -> tuple[ChatResponse, bool]:
        """The turn's reply, and whether it came from the reply cache."""
        request = await self._redeemed(request)
        language = request.language or self.settings.language
        request = request.model_copy(update={"messages": in_language(request.messages, language)})
        schema = schema_named(request.response_schema) if request.response_schema else None
        images = await self._images(request)
        key = self._cache_key(request, spec, model, images, schema)
        if key is not None:
            cached = await asyncio.to_thread(ReplyCache(self.store).get, key)
            if cached is not None:
                activity.logger.info("%s: answered from the reply cache", request.agent)
                # Identical reply, tokens as first spent; this time they cost nothing.
                free = cached.usage.model_copy(update={"cost_usd": 0.0})
                return cached.model_copy(update={"usage": free}), True
        messages = with_schema_instruction(request.messages, schema)
        request = request.model_copy(update={"messages": messages})
        call = await self._reserve(request, spec, model)
        response = await self._complete(request, spec, model, images)
        if schema is not None and not response.tool_calls:
            response = await self._validated(request, response, spec, model, images)
        latency = (time.monotonic() - started) * 1000
        response = response.model_copy(
            update={
                "latency_ms": round(latency, 1),
                "model": model,
                "usage": self._priced(response.usage, model),
            }
        )
        if call is not None:
            spent = Spend(usd=response.usage.cost_usd, tokens=response.usage.total_tokens)
            await asyncio.to_thread(self.spending.settle, call, spent)
        if key is not None:
            await self._remember(key, response)
        return response, False

    async def _reserve(self, request: ChatRequest, spec: ProviderSpec, model: str) -> str | None:
        """Hold what the call could cost in the spending ledger under its key (a retry
        replaces its own hold), or raise ``SpendingLimitReached``; None for a call of no run."""
        if request.spend is None:
            return None
        info = activity.info()
        call = f"{info.workflow_id}/{info.activity_id}"
        reply_tokens = request.max_tokens or self.settings.provider(spec.name).reply_tokens
        estimate = call_estimate(request, reply_tokens, self.settings.price_of(model))
        used = await asyncio.to_thread(
            self.spending.reserve, call, request.spend, estimate, self.settings.budget
        )
        for scope, share in used.items():
            spend_used(activity.metric_meter(), scope, share)
        return call

    def _cache_key(
        self,
        request: ChatRequest,
        spec: ProviderSpec,
        model: str,
        images: dict[str, bytes],
        schema: type[BaseModel] | None,
    ) -> str | None:
        """The call's reply-cache key; None when the cache is off or the provider is offline."""
        if not self.settings.llm_cache or spec.client is ClientKind.OFFLINE:
            return None
        return cache_key(request, model, images, json_schema(schema) if schema else None)

    async def _remember(self, key: str, response: ChatResponse) -> None:
        """Cache a paid-for reply. A failed write only loses the saving, so it never fails the
        call: a retry would pay the vendor again."""
        try:
            await asyncio.to_thread(ReplyCache(self.store).put, key, response)
        except QuantdeskError as error:
            activity.logger.warning("reply cache: could not store a reply: %s", error)

    def _priced(self, usage: Usage, model: str) -> Usage:
        """The usage with its cost at this worker's price table (unpriced models counted)."""
        price = self.settings.price_of(model)
        if price is None:
            return usage.model_copy(update={"unpriced_calls": usage.calls})
        return usage.model_copy(
            update={"cost_usd": price.cost(usage.input_tokens, usage.output_tokens)}
        )

    async def _validated(
        self,
        request: ChatRequest,
        response: ChatResponse,
        spec: ProviderSpec,
        model: str,
        images: dict[str, bytes],
    ) -> ChatResponse:
        """Validate against the schema; on failure up to ``REPAIR_TURNS`` repair calls, each
        answering the conversation so far with the exact problems; then a kept-reply error."""
        assert request.response_schema is not None
        schema = schema_named(request.response_schema)
        structured, problem = validate_reply(schema, response.text)
        messages = list(request.messages)
        for turn in range(1, REPAIR_TURNS + 1):
            if problem is None:
                break
            activity.logger.warning(
                "%s: reply failed %s, repair %d: %s", request.agent, schema.__name__, turn, problem
            )
            messages += repair_messages(response.text, problem)
            repair = request.model_copy(update={"messages": messages, "tools": []})
            retry = await self._complete(repair, spec, model, images)
            repaired = retry.usage.model_copy(update={"repairs": 1})
            response = retry.model_copy(update={"usage": response.usage + repaired})
            structured, problem = validate_reply(schema, response.text)
        if problem is not None:
            key = await asyncio.to_thread(self._keep_raw_reply, request, response.text)
            raise StructuredOutputError(
                schema.__name__,
                f"{problem} (after {REPAIR_TURNS} repair turns)",
                raw_reply_key=key,
                fix=_model_fix(request, spec, model, self.queue),
            )
        return response.model_copy(update={"structured": structured})


def _error_type(error: Exception) -> str:
    """How a failed call is labelled: our error's type, or the exception's class."""
    return error.type_name if isinstance(error, QuantdeskError) else type(error).__name__


def _model_fix(request: ChatRequest, spec: ProviderSpec, model: str, queue: str) -> str:
    """What to do about a model that will not answer in the schema: another model, or a retry."""
    field = INPUT_FIELD_OF_ROLE[request.role]
    if request.model is not None:
        return (
            f"The run chose {field} {model!r} itself: resuming asks it again (replies vary); "
            f"start the run with another {field} if it keeps failing."
        )
    setting = f"{ENV_PREFIX}{spec.name.upper()}__{request.role.value.upper()}_MODEL"
    return (
        f"Choose a model that follows JSON schemas: set {setting} on the {queue} worker and "
        f"restart it, then resume the run (resuming alone asks {model!r} again)."
    )
