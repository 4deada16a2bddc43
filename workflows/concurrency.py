"""Running workflow branches side by side, all or nothing.

``asyncio.gather`` lets the other branches run on when one fails, so a failed run
would leave activities in flight until their timeouts (and, on the time-skipping
test server, hold its clock). ``gather_all`` cancels the siblings first, which
Temporal turns into activity cancellation requests, then re-raises the failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def gather_all(*branches: Awaitable[Any]) -> list[Any]:
    """The results of every branch, or the first failure after the others are cancelled."""
    tasks = [asyncio.ensure_future(branch) for branch in branches]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
