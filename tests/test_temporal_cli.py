"""The door the product owner named: `quantdesk up`, then the bundled `temporal` CLI typed as a
user types it (no `--address`, no `--codec-endpoint`), on the embedded stack with payloads
encrypted, compressed and, when large, kept in S3.

An AutoRun is started with `temporal workflow start`, its progress queried while it runs, its
result read, described and its history shown; every query of every run in its tree answers
JSON; a QuantAgent started the same way reads back; a run parked on a missing API key says why
to `temporal workflow query`; the Web UI shows the same result and query answer in Chromium;
`down` takes the CLI's profile back. Without the profile `up` writes, every one of these
printed base64 (issue 35).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory

from cli.history_payloads import payloads_in
from shared.config import ENV_PREFIX, Settings
from shared.payload_keys import new_key_line
from tests.chromium import Page, chromium_binary, chromium_page
from tests.cli_process import (
    free_stack_base,
    run_quantdesk,
    run_temporal,
    stack_env,
    stack_settings,
)

pytestmark = pytest.mark.slow

QUEUE = "quantdesk"
RUN_TIMEOUT = 240.0
PLAIN = {b"json/plain", b"binary/null"}
"""What a payload's encoding is once the codec has opened it: quantdesk's own JSON, or None."""
needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it)"
)


@dataclass
class Stack:
    """The variables `up` and `temporal` run with, and what `up` printed."""

    env: dict[str, str]
    settings: Settings
    up: subprocess.CompletedProcess[str]
    profile: Path

    def temporal(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``temporal ARGS`` as a user types it, with the stack's environment only."""
        done = run_temporal(self.env, *args)
        assert done.returncode == 0, f"temporal {' '.join(args)}: {done.stderr}"
        return done

    def json(self, *args: str) -> Any:
        """``temporal ARGS -o json``, parsed."""
        return json.loads(self.temporal(*args, "-o", "json").stdout)

    def query(self, workflow_id: str, name: str) -> Any:
        """The one answer of query ``name``, as the CLI prints it."""
        [answer] = self.json("workflow", "query", "--workflow-id", workflow_id, "--name", name)[
            "queryResult"
        ]
        return answer


@dataclass
class AutoRun:
    """An AutoRun started from the CLI, with the progress answers read while it ran."""

    workflow_id: str
    progress: list[Any] = field(default_factory=list)


def _readable(value: Any) -> bool:
    """Whether the CLI printed a value, not a payload it could not open
    (``{"metadata": {...}, "data": "<base64>"}``)."""
    return not (isinstance(value, dict) and {"metadata", "data"} <= set(value))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("temporal-cli") / "data"
    base = free_stack_base(data_dir)
    own, settings = stack_settings(data_dir, base)
    encrypted = {
        f"{ENV_PREFIX}CODEC__ENABLED": "true",
        f"{ENV_PREFIX}CODEC__KEYS": new_key_line("2026-12"),
    }
    env = stack_env(own, **encrypted)
    # The parked run's reason: no OpenAI key reaches the workers.
    for name in ("OPENAI_API_KEY", f"{ENV_PREFIX}OPENAI__API_KEY"):
        env.pop(name, None)
    up = run_quantdesk(env, "up")
    stack = Stack(env, settings, up, Path(env["TEMPORAL_CONFIG_FILE"]))
    yield stack
    run_quantdesk(env, "down")


def _start(stack: Stack, flow: str, prefix: str, given: dict[str, Any]) -> str:
    workflow_id = f"{prefix}-{uuid.uuid4().hex[:6]}"
    stack.temporal(
        "workflow", "start", "--type", flow, "--task-queue", QUEUE,
        "--workflow-id", workflow_id, "--input", json.dumps(given),
    )  # fmt: skip
    return workflow_id


def _status(stack: Stack, workflow_id: str) -> str:
    described = stack.json("workflow", "describe", "--workflow-id", workflow_id)
    return str(described["workflowExecutionInfo"]["status"])


@pytest.fixture(scope="module")
def autorun(stack: Stack) -> AutoRun:
    """Three names with their Reflects, queried for progress every half second until done."""
    assert stack.up.returncode == 0, stack.up.stdout + stack.up.stderr
    run = AutoRun(_start(stack, "AutoRun", "cli-autorun", {"max_tickers": 3}))
    deadline = time.monotonic() + RUN_TIMEOUT
    while _status(stack, run.workflow_id) == "WORKFLOW_EXECUTION_STATUS_RUNNING":
        assert time.monotonic() < deadline, "the AutoRun did not finish"
        done = run_temporal(
            stack.env, "workflow", "query", "-o", "json",
            "--workflow-id", run.workflow_id, "--name", "progress",
        )  # fmt: skip
        # Before its first workflow task a run has no query handler yet.
        if done.returncode == 0:
            run.progress.extend(json.loads(done.stdout)["queryResult"])
        time.sleep(0.5)
    return run


def test_up_writes_the_profile_the_cli_reads_with_no_flag(stack: Stack) -> None:
    assert stack.up.returncode == 0, stack.up.stdout + stack.up.stderr
    assert "Temporal CLI     `temporal` reads runs here with no flag" in stack.up.stdout
    assert stack.profile.exists()


def test_progress_queried_while_it_runs_reads_as_json(stack: Stack, autorun: AutoRun) -> None:
    assert autorun.progress, "no progress answer while the run ran"
    assert all(_readable(answer) and "steps" in answer for answer in autorun.progress)
    assert any(answer["phase"] != "done" for answer in autorun.progress)


def test_its_result_reads_as_json(stack: Stack, autorun: AutoRun) -> None:
    shown = stack.temporal("workflow", "result", "--workflow-id", autorun.workflow_id).stdout
    [line] = [line for line in shown.splitlines() if line.strip().startswith("Result ")]
    result = json.loads(line.split("Result", 1)[1])
    assert result["workflow_id"] == autorun.workflow_id
    assert result["decisions"] and all(d["rating"] for d in result["decisions"])


def test_describe_shows_the_result_as_json(stack: Stack, autorun: AutoRun) -> None:
    described = stack.json("workflow", "describe", "--workflow-id", autorun.workflow_id)
    assert _readable(described["result"]) and described["result"]["candidates"]


def _tree(stack: Stack, root: str) -> list[tuple[str, str]]:
    """(workflow id, type) of every run under ``root``, itself included."""
    listed = stack.json("workflow", "list", "--query", f"RootWorkflowId='{root}'")
    return [(run["execution"]["workflowId"], run["type"]["name"]) for run in listed]


def test_every_payload_of_every_history_in_its_tree_is_opened(
    stack: Stack, autorun: AutoRun
) -> None:
    """Sealed, compressed or stored in S3 as they are, `workflow show` prints each run's
    payloads as the JSON the workflows wrote."""
    seen: dict[str, int] = {}
    for workflow_id, flow in _tree(stack, autorun.workflow_id):
        shown = stack.temporal("workflow", "show", "--workflow-id", workflow_id, "-o", "json")
        history = WorkflowHistory.from_json(workflow_id, shown.stdout)
        encodings = {p.metadata["encoding"] for e in history.events for p in payloads_in(e)}
        assert encodings <= PLAIN, (workflow_id, encodings)
        seen[flow] = seen.get(flow, 0) + 1
    assert set(seen) == {"AutoRun", "Scan", "Pipeline", "Debate", "Risk", "Portfolio", "Reflect"}


def test_every_query_of_every_run_in_its_tree_answers_json(stack: Stack, autorun: AutoRun) -> None:
    """The queries each run declares (`temporal workflow metadata`), the SDK's own aside."""
    asked = []
    for workflow_id, flow in _tree(stack, autorun.workflow_id):
        [metadata] = stack.json("workflow", "metadata", "--workflow-id", workflow_id)["queryResult"]
        names = [q["name"] for q in metadata["definition"]["queryDefinitions"]]
        for name in (n for n in names if not n.startswith("__")):
            answer = stack.query(workflow_id, name)
            assert _readable(answer), (workflow_id, name, answer)
            asked.append((flow, name))
    assert {("Pipeline", "state"), ("Portfolio", "plan"), ("Reflect", "progress")} <= set(asked)


def test_a_quantagent_started_from_the_cli_reads_back(stack: Stack) -> None:
    workflow_id = _start(
        stack, "QuantAgent", "cli-quantagent", {"symbol": "GOOG", "timeframe": "1d"}
    )
    result = stack.json("workflow", "result", "--workflow-id", workflow_id)["result"]
    assert result["symbol"] == "GOOG" and result["decision"]["decision"] in ("LONG", "SHORT")
    assert stack.query(workflow_id, "progress")["steps"]


def test_a_parked_runs_progress_names_its_reason(stack: Stack) -> None:
    workflow_id = _start(stack, "AutoRun", "cli-parked", {"llm": {"provider": "openai"}})
    deadline = time.monotonic() + RUN_TIMEOUT
    waiting: dict[str, str] = {}
    while not waiting:
        assert time.monotonic() < deadline, "the run never parked"
        time.sleep(0.5)
        try:
            waiting = stack.query(workflow_id, "progress")["waiting"]
        except AssertionError:
            continue  # no workflow task has run yet
    stack.temporal("workflow", "terminate", "--workflow-id", workflow_id, "--reason", "test done")
    assert all("OPENAI_API_KEY" in reason for reason in waiting.values()), waiting
    assert any(step.startswith("scan › ") for step in waiting)


async def _run_page(page: Page, ui: str, workflow_id: str) -> str:
    """The run's page in the Web UI: its URL, with the run id the UI redirects to."""
    await page.goto(f"{ui}/namespaces/default/workflows/{workflow_id}")
    await page.wait_for("location.pathname.split('/').length > 5", timeout=60)
    href: str = await page.evaluate("location.href")
    return "/".join(href.split("/")[:8])


@needs_chromium
async def test_the_web_ui_shows_the_result_and_a_query_answer(
    stack: Stack, autorun: AutoRun, tmp_path: Path
) -> None:
    """Through the codec endpoint `up` gave the dev server: the result on the run's page, and
    the `progress` query run from its Queries tab."""
    ui = f"http://127.0.0.1:{stack.settings.temporal.ui_port}"
    async with chromium_page(tmp_path / "profile") as page:
        run_page = await _run_page(page, ui, autorun.workflow_id)
        await page.wait_for(f"document.body.innerText.includes('{autorun.workflow_id}-pipeline')")
        result_shown = await page.evaluate("document.body.innerText")
        await page.goto(f"{run_page}/query")
        run_query = (
            "[...document.querySelectorAll('button')].find(b => b.innerText.trim() == 'Run Query')"
        )
        await page.wait_for(f"{run_query} && !{run_query}.disabled")
        await page.evaluate(f"{run_query}.click()")
        # The answer's editor draws only the lines in view: its first ones.
        await page.wait_for('document.body.innerText.includes(\'"phase": "done"\')')
        query_shown = await page.evaluate("document.body.innerText")
    assert '"candidates"' in result_shown and '"decisions"' in result_shown
    assert '"phase": "done"' in query_shown and "quantdesk-inline" not in query_shown


def test_down_takes_the_profile_back(stack: Stack) -> None:
    assert stack.up.returncode == 0
    down = run_quantdesk(stack.env, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    listed = run_temporal(stack.env, "config", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout or "[]") == []
