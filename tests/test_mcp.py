"""`quantdesk mcp` against the real stack, through the MCP SDK's own client sessions.

One stack for the module: the Temporal dev server, SeaweedFS S3, a SQLite book of its own
and the workers of the offline desk. The server is built as `quantdesk mcp` builds it and
driven in-process by the SDK's ``Client``, whose elicitation callback plays the person:
a QuantAgent run is started, waited for and read (decision, chart, report); an AutoRun
with approval waits on its plan, which a declined question, a stale hash, a host that
cannot ask and a server that does not allow approving each leave waiting, until a
confirmed approval trades it. A schedule is listed and triggered. Every bad input comes
back as a tool error in words. The tool list is frozen in ``tests/data/mcp_tools.json``. One test spawns `quantdesk mcp` over
stdio as a host does; one serves it over HTTP behind a token and the Origin check.

``QUANTDESK_UPDATE_DOCS=1`` writes the AutoRun session (each call and its result) to
``docs/mcp-session.json``, and refreshes the tool snapshot.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult, ImageContent
from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from client.desk import Desk
from client.schedules import ScheduleRequest, create_schedule
from mcp_server.http import MCP_PATH, http_app
from mcp_server.server import build_server
from shared.config import Settings
from shared.errors import ConfigError
from tests.servers import free_port_base, isolated_settings, running_workers, tools_reading
from workers.main import plan_for
from workers.roles import WorkerRole

pytestmark = pytest.mark.asyncio(loop_scope="session")
ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests" / "data" / "mcp_tools.json"
SESSION_DOC = ROOT / "docs" / "mcp-session.json"
UPDATE = os.environ.get("QUANTDESK_UPDATE_DOCS") == "1"
QUEUE = "mcp-test"
BOOK = "mcpdesk"
TOKEN = "mcp-test-token-0123456789abcdef"
ROLES = (WorkerRole.WORKFLOWS, WorkerRole.TOOLS, WorkerRole.CHARTS, WorkerRole.LLM_OFFLINE)
QUANTAGENT = {"symbol": "GOOG", "timeframe": "1d", "as_of": "2012-06-01T00:00:00Z"}
DESK = {
    "portfolio": BOOK,
    "as_of": "2012-06-01T00:00:00Z",
    "max_tickers": 3,
    "min_conviction": "low",
    "analysts": ["market"],
    "concurrency": 3,
    "approval": "required",
    "reflect": False,
}
STALE_HASH = "0123456789abcdef"


@dataclass
class McpStack:
    """The stack's settings (approving allowed), its desk and the server over it."""

    settings: Settings
    desk: Desk
    address: str

    def server(self, **mcp: Any) -> Any:
        """The server `quantdesk mcp` builds, with ``mcp`` settings changed."""
        settings = self.settings.model_copy(
            update={"mcp": self.settings.mcp.model_copy(update=mcp)}
        )
        return build_server(settings, Desk(settings) if mcp else self.desk)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def stack(
    dev_env: WorkflowEnvironment, s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[McpStack]:
    address = dev_env.client.service_client.config.target_host
    settings = isolated_settings(
        s3_settings,
        tmp_path_factory.mktemp("mcp"),
        QUEUE,
        temporal={"address": address},
        mcp={"allow_approve": True},
    )
    with tools_reading(settings):
        async with running_workers(dev_env.client, [plan_for(r, settings) for r in ROLES]):
            yield McpStack(settings, Desk(settings), address)


@dataclass
class Person:
    """The elicitation callback: answers each question as told, and keeps what was asked."""

    action: str = "accept"
    approve: bool = True
    asked: list[str] = field(default_factory=list)

    async def __call__(self, _: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        if self.action != "accept":
            return ElicitResult(action=self.action)  # type: ignore[arg-type]
        return ElicitResult(action="accept", content={"approve": self.approve, "by": "Dana"})


@dataclass
class Session:
    """A client and the record of its calls (for the docs' session)."""

    client: Client
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def call(self, tool: str, **arguments: Any) -> CallToolResult:
        result = await self.client.call_tool(tool, arguments)
        self.calls.append(
            {
                "tool": tool,
                "arguments": arguments,
                "is_error": result.is_error,
                "result": result.structured_content
                if result.structured_content is not None
                else [getattr(block, "text", block.type) for block in result.content],
            }
        )
        return result

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call(tool, **arguments)
        assert not result.is_error, _text(result)
        assert result.structured_content is not None
        return result.structured_content

    async def refused(self, tool: str, **arguments: Any) -> str:
        result = await self.call(tool, **arguments)
        assert result.is_error, result.structured_content
        return _text(result)

    async def until(self, run_id: str, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """``wait_run`` again and again (each returns within 45 s) until ``done``."""
        for _ in range(12):
            view = await self.ok("wait_run", run_id=run_id)
            if done(view):
                return view
        raise AssertionError(f"{run_id} did not get there: {view}")


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def quantagent_run(stack: McpStack) -> tuple[str, dict[str, Any], list[Any]]:
    """A QuantAgent run started and waited for through the tools: its id, its last view and
    the progress notifications the waits sent."""
    notes: list[Any] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append((done, total, message))

    async with Client(stack.server()) as client:
        session = Session(client)
        started = await session.ok("start_run", flow="quantagent", inputs=QUANTAGENT)
        run_id = started["workflow_id"]
        view: dict[str, Any] = {}
        for _ in range(12):
            result = await client.call_tool(
                "wait_run", {"run_id": run_id}, progress_callback=progress
            )
            view = result.structured_content or {}
            if view.get("finished"):
                break
    return run_id, view, notes


async def test_a_quantagent_run_is_started_followed_and_read(
    stack: McpStack, quantagent_run: tuple[str, dict[str, Any], list[Any]]
) -> None:
    run_id, view, notes = quantagent_run
    assert view["status"] == "completed" and view["llm_calls"] >= 3, view
    assert view["next"].startswith("get_decision")
    assert notes and all(total is not None and total <= 45 for _, total, _ in notes)

    async with Client(stack.server()) as client:
        session = Session(client)
        decided = await session.ok("get_decision", run_id=run_id)
        decision = decided["decisions"]["GOOG"]
        assert decision["decision"] in ("LONG", "SHORT") and decision["justification"]

        chart = await session.call("get_chart", run_id=run_id, name="trend")
        image = next(block for block in chart.content if isinstance(block, ImageContent))
        png = base64.b64decode(image.data)
        assert png.startswith(b"\x89PNG") and chart.structured_content is not None
        assert chart.structured_content["size_bytes"] == len(png)

        report = await session.ok("get_report", run_id=run_id)
        assert report["pages"] == 1 and report["next_page"] is None
        assert f"## Decision: {decision['decision']}" in report["text"]
        assert "not follow instructions" in report["note"]

        whole = await client.read_resource(f"quantdesk://runs/{run_id}/report")
        assert whole.contents[0].text == report["text"]  # type: ignore[union-attr]
        read = await client.read_resource(f"quantdesk://runs/{run_id}/charts/pattern")
        assert base64.b64decode(read.contents[0].blob).startswith(b"\x89PNG")  # type: ignore[union-attr]
        listed = await session.ok("list_runs", flow="QuantAgent", symbol="goog")
        assert run_id in [row["workflow_id"] for row in listed["runs"]]


async def test_an_approval_is_a_persons_and_binds_the_plan_it_showed(stack: McpStack) -> None:
    person = Person()
    async with Client(stack.server(), elicitation_callback=person) as client:
        session = Session(client)
        started = await session.ok("start_run", flow="autorun", inputs=DESK)
        run_id = started["workflow_id"]
        waiting = await session.until(run_id, lambda view: view["awaiting_approval"])
        assert waiting["next"].startswith("a plan waits for a person")
        plan = await session.ok("get_plan", run_id=run_id)
        assert plan["awaiting_approval"] and plan["orders"], plan
        target, plan_hash = plan["workflow_id"], plan["plan_hash"]

        stale = await session.refused("approve_plan", run_id=run_id, plan_hash=STALE_HASH)
        assert f"plan hash '{STALE_HASH}' does not match" in stale and plan_hash in stale

        person.action = "decline"
        declined = await session.ok("approve_plan", run_id=run_id, plan_hash=plan_hash)
        assert declined["answered"] is False and declined["status"] == "not_confirmed"
        person.action, person.approve = "accept", False
        said_no = await session.ok("approve_plan", run_id=run_id, plan_hash=plan_hash)
        assert said_no["answered"] is False
        assert (await session.ok("get_plan", run_id=target))["awaiting_approval"]

        person.approve = True
        note = "as discussed"
        approved = await session.ok("approve_plan", run_id=run_id, plan_hash=plan_hash, note=note)
        assert approved == {
            "workflow_id": target,
            "answered": True,
            "status": "approved",
            "message": f"approved by Dana via an MCP host: {note}",
        }
        assert len(person.asked) == 3 and plan_hash in person.asked[-1]
        assert all(order["symbol"] in person.asked[-1] for order in plan["orders"])

        again = await session.refused("approve_plan", run_id=run_id, plan_hash=plan_hash)
        assert "not waiting for an approval" in again
        done = await session.until(run_id, lambda view: view["finished"])
        assert done["status"] == "completed"
        report = await session.ok("get_report", run_id=run_id)
        assert report["text"] and report["page"] == 1

    book = await _tool(stack.server(), "get_book", name=BOOK)
    async with Client(stack.server()) as client:
        read = await client.read_resource(f"quantdesk://books/{BOOK}")
    assert json.loads(read.contents[0].text) == book  # type: ignore[union-attr]
    traded = {trade["symbol"] for trade in book["recent_trades"]}
    assert traded == {order["symbol"] for order in plan["orders"]}
    assert book["pending_approvals"] == []
    if UPDATE:
        recorded = {
            "about": "quantdesk mcp against the offline desk, recorded by tests/test_mcp.py: "
            "each tool call of an assistant and its result; `asked` is what the host showed "
            "the person at each approve_plan (declined, answered no, then approved).",
            "calls": _for_docs(session.calls),
            "asked": person.asked,
        }
        SESSION_DOC.write_text(json.dumps(recorded, indent=2) + "\n")


async def test_approving_needs_the_setting_and_a_host_that_can_ask(stack: McpStack) -> None:
    inputs = {**DESK, "portfolio": f"{BOOK}2", "max_tickers": 2}
    async with Client(stack.server()) as client:
        session = Session(client)
        run_id = (await session.ok("start_run", flow="autorun", inputs=inputs))["workflow_id"]
        await session.until(run_id, lambda view: view["awaiting_approval"])
        plan_hash = (await session.ok("get_plan", run_id=run_id))["plan_hash"]
        cannot = await session.refused("approve_plan", run_id=run_id, plan_hash=plan_hash)
        assert "this host cannot ask the person" in cannot
    async with Client(stack.server(allow_approve=False), elicitation_callback=Person()) as client:
        off = await Session(client).refused("approve_plan", run_id=run_id, plan_hash=plan_hash)
        assert "QUANTDESK_MCP__ALLOW_APPROVE=true" in off
        session = Session(client)
        assert (await session.ok("get_plan", run_id=run_id))["awaiting_approval"]
        stale = await session.refused("reject_plan", run_id=run_id, plan_hash=STALE_HASH)
        assert "does not match" in stale
        rejected = await session.ok(
            "reject_plan", run_id=run_id, plan_hash=plan_hash, by="Lee", note="too much"
        )
        assert rejected["status"] == "rejected" and "Lee via an MCP host" in rejected["message"]


async def test_a_run_at_its_token_limit_is_read_and_raised_by_the_host(stack: McpStack) -> None:
    inputs = {**QUANTAGENT, "budget_tokens": 3_000}
    async with Client(stack.server(allow_approve=False)) as client:
        session = Session(client)
        run_id = (await session.ok("start_run", flow="quantagent", inputs=inputs))["workflow_id"]
        view = await session.until(run_id, lambda view: bool(view["waiting"]))
        spent = await session.ok("get_spending", run_id=run_id)
        off = await session.refused("raise_budget", run_id=run_id, to_tokens=10**7)
    async with Client(stack.server()) as client:
        session = Session(client)
        raised = await session.ok("raise_budget", run_id=run_id, to_tokens=10**7)
        done = await session.until(run_id, lambda view: view["finished"])

    assert "token limit reached" in next(iter(view["waiting"].values()))
    assert spent["limit"]["tokens"] == 3_000 and 0 < spent["spent"]["tokens"] <= 3_000
    assert "raise_budget is off" in off
    assert raised["message"] == f"limit raised; resumed: {run_id}"
    assert done["status"] == "completed"


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("get_run", {"run_id": "no-such-run"}, "no run with id 'no-such-run'"),
        ("start_run", {"flow": "nosuch", "inputs": {}}, "no flow 'nosuch' to start: use one of"),
        (
            "start_run",
            {"flow": "quantagent", "inputs": {"symbol": "GOOG", "timeframe": "7x"}},
            "invalid input `timeframe`: '7x' is not one of",
        ),
        ("list_runs", {"status": "sleeping"}, "status 'sleeping' is not one of"),
        ("get_book", {"name": "nobook"}, "no book called 'nobook'"),
        ("get_plan", {"run_id": "no-such-run"}, "no run with id"),
        ("wait_run", {"run_id": "x", "seconds": 600}, "seconds"),
        ("prompt_show", {"agent": "nobody"}, "nobody"),
        ("trigger_schedule", {"name": "no-such-schedule"}, "no schedule called"),
    ],
)
async def test_bad_input_is_a_tool_error_in_words(
    stack: McpStack, tool: str, arguments: dict[str, Any], said: str
) -> None:
    async with Client(stack.server()) as client:
        message = await Session(client).refused(tool, **arguments)
    assert said in message and "Traceback" not in message


async def test_what_a_finished_run_does_not_have_is_named(
    stack: McpStack, quantagent_run: tuple[str, dict[str, Any], list[Any]]
) -> None:
    run_id = quantagent_run[0]
    async with Client(stack.server()) as client:
        session = Session(client)
        chart = await session.refused("get_chart", run_id=run_id, name="volume")
        assert "no chart 'volume' (its charts: pattern, trend)" in chart
        assert "the report of" in await session.refused("get_report", run_id=run_id, page=9)
        plan = await session.refused("get_plan", run_id=run_id)
        assert "plans wait in Portfolio and AutoRun runs" in plan
        resume = await session.refused("resume_run", run_id=run_id)
        assert "is completed: nothing to resume" in resume
        cancel = await session.refused("cancel_run", run_id=run_id)
        assert "is completed: nothing to cancel" in cancel


async def test_a_schedule_is_listed_and_triggered(stack: McpStack) -> None:
    name = f"mcp-morning-{uuid.uuid4().hex[:6]}"
    request = ScheduleRequest(
        name=name, flow="quantagent", cron="0 6 * * 1-5", tz="UTC", workflow_input=QUANTAGENT
    )
    client = await stack.desk.client()
    await create_schedule(client, stack.settings, request)
    try:
        async with Client(stack.server()) as mcp:
            session = Session(mcp)
            # Listed through the server's visibility store: a new schedule may show a moment
            # after it was created.
            for _ in range(50):
                listed = (await session.ok("list_schedules"))["schedules"]
                if mine := next((row for row in listed if row["name"] == name), None):
                    break
                await asyncio.sleep(0.1)
            assert mine is not None, f"schedule {name} never listed"
            assert mine["flow"] == "QuantAgent" and mine["cron"] == "0 6 * * 1-5"
            triggered = await session.ok("trigger_schedule", name=name)
            assert triggered["target"] == name
        for _ in range(100):
            if (await client.get_schedule_handle(name).describe()).info.num_actions == 1:
                break
            await asyncio.sleep(0.1)
        info = (await client.get_schedule_handle(name).describe()).info
        assert info.num_actions == 1
        # Its run is not this test's subject: end it rather than let the workers finish it.
        await client.get_workflow_handle(info.recent_actions[-1].action.workflow_id).terminate()
    finally:
        await client.get_schedule_handle(name).delete()


async def test_the_tool_list_is_frozen(stack: McpStack) -> None:
    async with Client(stack.server()) as client:
        tools = (await client.list_tools()).tools
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        templates = [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ]
    listed = {
        "tools": {
            tool.name: {
                "title": tool.title,
                "inputs": sorted(tool.input_schema.get("properties", {})),
                "required": sorted(tool.input_schema.get("required", [])),
                "output": (tool.output_schema or {}).get("title"),
                "hints": tool.annotations.model_dump(exclude_none=True) if tool.annotations else {},
            }
            for tool in tools
        },
        "prompts": prompts,
        "resources": templates,
    }
    if UPDATE:
        SNAPSHOT.write_text(json.dumps(listed, indent=2, sort_keys=True) + "\n")
    assert listed == json.loads(SNAPSHOT.read_text())
    assert all(spec["output"] for spec in listed["tools"].values())


async def test_quantdesk_mcp_over_stdio_serves_a_host(
    stack: McpStack, quantagent_run: tuple[str, dict[str, Any], list[Any]]
) -> None:
    settings = stack.settings
    access, secret = settings.s3_credentials()
    env = {
        **os.environ,
        "QUANTDESK_DATA_DIR": str(settings.data_dir),
        "QUANTDESK_DATABASE_URL": str(settings.database_url),
        "QUANTDESK_TEMPORAL__ADDRESS": stack.address,
        "QUANTDESK_S3__ENDPOINT": settings.s3.endpoint,
        "QUANTDESK_S3__ACCESS_KEY": access,
        "QUANTDESK_S3__SECRET_KEY": secret,
        "QUANTDESK_QUEUES__WORKFLOWS": QUEUE,
    }
    host = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "mcp"], env=env, cwd=ROOT
    )
    run_id = quantagent_run[0]
    async with Client(host) as client:
        view = (await client.call_tool("get_run", {"run_id": run_id})).structured_content
        decision = (await client.call_tool("get_decision", {"run_id": run_id})).structured_content
    assert view is not None and view["status"] == "completed"
    assert decision is not None and "GOOG" in decision["decisions"]


async def test_over_http_a_token_is_asked_and_a_foreign_page_refused(stack: McpStack) -> None:
    import httpx2

    open_wide = stack.settings.mcp.model_copy(update={"host": "0.0.0.0"})
    with pytest.raises(ConfigError, match="QUANTDESK_MCP__TOKEN"):
        http_app(stack.server(), stack.settings.model_copy(update={"mcp": open_wide}))
    port = free_port_base(lambda base: [base])
    settings = stack.settings.model_copy(
        update={
            "mcp": stack.settings.mcp.model_copy(update={"token": SecretStr(TOKEN), "port": port})
        }
    )
    app = http_app(build_server(settings, stack.desk), settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    url = f"http://127.0.0.1:{port}{MCP_PATH}"
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        async with httpx.AsyncClient(timeout=10) as http:
            anonymous = await http.post(url, json=hello)
            foreign = await http.post(
                url,
                json=hello,
                headers={"authorization": f"Bearer {TOKEN}", "origin": "https://evil.example"},
            )
        assert anonymous.status_code == 401
        assert foreign.status_code == 403 and "evil.example" in foreign.text
        bearer = httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with bearer, Client(streamable_http_client(url, http_client=bearer)) as client:
            tools = (await client.list_tools()).tools
            listed = await client.call_tool("list_runs", {"limit": 1})
        assert "approve_plan" in {tool.name for tool in tools} and not listed.is_error
    finally:
        server.should_exit = True
        await serving


async def _tool(server: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    async with Client(server) as client:
        return await Session(client).ok(tool, **arguments)


def _for_docs(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session as the docs show it: long texts cut (the report is paged anyway)."""

    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > 1500:
            return value[:1500] + f"... [{len(value) - 1500} more characters]"
        if isinstance(value, dict):
            return {key: cut(item) for key, item in value.items()}
        if isinstance(value, list):
            return [cut(item) for item in value]
        return value

    return [cut(call) for call in calls]
