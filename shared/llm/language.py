"""The team's language: prose for people in it, everything a program reads as it was.

Every agent is told the same, in a system turn of its own after the agent's instructions
(``in_language``): write the prose (reports, debate turns, plans, justifications) in the
run's language, and keep enum values, tickers, numbers, dates and JSON keys exactly as the
schema spells them, so a German run's decision still parses as LONG or Buy. The ``chat``
step adds it, from the run's ``language`` or the worker's ``QUANTDESK_LANGUAGE``; English
adds nothing, so an English run's prompts are the ones they always were.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.llm.contracts import ChatMessage

ENGLISH = frozenset({"english", "en", "en-us", "en-gb"})


def language_instruction(language: str) -> str:
    """What an agent is told when its team reads ``language``."""
    return (
        f"Language: write every sentence meant for people (reports, arguments, summaries, "
        f"plans, justifications, rationales) in {language}. Keep everything a program reads "
        "exactly as specified, untranslated: enum values such as LONG, SHORT, Buy or Hold, "
        "tickers, numbers, dates, tool names and JSON keys."
    )


def in_language(messages: Sequence[ChatMessage], language: str | None) -> list[ChatMessage]:
    """``messages`` with the language instruction after the leading system turns; as they
    are for no language or English."""
    if not language or language.strip().lower() in ENGLISH:
        return list(messages)
    lead = 0
    while lead < len(messages) and messages[lead].role == "system":
        lead += 1
    told = ChatMessage(role="system", content=language_instruction(language))
    return [*messages[:lead], told, *messages[lead:]]
