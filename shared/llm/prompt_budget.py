"""Fitting a conversation into a small model's context window.

A local model has a few thousand tokens of context, and one indicator series or a
news digest can fill it. A server refuses such a prompt outright (llama.cpp
answers 400 ``exceed_context_size_error``), so a prompt is cut to fit before it is
sent: tool results first, oldest first (the latest data matters most), then the
assistant's earlier turns, then user turns. System messages, which carry the role
and the reply's schema, are never cut, and every cut message keeps its head and
tail and says how much was cut, so the model knows it reads an excerpt. When even
the minimum does not fit, ``PromptTooLong`` says by how much and what to change.

Tokens are estimated from characters, on the safe side for JSON and numbers; a
server that still finds the prompt too long says by how much (``server_overflow``),
and the caller cuts again by the ratio of the server's count to its own.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage, ToolSpec

CHARS_PER_TOKEN = 3.0
"""Conservative: prose runs near 4 characters a token, JSON full of digits near 2.5."""
MESSAGE_OVERHEAD_TOKENS = 8
"""The chat template's role markers around each message."""
KEPT_CHARS = 400
"""What a cut message keeps at least: enough to say what it was."""
_CUT_ORDER = ("tool", "assistant", "user")
_SERVER_OVERFLOW = re.compile(r"\((\d+) tokens\) exceeds the available context size \((\d+) tokens")


class PromptTooLong(InvalidInput):
    """Even cut to the minimum, the prompt does not fit the model's context window."""


def estimated_tokens(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] = (),
    *,
    chars_per_token: float = CHARS_PER_TOKEN,
) -> int:
    """The prompt's size in tokens, estimated from its characters (tools count too: servers
    write their schemas into the prompt)."""
    chars = sum(len(message.content) for message in messages)
    chars += sum(len(json.dumps(tool.model_dump())) for tool in tools)
    return math.ceil(chars / chars_per_token) + MESSAGE_OVERHEAD_TOKENS * len(messages)


def fit_to_context(
    messages: Sequence[ChatMessage],
    *,
    budget_tokens: int,
    tools: Sequence[ToolSpec] = (),
    chars_per_token: float = CHARS_PER_TOKEN,
    fix: str,
) -> tuple[list[ChatMessage], int]:
    """``messages`` cut to fit ``budget_tokens``, and how many characters were cut.

    Raises ``PromptTooLong`` (with ``fix``) when cutting every message that may be cut
    down to ``KEPT_CHARS`` is still not enough.
    """
    need = estimated_tokens(messages, tools, chars_per_token=chars_per_token)
    excess = math.ceil((need - budget_tokens) * chars_per_token)
    if excess <= 0:
        return list(messages), 0
    fitted = list(messages)
    cut_total = 0
    for role in _CUT_ORDER:
        for index, message in enumerate(fitted):
            if excess <= 0:
                return fitted, cut_total
            if message.role != role or len(message.content) <= KEPT_CHARS:
                continue
            cut = min(excess, len(message.content) - KEPT_CHARS)
            fitted[index] = message.model_copy(update={"content": _excerpt(message.content, cut)})
            # The marker takes room too; count the cut net of it.
            net = len(message.content) - len(fitted[index].content)
            excess -= net
            cut_total += net
    if excess > 0:
        minimum = estimated_tokens(fitted, tools, chars_per_token=chars_per_token)
        raise PromptTooLong(
            "messages",
            f"the prompt needs at least {minimum} tokens with every message cut to "
            f"{KEPT_CHARS} characters, but {budget_tokens} are available",
            fix=fix,
        )
    return fitted, cut_total


def _excerpt(content: str, cut: int) -> str:
    """``content`` without ``cut`` characters from its middle (two thirds of what is kept
    come from the head, where tables and reports state what they hold)."""
    marker_room = 80
    keep = max(len(content) - cut - marker_room, KEPT_CHARS)
    head = keep * 2 // 3
    tail = keep - head
    removed = len(content) - head - tail
    marker = f"\n[... {removed} characters cut to fit the model's context window ...]\n"
    return content[:head] + marker + content[len(content) - tail :]


def server_overflow(message: str) -> tuple[int, int] | None:
    """(the prompt's tokens, the context window) as counted by a server refusing a prompt
    that exceeds it (llama.cpp's wording), or None when ``message`` is no such refusal."""
    match = _SERVER_OVERFLOW.search(message)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))
