"""A run whose workflow task keeps failing is shown as stuck, with its message, wherever people look.

On the dev server (the time-skipping server has no visibility store): a ``StuckParent``
whose ``Poisoned`` child raises a plain RuntimeError in its workflow code. The reader finds
the child through its root, with its message, cause and step; the parent's steps, the live
view of ``quantdesk watch``, ``quantdesk runs`` and ``quantdesk status`` say stuck with the
message; and once the fix is "deployed" the run goes on by itself and ``watch`` ends.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from rich.console import Console
from temporalio.testing import WorkflowEnvironment

import cli.follow as cli_follow
import cli.runs as cli_runs
import cli.views as cli_views
from activities.stuck_runs import StuckRun, stuck_below, stuck_run, stuck_runs, stuck_steps
from cli.stack.commands import stuck_section
from cli.views import stuck_notice, titled
from shared.config import Settings, load_settings
from tests.screens import recording_console
from tests.stuck_workflows import (
    HEALED,
    POISON_MESSAGE,
    POISONED_STEP,
    PoisonedWorkflow,
    start_stuck_tree,
    stuck_worker,
    until_marked,
)
from workflows.progress import RunProgress

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-stuck"
SHOWN_WITHIN = 30.0


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def worker(dev_env: WorkflowEnvironment) -> AsyncIterator[None]:
    async with stuck_worker(dev_env.client, QUEUE):
        yield


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def tree(dev_env: WorkflowEnvironment, worker: None) -> tuple[str, str]:
    """A parent and its poisoned child, once the server has marked the child."""
    parent_id, child_id = await start_stuck_tree(dev_env.client, QUEUE, "stuck")
    await until_marked(dev_env.client, parent_id, child_id)
    return parent_id, child_id


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> Console:
    """What the CLI prints, recorded."""
    return recording_console(monkeypatch, cli_views, cli_runs, cli_follow)


def _settings(env: WorkflowEnvironment) -> Settings:
    return load_settings(temporal={"address": env.client.service_client.config.target_host})


async def _until_printed(shown: Console, *texts: str) -> str:
    """The recorded output once it holds every one of ``texts`` (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SHOWN_WITHIN
    while not all(text in (printed := shown.export_text(clear=False)) for text in texts):
        assert loop.time() < deadline, f"never printed {texts}: {printed[-2000:]}"
        await asyncio.sleep(0.2)
    return printed


async def test_the_reader_finds_a_poisoned_child_with_its_message_through_its_root(
    dev_env: WorkflowEnvironment, tree: tuple[str, str]
) -> None:
    parent_id, child_id = tree

    found = await stuck_runs(dev_env.client, parent_id)

    child = found[child_id]
    assert (child.message, child.failure_type) == (POISON_MESSAGE, "RuntimeError")
    assert child.cause == "workflow worker unhandled failure"
    assert (child.workflow_type, child.step, child.ancestors) == (
        "Poisoned",
        POISONED_STEP,
        [parent_id],
    )
    assert child.attempts >= 2 and child.since.tzinfo is not None
    assert parent_id not in found  # the parent's own task succeeds: it only waits
    assert await stuck_run(dev_env.client, parent_id) is None
    assert child_id not in await stuck_runs(dev_env.client, f"{parent_id}-elsewhere")
    assert child_id in await stuck_runs(dev_env.client)  # every marked run


async def test_the_parents_steps_show_the_stuck_child_with_its_message(
    dev_env: WorkflowEnvironment, tree: tuple[str, str]
) -> None:
    parent_id, child_id = tree
    handle = dev_env.client.get_workflow_handle(parent_id)
    progress = await handle.query("progress", result_type=RunProgress)
    stuck = await stuck_below(dev_env.client, parent_id, None)
    assert progress.children == {child_id: POISONED_STEP}
    assert list(stuck_steps(parent_id, progress, stuck)) == [POISONED_STEP]

    screen = Console(record=True, width=200)
    screen.print(
        titled(f"StuckParent {parent_id}")(progress, stuck_steps(parent_id, progress, stuck))
    )
    screen.print(stuck_notice(stuck.values()))
    text = screen.export_text()

    step_row = next(line for line in text.splitlines() if line.split()[:1] == [POISONED_STEP])
    assert f"stuck: {POISON_MESSAGE}" in step_row
    assert child_id in text and f"{POISONED_STEP} of {parent_id}" in text
    assert f"temporal workflow terminate -w {child_id}" in text
    assert "running" not in text


async def test_watch_says_stuck_then_ends_once_the_fix_is_deployed(
    dev_env: WorkflowEnvironment, worker: None, shown: Console
) -> None:
    parent_id, child_id = await start_stuck_tree(dev_env.client, QUEUE, "watched")
    watching = asyncio.create_task(cli_runs.watch_run(_settings(dev_env), parent_id))

    printed = await _until_printed(shown, "workflow task keeps failing", POISON_MESSAGE)
    HEALED.add(child_id)  # the fix, deployed
    await _until_printed(shown, f"{child_id}: its workflow task succeeds again")
    await dev_env.client.get_workflow_handle(child_id).signal(PoisonedWorkflow.finish)

    assert await asyncio.wait_for(watching, SHOWN_WITHIN) == 0
    assert f"{POISONED_STEP} of {parent_id}" in printed and f"-w {child_id}" in printed
    assert f"{parent_id}: completed" in shown.export_text()


async def test_watching_the_stuck_run_itself_shows_why_instead_of_an_error(
    dev_env: WorkflowEnvironment, worker: None, shown: Console
) -> None:
    parent_id, child_id = await start_stuck_tree(dev_env.client, QUEUE, "itself")
    await until_marked(dev_env.client, parent_id, child_id)  # the child exists by then
    watching = asyncio.create_task(cli_runs.watch_run(_settings(dev_env), child_id))

    printed = await _until_printed(shown, POISON_MESSAGE, "RuntimeError")
    HEALED.add(child_id)
    await dev_env.client.get_workflow_handle(child_id).signal(PoisonedWorkflow.finish)

    assert await asyncio.wait_for(watching, SHOWN_WITHIN) == 0
    assert "Traceback" not in printed and "failed state" not in printed


async def test_quantdesk_runs_lists_it_as_stuck(
    dev_env: WorkflowEnvironment, tree: tuple[str, str], shown: Console
) -> None:
    _, child_id = tree
    shown.print(await cli_runs.list_runs(_settings(dev_env), f'WorkflowId = "{child_id}"', 5))
    row = next(line for line in shown.export_text().splitlines() if child_id in line)
    assert "stuck" in row and "running" not in row


async def test_quantdesk_status_lists_the_runs_whose_workflow_task_keeps_failing(
    dev_env: WorkflowEnvironment, tree: tuple[str, str]
) -> None:
    parent_id, child_id = tree
    screen = Console(record=True, width=250)
    screen.print(await stuck_section(_settings(dev_env)))
    text = screen.export_text()
    assert "runs whose workflow task keeps failing" in text
    assert child_id in text and f"{POISONED_STEP} of {parent_id}" in text
    assert f"RuntimeError: {POISON_MESSAGE}" in text


async def test_a_server_without_visibility_lists_no_stuck_run(
    ts_env: WorkflowEnvironment,
) -> None:
    assert await stuck_runs(ts_env.client) == {}
    assert await stuck_run(ts_env.client, f"nothing-{uuid.uuid4()}") is None


async def test_a_run_is_below_its_ancestors_only() -> None:
    run = StuckRun.model_validate(
        {
            "workflow_id": "ar-pipeline-GOOG-debate",
            "run_id": "r",
            "workflow_type": "Debate",
            "message": "m",
            "cause": "c",
            "since": "2026-01-01T00:00:00Z",
            "attempts": 2,
            "ancestors": ["ar-pipeline-GOOG", "ar"],
            "step": "debate",
        }
    )
    assert run.child_of("ar") == "ar-pipeline-GOOG"
    assert run.child_of("ar-pipeline-GOOG") == "ar-pipeline-GOOG-debate"
    assert run.child_of("ar-pipeline-GOOG-debate") is None and run.child_of("other") is None
    progress = RunProgress(
        steps={},
        done=0,
        total=1,
        children={"ar-pipeline-GOOG": "pipeline GOOG"},
        usage={},
        elapsed_seconds=0,
    )
    assert list(stuck_steps("ar", progress, {run.workflow_id: run})) == ["pipeline GOOG"]
    assert list(stuck_steps("ar", None, {run.workflow_id: run})) == ["pipeline-GOOG"]
