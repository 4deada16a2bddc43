"""Query answers stay inline: they never enter a history, so the claim check has nothing to
save by storing them.

A large payload goes to S3 to keep histories small (``workers.payload_storage``), but the SDK
sends a query's answer through the same storage as everything else. The console asks a
running AutoRun for its ``progress`` every few seconds, and each answer that differed from
the last (a step done, a token counted) was written as one more object nobody would read
again. This interceptor converts each answer itself and marks it ``INLINE``; the storage
leaves marked payloads where they are (and the codec, when on, keeps the mark on the sealed
payload: the mark says nothing about the contents). A reader outside a worker gets the answer
without it (``unmarked``): the `temporal` CLI prints a JSON payload as JSON only when its
encoding is its one metadata key, and showed a marked answer as base64.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.worker import (
    HandleQueryInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from workers.payload_storage import INLINE


class _InlineAnswersInbound(WorkflowInboundInterceptor):
    async def handle_query(self, input: HandleQueryInput) -> Any:
        # The converter passes a RawValue's payload through as it is.
        [payload] = workflow.payload_converter().to_payloads([await super().handle_query(input)])
        payload.metadata[INLINE] = b"1"
        return RawValue(payload)


def unmarked(payload: Payload) -> Payload:
    """``payload`` without the ``INLINE`` mark, which means nothing once the answer is read."""
    if INLINE not in payload.metadata:
        return payload
    copy = Payload()
    copy.CopyFrom(payload)
    del copy.metadata[INLINE]
    return copy


class InlineQueryAnswers(Interceptor):
    """Every worker that runs workflows has this interceptor: query answers are never
    stored as claims."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _InlineAnswersInbound
