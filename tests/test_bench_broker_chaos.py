"""The broker chaos bench, shrunk: two executions, one fault, one SIGKILL of the broker worker
between an order's POST being saved and its reply, and still every order and fill once."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_broker_chaos import run_chaos, table
from bench.broker_chaos_plan import ChaosConfig

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.integration, pytest.mark.slow]


async def test_a_worker_killed_mid_post_and_a_fault_leave_every_order_and_fill_once(
    tmp_path: Path,
) -> None:
    config = ChaosConfig(executions=2, books=1, faults=1, kills=1, seed=1)

    outcome = await run_chaos(config, tmp_path, say=lambda _: None)

    t = outcome.tally
    assert outcome.kills_mid_post == 1 and len(outcome.fired) == 1, table(outcome)
    assert outcome.completed == 2 and t.intents >= 4, table(outcome)
    assert (len(t.duplicates), len(t.lost), len(t.booked_twice)) == (0, 0, 0), table(outcome)
    assert t.never_booked == [] and t.holdings_equal and outcome.reported_right, table(outcome)
