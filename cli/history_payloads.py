"""Every payload of a Temporal message (a history event, say): what a run holds, read by
`quantdesk storage prune` to find the claims a run still needs, and by the tests that show
what an operator of the cluster can read."""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every payload anywhere in ``message`` but its search attributes."""
    if isinstance(message, Payload):
        yield message
        return
    for field, value in message.ListFields():
        if field.message_type is None or field.name == "search_attributes":
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is None:
                continue
            children = list(value.values())
        else:
            children = list(value) if field.is_repeated else [value]
        for child in children:
            yield from payloads_in(child)
