"""A run with encrypted payloads, end to end, on the real dev server.

A QuantAgent run (offline provider, real S3, real activities) is made by workers whose
client comes from ``workers.client.connect`` with the codec on. Read back by a plain
client, its history holds no payload in plain text, and no trace of its symbol or
decision outside the search attributes (which are indexed, so plain by design); the
console's codec endpoint, the console's own run page and the `temporal` CLI (through
that endpoint) all read it. The embedded Web UI, pointed at the endpoint as `up` does,
shows a sealed input decoded, in a real headless Chromium.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import uvicorn
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from cli.stack.console import codec_endpoint
from cli.stack.servers import http_answers, temporal_dev_server, wait_until
from console.app import create_app
from shared.config import Settings
from shared.llm.providers import QUEUE_OFFLINE
from shared.market.sources import BundledSource
from shared.payload_keys import new_key_line
from tests.chromium import chromium_binary, chromium_page
from tests.history_payloads import (
    event_payloads,
    is_patch_marker,
    json_values,
    payloads_in,
    without_search_attributes,
)
from tests.servers import (
    free_port_base,
    isolated_settings,
    quantagent_plans,
    running,
    running_workers,
    server_binary,
    tools_reading,
)
from workers.client import connect
from workers.converter import data_converter
from workers.payload_storage import ClaimCheckDriver, reference_in, retrieved
from workflows.llm_calls import TOOL_BATCHES_PATCH
from workflows.quantagent import QuantAgentResult, QuantAgentWorkflow

pytestmark = pytest.mark.slow

QUEUE = "encrypted-runs"
SYMBOL = "ZQXCODEC"
"""Found nowhere but in the run's payloads, so any plain trace of it is a leak."""
TOKEN = "t0ken-encrypted-runs"
KEYS = f"{new_key_line('2026-12')},{new_key_line('2026-06')}"
needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it)"
)


@dataclass
class EncryptedRun:
    settings: Settings
    workflow_id: str
    result: QuantAgentResult
    history: WorkflowHistory
    """As a client without the codec reads it."""


@pytest.fixture(scope="module")
def settings(
    dev_env: WorkflowEnvironment, s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Settings:
    return isolated_settings(
        s3_settings,
        tmp_path_factory.mktemp("encrypted"),
        QUEUE,
        temporal={"address": dev_env.client.service_client.config.target_host},
        codec={"keys": KEYS, "enabled": True},
        console={"token": TOKEN, "port": free_port_base(lambda base: [base])},
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def encrypted_client(settings: Settings) -> Client:
    return await connect(settings)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(encrypted_client: Client, settings: Settings) -> AsyncIterator[None]:
    with tools_reading(settings):
        plans = quantagent_plans(QUEUE, settings, QUEUE_OFFLINE)
        async with running_workers(encrypted_client, plans):
            yield


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def run(
    dev_env: WorkflowEnvironment, encrypted_client: Client, settings: Settings, workers: None
) -> EncryptedRun:
    bars = BundledSource().read("GOOG", "1d", lookback=80)
    workflow_id = f"encrypted-{uuid.uuid4().hex[:8]}"
    result = await encrypted_client.execute_workflow(
        "QuantAgent",
        {"symbol": SYMBOL, "timeframe": "1d", "bars": [b.model_dump(mode="json") for b in bars]},
        id=workflow_id,
        task_queue=QUEUE,
        result_type=QuantAgentResult,
    )
    history = await dev_env.client.get_workflow_handle(workflow_id).fetch_history()
    return EncryptedRun(settings, workflow_id, result, history)


async def test_no_payload_of_the_history_is_plain(run: EncryptedRun) -> None:
    # Temporal's core writes a ``workflow.patched`` marker itself, past the codec: the
    # patch's id in plain JSON, nothing of the run's.
    patches = [e for e in run.history.events if is_patch_marker(e)]
    assert [json.loads(p.data) for e in patches for p in payloads_in(e)] == [
        {"id": TOOL_BATCHES_PATCH, "deprecated": False}
    ]
    events = [e for e in run.history.events if not is_patch_marker(e)]
    payloads = [p for e in events for p in payloads_in(e)]
    # A large payload (the bars, the prompts) is stored in S3 and the history keeps a reference
    # holding its digest; what is stored is the payload the codec sealed.
    references = [p for p in payloads if reference_in(p) is not None]
    inline = [p for p in payloads if reference_in(p) is None]
    stored = await retrieved(ClaimCheckDriver(run.settings), references)

    summaries = [e.user_metadata.summary for e in run.history.events if e.HasField("user_metadata")]

    assert len(inline) > 10 and summaries  # activity summaries are payloads too
    assert references and SYMBOL.encode() not in b"".join(p.data for p in references)
    assert {p.metadata["encoding"] for p in [*inline, *stored]} == {b"binary/encrypted"}
    assert {p.metadata["encryption-key-id"] for p in [*inline, *stored]} == {b"2026-12"}


async def test_the_symbol_and_the_decision_show_nowhere_but_in_the_search_attributes(
    run: EncryptedRun,
) -> None:
    raw = without_search_attributes(run.history)
    decision = run.result.decision.justification[:40].encode()

    assert run.result.symbol == SYMBOL and len(decision) == 40
    assert SYMBOL.encode() in History(events=run.history.events).SerializeToString()
    assert SYMBOL.encode() not in raw and decision not in raw


async def test_the_consoles_codec_endpoint_decodes_the_history(run: EncryptedRun) -> None:
    app = create_app(run.settings)
    transport = httpx.ASGITransport(app=app)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as http:
        decoded = {
            kind: await http.post(
                "/codec/decode",
                json=json_format.MessageToDict(event_payloads(run.history, kind)),
                headers=bearer,
            )
            for kind in ("input", "result")
        }

    [started] = json_values(decoded["input"].json())
    [result] = json_values(decoded["result"].json())
    assert started["symbol"] == SYMBOL and started["timeframe"] == "1d"
    assert result["decision"]["justification"] == run.result.decision.justification


async def test_the_history_replays_with_the_codec(run: EncryptedRun) -> None:
    replayer = Replayer(workflows=[QuantAgentWorkflow], data_converter=data_converter(run.settings))

    result = await replayer.replay_workflow(run.history, raise_on_replay_failure=False)

    assert result.replay_failure is None


async def test_the_consoles_run_page_reads_the_encrypted_run(run: EncryptedRun) -> None:
    app = create_app(run.settings)
    transport = httpx.ASGITransport(app=app)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as http:
        page = await http.get(f"/runs/{run.workflow_id}", headers=bearer)

    assert page.status_code == 200 and SYMBOL in page.text


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served_console(settings: Settings) -> AsyncIterator[str]:
    """The console over HTTP on its loopback port; its codec endpoint's URL."""
    endpoint = codec_endpoint(settings)
    assert endpoint is not None
    async with serving(settings):
        yield endpoint


async def test_the_temporal_cli_shows_the_run_through_the_codec_endpoint(
    run: EncryptedRun, served_console: str
) -> None:
    def show(*codec: str) -> str:
        argv = [server_binary("temporal"), "workflow", "show", "-w", run.workflow_id]
        argv += ["--address", run.settings.temporal.address, "-o", "json", *codec]
        shown = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        return shown.stdout

    plain, decoded = await asyncio.gather(
        asyncio.to_thread(show),
        asyncio.to_thread(
            show, "--codec-endpoint", served_console, "--codec-auth", f"Bearer {TOKEN}"
        ),
    )

    def started_input(shown: str) -> dict[str, Any]:
        events = json.loads(shown)["events"]
        return events[0]["workflowExecutionStartedEventAttributes"]["input"]

    [started] = json_values(started_input(decoded))
    assert started["symbol"] == SYMBOL
    [sealed] = json_format.ParseDict(started_input(plain), Payloads()).payloads
    # The bars make the input large: without the endpoint, its reference to S3 shows.
    assert reference_in(sealed) is not None and SYMBOL.encode() not in sealed.data


@needs_chromium
async def test_the_embedded_web_ui_shows_inputs_through_the_consoles_codec(
    settings: Settings, tmp_path: Path
) -> None:
    """`up`'s dev server (its launch spec, with the endpoint `up` gives it), an encrypted start,
    and the console that endpoint names (no token here: a browser sends the token as the
    console's cookie, which the HTTP tests cover)."""
    base = free_port_base(lambda base: [base + offset for offset in (0, 1, 2, 10, 11)])
    ui = f"http://127.0.0.1:{base + 1}"
    desk = settings.model_copy(
        update={
            "data_dir": tmp_path,
            "temporal": settings.temporal.model_copy(
                update={"address": f"127.0.0.1:{base}", "ui_port": base + 1}
            ),
            "console": settings.console.model_copy(update={"port": base + 2, "token": None}),
        }
    )
    endpoint = codec_endpoint(desk)
    async with serving(desk), running_dev_server(desk, endpoint, tmp_path):
        told = httpx.get(f"{ui}/api/v1/settings", timeout=5).json()["Codec"]["Endpoint"]
        client = await connect(desk)
        workflow_id = f"encrypted-ui-{uuid.uuid4().hex[:6]}"
        # No worker polls this queue: the start event, sealed, is all the history needs.
        await client.start_workflow(
            "QuantAgent", {"symbol": SYMBOL, "timeframe": "1d"}, id=workflow_id, task_queue="none"
        )
        async with chromium_page(tmp_path / "profile") as page:
            await page.goto(f"{ui}/namespaces/default/workflows/{workflow_id}")
            # The input reads {"symbol": ..., "timeframe": "1d"} only once decoded.
            await page.wait_for("document.body.innerText.includes('timeframe')", timeout=90)
            shown = await page.evaluate("document.body.innerText")

    assert endpoint == told == f"http://127.0.0.1:{base + 2}/codec"
    assert SYMBOL in shown


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[None]:
    """The console over HTTP on its port until the block ends."""
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=settings.console.port, log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    try:
        yield
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def running_dev_server(
    settings: Settings, endpoint: str | None, folder: Path
) -> AsyncIterator[None]:
    """The dev server `up` would start, with its Web UI, until the block ends."""
    launch = temporal_dev_server(settings, {}, endpoint)
    ui_settings = f"http://127.0.0.1:{settings.temporal.ui_port}/api/v1/settings"
    with running(launch, folder / "temporal.log"):
        assert await asyncio.to_thread(wait_until, lambda: http_answers(ui_settings), timeout=60), (
            folder / "temporal.log"
        ).read_text()[-2000:]
        yield
