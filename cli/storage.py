"""`quantdesk storage prune`: claimed objects do not pile up in S3 forever.

Payloads over ``inline_max_bytes`` travel as claims on objects under
``payloads/claims/v1/`` (``shared.storage.claim_check``), addressed by their content, so
one object may serve many runs: tool answers, and every payload the SDK stores for a
history (``workers.payload_storage``), which may itself hold tool answers' claims. An object goes when it was last written longer ago than
the retention (``QUANTDESK_CLAIMS_RETENTION_DAYS``, 30 by default; ``--days``) and no run
that may still need it holds its claim: a run still running (one parked for weeks waiting
for a fix redeems its claims when resumed), or one closed since the cutoff.

Only runs that started before the cutoff can hold an object that old: a claim is written,
or written again, while a run that holds it lives, and one a parent passed to a child was
written while the parent lived, which holds it too. So only those runs' histories are
read (decoded with the payload codec when payloads are encrypted; a payload this CLI cannot
open stops the prune before anything is deleted). Each object is looked at again just
before it goes: one written again meanwhile, by a run that claimed the same value, stays.
A claim held inside a held object (a chat request the SDK stored, with its tool answers'
claims) is held too: the objects the histories name are read, at any depth.

Why not an S3 lifecycle rule: expiry by age alone deletes what a long-parked run still
needs, and SeaweedFS (4.48) accepts a bucket lifecycle configuration but sets up no expiry
from it that we could find (its filer.conf gets no TTL rule). Run this daily, from cron or
a scheduler (`quantdesk storage prune`); ``--dry-run`` lists what would go.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

import typer
from google.protobuf.message import DecodeError
from pydantic import BaseModel, Field
from rich.console import Console
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import PayloadCodec

from cli.history_payloads import payloads_in
from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import CODEC_ENABLED_SETTING, CODEC_KEYS_SETTING, Settings, load_settings
from shared.errors import ConfigError, ObjectNotFound
from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.claim_check import CLAIMS_PREFIX, Claim
from shared.storage.objects import ObjectStore, StoredObject

storage_app = typer.Typer(help="The object store: keep what runs need, prune the rest.")
console = Console()

CLAIM_DIGEST = re.compile(rb'"digest"\s*:\s*"([0-9a-f]{64})"')
"""A claim as it travels in a payload (``Claim``'s JSON): its digest names its object."""
ENCRYPTED = b"binary/encrypted"
"""The encoding of a payload sealed by the codec (``workers.payload_codec``)."""


class PruneReport(BaseModel):
    """What one prune looked at, kept and deleted (or, dry, would delete)."""

    cutoff: datetime = Field(description="objects last written before this may go")
    runs_read: int = Field(description="runs started before the cutoff, running or closed since")
    held: int = Field(description="claims those runs hold")
    examined: int = Field(description="claimed objects in the store")
    recent: int = Field(description="kept: written since the cutoff")
    kept_held: int = Field(description="kept: old, but a run holds their claim")
    deleted: list[StoredObject] = Field(description="deleted, or, dry, that would be")
    dry_run: bool


def holders_query(cutoff: datetime) -> str:
    """The runs that may hold a claim last written before ``cutoff`` and still need it."""
    at = cutoff.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"StartTime < '{at}' AND (ExecutionStatus = 'Running' OR CloseTime > '{at}')"


async def _opened(
    payloads: list[Payload], codec: PayloadCodec | None, holder: str
) -> list[Payload]:
    """``payloads`` decoded with the workers' codec; a ``ConfigError`` when one stays sealed:
    a claim it may hold cannot be seen, so nothing may be deleted."""
    if codec is not None:
        payloads = await codec.decode(payloads)
    if any(p.metadata.get("encoding") == ENCRYPTED for p in payloads):
        raise ConfigError(
            CODEC_KEYS_SETTING,
            f"{holder} holds encrypted payloads this command cannot open, so it cannot tell "
            "which claims it needs; nothing was deleted",
            fix=f"Give it the workers' codec settings ({CODEC_ENABLED_SETTING}=true, "
            f"{CODEC_KEYS_SETTING} with every key still in use).",
        )
    return payloads


def _digests(payloads: list[Payload]) -> set[str]:
    return {digest.decode() for p in payloads for digest in CLAIM_DIGEST.findall(p.data)}


async def held_claims(client: Client, cutoff: datetime) -> tuple[int, set[str]]:
    """How many runs were read, and the digests of every claim in their histories."""
    codec = client.data_converter.payload_codec
    held: set[str] = set()
    runs = 0
    async for run in client.list_workflows(holders_query(cutoff)):
        history = await client.get_workflow_handle(run.id, run_id=run.run_id).fetch_history()
        payloads = [payload for event in history.events for payload in payloads_in(event)]
        held |= _digests(await _opened(payloads, codec, f"run {run.id}"))
        runs += 1
    return runs, held


async def _claims_inside(store: ObjectStore, codec: PayloadCodec | None, digest: str) -> set[str]:
    """The claims held by the object of ``digest``: a payload the SDK stored (a chat request,
    say) holds the claims of the tool answers in it, which no history shows. A value that
    is no payload (a tool answer) or is gone holds none."""
    try:
        blob = await asyncio.to_thread(store.get_bytes, Claim(digest=digest, size=0).ref)
        payload = Payload.FromString(blob)
    except (ObjectNotFound, DecodeError):
        return set()
    if not payload.metadata:
        return set()
    return _digests(await _opened([payload], codec, f"stored payload {digest}"))


async def with_nested_claims(
    store: ObjectStore, codec: PayloadCodec | None, held: set[str]
) -> set[str]:
    """``held`` and every claim held, at any depth, inside the objects they name."""
    found = set(held)
    frontier = list(held)
    while frontier:
        inside = await _claims_inside(store, codec, frontier.pop())
        frontier.extend(inside - found)
        found |= inside
    return found


def sweep(
    store: ObjectStore, cutoff: datetime, held: set[str], *, dry_run: bool
) -> tuple[int, int, int, list[StoredObject]]:
    """Delete the claimed objects last written before ``cutoff`` whose digest is not
    ``held``; how many were examined, kept as recent, kept as held, and those deleted."""
    examined = recent = kept_held = 0
    deleted: list[StoredObject] = []
    for stored in store.listed(PAYLOADS_BUCKET, f"{CLAIMS_PREFIX}/"):
        examined += 1
        if stored.modified >= cutoff:
            recent += 1
            continue
        if stored.ref.key.rsplit("/", 1)[-1] in held:
            kept_held += 1
            continue
        if not dry_run:
            written = store.modified(stored.ref)  # a run may have claimed it again meanwhile
            if written is None:
                continue
            if written >= cutoff:
                recent += 1
                continue
            store.delete(stored.ref)
        deleted.append(stored)
    return examined, recent, kept_held, deleted


async def prune_claims(
    settings: Settings, client: Client, cutoff: datetime, *, dry_run: bool = False
) -> PruneReport:
    """Read which claims the runs that may need them hold, then sweep the rest."""
    runs, in_histories = await held_claims(client, cutoff)
    store = ObjectStore.from_settings(settings)
    held = await with_nested_claims(store, client.data_converter.payload_codec, in_histories)
    examined, recent, kept_held, deleted = await asyncio.to_thread(
        sweep, store, cutoff, held, dry_run=dry_run
    )
    return PruneReport(
        cutoff=cutoff,
        runs_read=runs,
        held=len(held),
        examined=examined,
        recent=recent,
        kept_held=kept_held,
        deleted=deleted,
        dry_run=dry_run,
    )


def print_report(report: PruneReport) -> None:
    """What the prune did, in one paragraph (and, dry, each object that would go)."""
    verb = "would delete" if report.dry_run else "deleted"
    size = sum(stored.size for stored in report.deleted)
    if report.dry_run:
        for stored in report.deleted:
            console.print(f"  {stored.ref.key}  {stored.size:,} B  {stored.modified:%Y-%m-%d}")
    console.print(
        f"claimed objects last written before {report.cutoff:%Y-%m-%d %H:%M} UTC: "
        f"{verb} {len(report.deleted)} ({size:,} bytes) of {report.examined}; "
        f"kept {report.recent} written since and {report.kept_held} held by "
        f"{report.runs_read} run(s) still running or closed since ({report.held} claim(s))",
        highlight=False,
    )


async def _prune(settings: Settings, days: int, dry_run: bool) -> PruneReport:
    from workers.client import connect

    client = await connect(settings)
    cutoff = datetime.now(UTC) - timedelta(days=days)
    return await prune_claims(settings, client, cutoff, dry_run=dry_run)


@storage_app.command("prune")
def prune(
    days: int | None = typer.Option(
        None, min=1, help="retention in days (default: QUANTDESK_CLAIMS_RETENTION_DAYS, 30)"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="list what would go, delete nothing"),
) -> None:
    """Delete claimed objects (large tool answers) that no run may still need."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        report = asyncio.run(_prune(settings, days or settings.claims_retention_days, dry_run))
        print_report(report)
    finish(0)
