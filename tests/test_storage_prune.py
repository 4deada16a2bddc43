"""`quantdesk storage prune` on a SeaweedFS of its own and the Temporal dev server, with
payloads encrypted as a desk that turned the codec on has them.

Claimed objects are written, then runs that hold their claims in their inputs: one still
running (also holding a stored payload that holds a claim of its own, in an input
compressed to travel inline), one closed after the cutoff, one closed before it. Of the
objects last written before the cutoff, only the one no run may still need goes; a dry run
deletes nothing; a prune that cannot open the runs' payloads refuses before deleting
anything.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from cli.storage import prune_claims
from shared.config import Settings, load_settings
from shared.errors import ConfigError
from shared.payload_keys import new_key_line
from shared.storage.claim_check import Claim, ClaimCheck
from shared.storage.objects import ObjectStore
from tests.servers import start_dev_server
from tests.test_storage_outage import KillableS3, killable_s3
from workers.converter import data_converter
from workers.payload_storage import reference_in

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = f"prune-{uuid.uuid4().hex[:6]}"
S3_CLOCK = 1.1
"""S3 keeps write times to the second: a pause this long puts writes on either side of a cutoff."""


@workflow.defn(name="ClaimHolder")
class ClaimHolder:
    """A run whose input holds claims, closed when told."""

    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self, claims: list[dict[str, Any]]) -> int:
        await workflow.wait_condition(lambda: self.done)
        return len(claims)

    @workflow.signal
    def finish(self) -> None:
        self.done = True


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[KillableS3]:
    with killable_s3(tmp_path / "s3") as server:
        yield server


@pytest.fixture
def settings(s3: KillableS3) -> Settings:
    access, secret = s3.settings.s3_credentials()
    return load_settings(
        s3={**s3.settings.s3.model_dump(), "access_key": access, "secret_key": secret},
        codec={"keys": new_key_line("prune"), "enabled": True},
    )


@pytest_asyncio.fixture(loop_scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of this test's own: the prune reads every run that may hold a claim, and
    another module's runs, sealed under other keys, must not be among them."""
    env = await start_dev_server()
    try:
        yield env
    finally:
        await env.shutdown()


@pytest_asyncio.fixture(loop_scope="session")
async def sealed_client(dev_env: WorkflowEnvironment, settings: Settings) -> AsyncIterator[Client]:
    """A client of the dev server that encrypts payloads, and a worker of the holders."""
    plain = dev_env.client
    client = await Client.connect(
        plain.service_client.config.target_host,
        namespace=plain.namespace,
        data_converter=data_converter(settings),
    )
    restrictions = SandboxRestrictions.default.with_passthrough_modules(__name__)
    runner = SandboxedWorkflowRunner(restrictions=restrictions)
    async with Worker(client, task_queue=QUEUE, workflows=[ClaimHolder], workflow_runner=runner):
        yield client


async def _hold(client: Client, *claims: Claim, note: str = "") -> Any:
    """A running holder of ``claims``; a long ``note`` makes its input one that is compressed
    to travel inline (``workers.payload_compression``), the claims inside it."""
    return await client.start_workflow(
        ClaimHolder.run,
        [*(c.model_dump() for c in claims), {"note": note}],
        id=f"holder-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
    )


async def _stored_payload(client: Client, store: ObjectStore, held: Claim) -> Claim:
    """A payload holding ``held``'s claim, stored as the SDK stores a large one (sealed by the
    codec, then put as it is): a chat request holding a tool answer's claim, say."""
    [payload] = await client.data_converter.encode([held.model_dump()])
    return ClaimCheck(store, inline_max=0, keys=None).put(payload.SerializeToString())


async def _visible(client: Client, query: str, count: int) -> None:
    """Wait until visibility shows ``count`` runs for ``query`` (it lags the runs a little)."""
    for _ in range(100):
        if (await client.count_workflows(query)).count == count:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"visibility never showed {count} for {query}")


async def test_only_old_objects_no_running_or_recent_run_holds_are_pruned(
    sealed_client: Client, dev_env: WorkflowEnvironment, settings: Settings
) -> None:
    store = ObjectStore.from_settings(settings)
    claims = ClaimCheck.from_settings(settings, store)
    running, recent, gone, fresh, nested = (
        claims.put(f"{name} answer".encode()) for name in "RCGFN"
    )
    outer = await _stored_payload(sealed_client, store, nested)  # only it names ``nested``
    holding = await _hold(sealed_client, running, outer, note="a long, repetitive note " * 200)
    closed_after = await _hold(sealed_client, recent)
    closed_before = await _hold(sealed_client, gone)
    await closed_before.signal(ClaimHolder.finish)
    await closed_before.result()
    await _visible(sealed_client, f"WorkflowId = '{closed_before.id}' AND CloseTime IS NOT NULL", 1)
    await asyncio.sleep(S3_CLOCK)
    cutoff = datetime.now(UTC)
    await asyncio.sleep(S3_CLOCK)
    await closed_after.signal(ClaimHolder.finish)
    await closed_after.result()
    claims.put(b"F answer")  # written again since the cutoff: a run claimed the same value

    try:
        with pytest.raises(ConfigError, match="QUANTDESK_CODEC__KEYS"):
            await prune_claims(settings, dev_env.client, cutoff)  # no keys: cannot read them
        dry = await prune_claims(settings, sealed_client, cutoff, dry_run=True)
        kept_by_dry_run = store.exists(gone.ref)
        report = await prune_claims(settings, sealed_client, cutoff)
    finally:
        await holding.signal(ClaimHolder.finish)

    assert [s.ref for s in dry.deleted] == [gone.ref] and kept_by_dry_run
    assert [s.ref for s in report.deleted] == [gone.ref] and not store.exists(gone.ref)
    assert (report.examined, report.recent, report.kept_held) == (6, 1, 4)
    # the running one, the one closed since; their claims and the one inside a held object
    assert (report.runs_read, report.held) == (2, 4)
    started = (await holding.fetch_history()).events[0]
    [held_input] = started.workflow_execution_started_event_attributes.input.payloads
    assert reference_in(held_input) is None  # inline: 4.8 KB of input, compressed and sealed
    assert held_input.ByteSize() < settings.inline_max_bytes
    for kept in (running, recent, fresh, nested):
        assert claims.redeem(kept).endswith("answer")
