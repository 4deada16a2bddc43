"""Fitting a conversation into a small model's context window.

A local model has a few thousand tokens of context, and one indicator series or a
news digest can fill it. A server refuses such a prompt outright (llama.cpp
answers 400 ``exceed_context_size_error``), so a prompt is cut to fit before it is
sent: tool results first, oldest first (the latest data matters most), then the
assistant's earlier turns, then user turns. System messages, which carry the role
and the reply's schema, are never cut, and every cut message keeps its head and
tail and says how much was cut, so the model knows it reads an excerpt. When even
the minimum does not fit, ``PromptTooLong`` says by how much and what to change.

Tokens are estimated by kind of character (``text_tokens``); a server that still
finds the prompt too long says by how much (``server_overflow``), and the caller
cuts that many more.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from shared.errors import ConfigError
from shared.llm.contracts import ChatMessage, ToolSpec
from shared.llm.text_tools import tools_instruction

LETTERS_PER_TOKEN = 4.5
"""Letters and spaces per token in English prose, for common BPE vocabularies."""
MESSAGE_OVERHEAD_TOKENS = 8
"""The chat template's role markers around each message."""
KEPT_CHARS = {"tool": 240, "assistant": 300, "user": 400}
"""What a cut message keeps in a first pass, by role: enough to say what it was. A tool
result's head names the tool and its parameters and its tail holds the latest values
(measured on the indicator tools: 240 characters keep both)."""
LAST_RESORT_CHARS = {"tool": 80, "assistant": 80, "user": 200}
"""What a second pass leaves when the first was not enough: a trace of each turn."""
_ASCII_LETTERS_AND_SPACES = bytes(
    code for code in range(128) if chr(code).isalpha() or chr(code).isspace()
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_SERVER_OVERFLOW = re.compile(r"\((\d+) tokens\) exceeds the available context size \((\d+) tokens")


class PromptTooLong(ConfigError):
    """Even cut to the minimum, the prompt does not fit the model's context window: a setting
    (the window, the reply's reserve) has to change, so a run waits for ``resume``."""


def text_tokens(text: str) -> float:
    """Tokens of ``text``, estimated by kind of character.

    Measured with SmolLM2's tokenizer on quantdesk's prompts: digits and punctuation
    are about one token each (tables and indicator series are mostly that, 1.0
    character per token), English prose about 5 characters per token, tool schemas
    about 3.3. Counting digits and punctuation as one token each and the rest at
    ``LETTERS_PER_TOKEN`` lands within 10% below on numbers and 15-40% above on prose
    and schemas; the server's own count corrects what remains (``server_overflow``).
    """
    # ASCII counted in C (every model call's spending estimate reads its whole prompt), the
    # few other characters one by one.
    ascii_symbols = text.encode("ascii", "ignore").translate(None, _ASCII_LETTERS_AND_SPACES)
    others = _NON_ASCII.findall(text)
    symbols = len(ascii_symbols) + sum(1 for c in others if not c.isalpha() and not c.isspace())
    return symbols + (len(text) - symbols) / LETTERS_PER_TOKEN


def estimated_tokens(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> int:
    """The prompt's size in tokens (tools count too: servers write their schemas into the
    prompt, and a text-tools row describes them in a system message)."""
    content = sum(text_tokens(message.content) for message in messages)
    # Tools as a text-tools row describes them; a native row's template writes about as much.
    schemas = text_tokens(tools_instruction(tools)) if tools else 0
    return math.ceil(content + schemas) + MESSAGE_OVERHEAD_TOKENS * len(messages)


def fit_to_context(
    messages: Sequence[ChatMessage],
    *,
    budget_tokens: int,
    tools: Sequence[ToolSpec] = (),
    setting: str,
    fix: str,
) -> tuple[list[ChatMessage], int]:
    """``messages`` cut to fit ``budget_tokens``, and how many characters were cut.

    Raises ``PromptTooLong`` (naming ``setting``, with ``fix``) when cutting every message that may be cut
    down to ``KEPT_CHARS`` is still not enough.
    """
    fitted = list(messages)
    excess = estimated_tokens(fitted, tools) - budget_tokens
    cut_total = 0
    for floors in (KEPT_CHARS, LAST_RESORT_CHARS):
        for role, kept in floors.items():
            for index, message in enumerate(fitted):
                if excess <= 0:
                    return fitted, cut_total
                if message.role != role or len(message.content) <= kept + _MARKER_CHARS:
                    continue
                # Cut at this message's own density of tokens per character, and make
                # room for the marker saying so.
                density = text_tokens(message.content) / len(message.content)
                wanted = math.ceil((excess + _MARKER_TOKENS) / density)
                cut = min(wanted, len(message.content) - kept)
                excerpt = _excerpt(message.content, cut, kept)
                fitted[index] = message.model_copy(update={"content": excerpt})
                cut_total += len(message.content) - len(excerpt)
                excess = estimated_tokens(fitted, tools) - budget_tokens
    if excess > 0:
        raise PromptTooLong(
            setting,
            f"the prompt needs at least {budget_tokens + excess} tokens with every message cut "
            f"to its minimum, but {budget_tokens} are available",
            fix=fix,
        )
    return fitted, cut_total


def _marker(removed: int) -> str:
    return f"\n[... {removed} characters cut to fit the model's context window ...]\n"


_MARKER_CHARS = len(_marker(10**6))
_MARKER_TOKENS = math.ceil(text_tokens(_marker(10**6)))


def _excerpt(content: str, cut: int, kept: int) -> str:
    """``content`` without ``cut`` characters from its middle, keeping at least ``kept`` (two
    thirds from the head, where tables and reports state what they hold)."""
    keep = max(len(content) - cut, kept)
    head = keep * 2 // 3
    tail = keep - head
    return content[:head] + _marker(len(content) - keep) + content[len(content) - tail :]


def server_overflow(message: str) -> tuple[int, int] | None:
    """(the prompt's tokens, the context window) as counted by a server refusing a prompt
    that exceeds it (llama.cpp's wording), or None when ``message`` is no such refusal."""
    match = _SERVER_OVERFLOW.search(message)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))
