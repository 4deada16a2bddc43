"""One provider row more, and every path a provider takes, in a fresh interpreter.

``tests/test_provider_registry.py`` runs this module as ``python -m``: it adds a row
``acme`` to the registry before anything else reads it (as a row written into
``shared/llm/providers.py`` would be), then loads the settings from the environment the
test gave it, plans the worker of the row's queue and sends one structured chat through
the chat activity to the fake server named by ``QUANTDESK_ACME__BASE_URL``; a second
chat without the key must fail before any call. It prints what it saw as one JSON
object, for the test to assert on. Nothing outside the row knows ``acme``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from shared.llm.providers import PROVIDERS, Capabilities, Serving, StructuredOutput, row

ACME = row(
    "acme",
    ("acme-quick", "acme-deep", "acme-eye"),
    env="ACME",
    url="https://api.acme.invalid/v1",
    capabilities=Capabilities(structured_output=StructuredOutput.JSON_SCHEMA),
    serving=Serving(max_concurrent=3, requests_per_second=0.5),
    prices={"acme-quick": (1.0, 2.0)},
)
PROVIDERS[ACME.name] = ACME

# Imported only now, as a process importing the registry with the row in it would.
from temporalio.exceptions import ApplicationError  # noqa: E402
from temporalio.testing import ActivityEnvironment  # noqa: E402

from activities.llm import LlmActivities  # noqa: E402
from shared.config import load_settings  # noqa: E402
from shared.llm.contracts import ChatMessage, ChatRequest  # noqa: E402
from workers.main import plan_for  # noqa: E402
from workers.roles import WorkerRole  # noqa: E402

REQUEST = ChatRequest(
    agent="test_agent",
    provider=ACME.name,
    messages=[ChatMessage(role="user", content="Assess ACME.")],
    response_schema="AnalystNote",
)


async def _refusal_without_key() -> str:
    os.environ.pop("ACME_API_KEY")
    try:
        await ActivityEnvironment().run(
            LlmActivities(load_settings(), ACME.task_queue).chat, REQUEST
        )
    except ApplicationError as error:
        return error.message
    raise AssertionError("a chat without a key was sent")


async def main() -> dict[str, Any]:
    """What the settings, the worker plan and the chat activity made of the row."""
    settings = load_settings()
    block = settings.provider(ACME.name)
    plan = plan_for(WorkerRole(ACME.task_queue), settings)
    reply = await ActivityEnvironment().run(LlmActivities(settings, ACME.task_queue).chat, REQUEST)
    return {
        "block": block.model_dump(mode="json", exclude={"api_key"}),
        "plan": {"queue": plan.queue, "queue_rate": plan.queue_rate},
        "structured": reply.structured,
        "model": reply.model,
        "cost_usd": reply.usage.cost_usd,
        "without_key": await _refusal_without_key(),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
