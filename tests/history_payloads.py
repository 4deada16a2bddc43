"""The payloads of a Temporal history, read as the cluster stores them: for the tests that
show what an operator of the cluster can and cannot read (``tests/test_encrypted_runs.py``,
``tests/test_several_hosts.py``)."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.client import WorkflowHistory

from cli.history_payloads import payloads_in

__all__ = [
    "PATCH_MARKER",
    "event_payloads",
    "is_patch_marker",
    "json_values",
    "payloads_in",
    "without_search_attributes",
]

PATCH_MARKER = "core_patch"
"""The SDK's own marker of a ``workflow.patched`` change: it holds the patch's name only, and
the SDK core writes it without the data converter."""


def is_patch_marker(event: HistoryEvent) -> bool:
    """Whether ``event`` is a ``PATCH_MARKER``: plain JSON in every history, by design."""
    return event.marker_recorded_event_attributes.marker_name == PATCH_MARKER


def without_search_attributes(history: WorkflowHistory) -> bytes:
    """The history's bytes with every event's search attributes left out."""
    proto = History(events=history.events)
    for event in proto.events:
        for attributes in (
            event.workflow_execution_started_event_attributes,
            event.upsert_workflow_search_attributes_event_attributes,
            event.start_child_workflow_execution_initiated_event_attributes,
        ):
            attributes.ClearField("search_attributes")
    return proto.SerializeToString()


def event_payloads(history: WorkflowHistory, kind: str) -> Payloads:
    """The input of the start event or the result of the completion event."""
    for event in history.events:
        if kind == "input" and event.HasField("workflow_execution_started_event_attributes"):
            return event.workflow_execution_started_event_attributes.input
        if kind == "result" and event.HasField("workflow_execution_completed_event_attributes"):
            return event.workflow_execution_completed_event_attributes.result
    raise AssertionError(f"no {kind} in the history")


def json_values(answer: dict[str, Any]) -> list[Any]:
    """The JSON values of decoded payloads in the protocol's form."""
    payloads = json_format.ParseDict(answer, Payloads()).payloads
    assert {p.metadata["encoding"] for p in payloads} == {b"json/plain"}
    return [json.loads(p.data) for p in payloads]
