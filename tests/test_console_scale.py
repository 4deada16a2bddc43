"""The console's pages at a hundred names, on the Temporal dev server (real visibility).

Two AutoRun-shaped trees (``tests/run_family.py``) finish while children of theirs still
wait on their timers, as Reflect runs do. The Runs list shows the roots, newest first, each
with its children counted by status, where a flat list would be all waiting children; a
run's children are one click away (and `quantdesk runs` lists the same way); the Run page
shows the sixty tickers 25 at a time, its steps folded, and a page that is not there gets
a message. A name a running batch has decided shows done before its batch returns.
"""

from __future__ import annotations

import asyncio
import html
import re
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

import cli.runs as cli_runs
from activities.stuck_runs import StuckRun
from cli.runs import list_runs, runs_filter
from client.steps import step_rows
from console.app import create_app
from shared.config import load_settings
from shared.errors import InvalidInput
from tests.run_family import FamilyInput, FamilyWorkflow, family_worker, ticker
from tests.screens import recording_console
from workflows.progress import StepState

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = f"console-scale-{uuid.uuid4().hex[:6]}"
TICKERS, NAPPING = 60, 30
LISTED_WITHIN = 30.0


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def family(
    dev_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[httpx.AsyncClient, str, str]]:
    """The console over the dev server, a big finished family and a later small one; the
    console's HTTP client and both roots' ids (big, small)."""
    client = dev_env.client
    settings = load_settings(
        data_dir=tmp_path_factory.mktemp("console-scale"),
        temporal={"address": client.service_client.config.target_host},
    )
    big, small = f"family-big-{uuid.uuid4().hex[:6]}", f"family-small-{uuid.uuid4().hex[:6]}"
    async with family_worker(client, QUEUE):
        await client.execute_workflow(
            FamilyWorkflow.run,
            FamilyInput(tickers=TICKERS, napping=NAPPING),
            id=big,
            task_queue=QUEUE,
        )
        await client.execute_workflow(
            FamilyWorkflow.run, FamilyInput(tickers=3, napping=1), id=small, task_queue=QUEUE
        )
        transport = httpx.ASGITransport(app=create_app(settings))
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as http:
            try:
                yield http, big, small
            finally:
                await asyncio.gather(
                    *(
                        client.get_workflow_handle(f"{root}-pipeline-{ticker(n)}").terminate()
                        for root, napping in ((big, NAPPING), (small, 1))
                        for n in range(napping)
                    )
                )


async def shown_when(http: httpx.AsyncClient, path: str, ready: Callable[[str], bool]) -> str:
    """The page at ``path`` (entities decoded) once ``ready`` holds of it: visibility lags
    a moment behind the runs."""
    deadline = asyncio.get_running_loop().time() + LISTED_WITHIN
    while True:
        answer = await http.get(path)
        text = html.unescape(answer.text)
        if answer.status_code == 200 and ready(text):
            return text
        assert asyncio.get_running_loop().time() < deadline, f"{path} never ready:\n{text[:3000]}"
        await asyncio.sleep(0.3)


def listed(page: str) -> list[str]:
    """The workflow ids of the list's rows, in order."""
    return re.findall(r'<tr>\s*<td><a href="/runs/([^"?]+)">', page)


async def test_the_list_shows_roots_newest_first_with_their_children_counted(
    family: tuple[httpx.AsyncClient, str, str],
) -> None:
    http, big, small = family
    children = TICKERS + 1  # and the Portfolio
    counted = f"{children} children</a>: {children - NAPPING} completed, {NAPPING} running"

    page = await shown_when(http, "/runs?limit=20", lambda text: counted in text)

    rows = listed(page)
    assert rows.index(small) < rows.index(big)  # newest started first
    assert not any("-pipeline-" in row for row in rows)
    assert f'<a href="/runs?parent={small}">4 children</a>: 3 completed, 1 running' in page


async def test_a_flat_list_of_every_run_would_be_filled_by_waiting_children(
    family: tuple[httpx.AsyncClient, str, str],
) -> None:
    http, big, _ = family
    waiting = f"{big}-pipeline-{ticker(NAPPING - 1)}"

    page = await shown_when(http, "/runs?children=on&limit=20", lambda text: waiting in text)

    assert big not in listed(page)  # what the list was before it showed roots


async def test_a_runs_children_are_listed_by_its_id(
    family: tuple[httpx.AsyncClient, str, str],
) -> None:
    http, big, _ = family

    page = await shown_when(
        http, f"/runs?parent={big}&limit=100", lambda text: len(listed(text)) == TICKERS + 1
    )

    assert 'id="parent"' in page and f'href="/runs/{big}"' in page
    pipelines = {f"{big}-pipeline-{ticker(n)}" for n in range(TICKERS)}
    assert set(listed(page)) == pipelines | {f"{big}-portfolio"}


async def test_the_run_page_shows_its_tickers_25_at_a_time(
    family: tuple[httpx.AsyncClient, str, str],
) -> None:
    http, big, _ = family

    first = html.unescape((await http.get(f"/runs/{big}")).text)
    last = html.unescape((await http.get(f"/runs/{big}/live", params={"page": "3"})).text)

    def tickers(page: str) -> list[str]:
        table = page.split('id="tickers"')[1].split("</table>")[0]
        return re.findall(r'href="/runs/[^"]+-pipeline-(T\d+)"', table)

    steps = first.split('id="steps"')[1].split("</table>")[0]
    assert steps.count("<tr") == 2  # the header and the folded pipelines
    assert f'<b>pipeline</b> <span class="muted">× {TICKERS}</span>' in steps
    assert f"{NAPPING} running" in steps and f"{TICKERS - NAPPING} done" in steps
    assert tickers(first) == [ticker(n) for n in range(25)]
    assert "1–25 of 60" in first and 'href="?page=2" rel="next"' in first
    assert tickers(last) == [ticker(n) for n in range(50, TICKERS)]
    assert "51–60 of 60" in last and 'rel="next"' not in last


async def test_quantdesk_runs_lists_roots_with_their_children_counted_and_children_by_filter(
    family: tuple[httpx.AsyncClient, str, str],
    dev_env: WorkflowEnvironment,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    http, big, small = family
    await shown_when(http, "/runs?limit=20", lambda text: "30 running" in text)  # listed by now
    settings = load_settings(temporal={"address": dev_env.client.service_client.config.target_host})
    screen = recording_console(monkeypatch, cli_runs)

    def rows(text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if line.strip().startswith("family-")]

    screen.print(await list_runs(settings, runs_filter(None, None, None, False, None, False), 20))
    roots = rows(screen.export_text(clear=True))
    screen.print(await list_runs(settings, runs_filter(None, None, None, False, big, False), 100))
    children = rows(screen.export_text(clear=True))

    ids = [row.split()[0] for row in roots]
    assert ids.index(small) < ids.index(big) and not any("-pipeline-" in i for i in ids)
    assert roots[ids.index(small)].endswith("4: 3 completed, 1 running")
    assert roots[ids.index(big)].endswith(
        f"{TICKERS + 1}: {TICKERS + 1 - NAPPING} completed, {NAPPING} running"
    )
    assert {row.split()[0] for row in children} == {
        *(f"{big}-pipeline-{ticker(n)}" for n in range(TICKERS)),
        f"{big}-portfolio",
    }
    with pytest.raises(InvalidInput, match="`parent`: --parent and --all"):
        runs_filter(None, None, None, False, big, True)


async def test_a_folded_step_that_needs_a_person_is_still_listed() -> None:
    steps = {f"pipeline T{n:03d}": StepState.DONE for n in range(20)}
    steps |= {"pipeline T005": StepState.FAILED, "pipeline T007": StepState.RUNNING}
    steps |= {"portfolio": StepState.PENDING}
    held = StuckRun(
        workflow_id="x-pipeline-T009",
        run_id="r",
        workflow_type="Pipeline",
        message="poisoned",
        cause="workflow worker unhandled failure",
        since=datetime.now(UTC),
        attempts=3,
        ancestors=["x"],
        step="pipeline T009",
    )

    rows = step_rows(steps, {"pipeline T007": "a key was refused"}, {"pipeline T009": held})

    assert [(r.name, r.state, r.message) for r in rows] == [
        ("pipeline", "done", ""),
        ("pipeline T005", "failed", ""),
        ("pipeline T007", "waiting", "a key was refused"),
        ("pipeline T009", "stuck", "poisoned"),
        ("portfolio", "pending", ""),
    ]
    assert rows[0].count == 20 and rows[0].states == "17 done, 1 failed, 1 waiting, 1 stuck"
    assert rows[0].detail == "tickers"


@pytest.mark.parametrize(
    ("page", "status", "message"),
    [
        ("4", 404, "no page 4: the 60 tickers fill 3 page(s) of 25"),
        ("0", 400, "page '0' is not a page number: pages count from 1"),
        ("two", 400, "page 'two' is not a page number"),
    ],
)
async def test_a_page_that_is_not_there_is_refused_with_a_message(
    family: tuple[httpx.AsyncClient, str, str], page: str, status: int, message: str
) -> None:
    http, big, small = family

    answer = await http.get(f"/runs/{big}", params={"page": page})

    assert answer.status_code == status and message in html.unescape(answer.text)


def ticker_states(page: str) -> dict[str, str]:
    """Each ticker row's state on a Run page."""
    table = page.split('id="tickers"')[1].split("</table>")[0]
    rows = re.findall(r'-pipeline-(T\d+)".*?class="state state-(\w+)"', table, re.S)
    return dict(rows)


async def test_a_name_done_in_a_running_batch_shows_done_before_the_batch_returns(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """An AutoRun shows each batched name running until its whole batch returns; the page
    asks the running batch, which knows the name is done."""
    client = dev_env.client
    settings = load_settings(
        data_dir=tmp_path, temporal={"address": client.service_client.config.target_host}
    )
    queue, root = f"{QUEUE}-held", f"family-held-{uuid.uuid4().hex[:6]}"
    first, held = ticker(0), ticker(1)
    async with family_worker(client, queue):
        handle = await client.start_workflow(
            FamilyWorkflow.run,
            FamilyInput(tickers=3, napping=0, batched=2),
            id=root,
            task_queue=queue,
        )
        transport = httpx.ASGITransport(app=create_app(settings))
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as http:
            page = await shown_when(
                http, f"/runs/{root}", lambda text: ticker_states(text).get(first) == "done"
            )
            own = await handle.query("progress", result_type=dict[str, Any])
            assert own["steps"][f"pipeline {first}"] == "running"  # the AutoRun's own view
            assert ticker_states(page)[held] == "running"

            await client.get_workflow_handle(f"{root}-batch-1").signal("release")
            await handle.result()
            page = await shown_when(http, f"/runs/{root}", lambda text: "completed" in text)

    assert ticker_states(page) == {first: "done", held: "done", ticker(2): "done"}
