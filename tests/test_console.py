"""The web console's pages against the real stack, over HTTP and in a headless Chromium.

One stack for the module: the dev server, SeaweedFS S3, a SQLite book, the workers (offline;
OpenAI's queue on the fake vendor, Anthropic's scripted per agent) and the console under
uvicorn. Chromium (Debian's, over DevTools) saves each page under ``.artifacts/console/``
(``QUANTDESK_UPDATE_DOCS=1`` copies the run and book pages to ``docs/``). A watchlist made
from a CSV starts an AutoRun that waits for approval; a person approves it on the book's
page. A parked QuantAgent shows why, and Resume finishes it. A stuck child is shown stuck.
What the client does is tested once in ``test_client``; here, how the console shows it.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
import uvicorn
from temporalio.client import Client, WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from cli.stack.console import console_link
from client.schedules import ScheduleRequest, create_schedule
from console.app import create_app
from shared.config import ConsoleSettings, Settings
from tests.chromium import Page, chromium_binary, chromium_page
from tests.fakes.llm_server import FakeLlmServer, Scripted
from tests.fakes.routed import RoutedFake
from tests.servers import free_port_base, isolated_settings, running_workers, tools_reading
from tests.stuck_workflows import POISON_MESSAGE, start_stuck_tree, stuck_worker, until_marked
from tests.test_imperfect_replies import DEBATER_AGENTS, SYMBOL, Speaker, script_pipeline
from tests.test_imperfect_replies import ROLES as PIPELINE_ROLES
from workers.main import plan_for
from workers.roles import WorkerRole

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.slow]
QUEUE = "console-test"
BOOK = "consoledesk"
KEY = "sk-console-test-0123456789abcdef"
ROLES = (
    WorkerRole.WORKFLOWS,
    WorkerRole.TOOLS,
    WorkerRole.CHARTS,
    WorkerRole.LLM_OFFLINE,
    WorkerRole.LLM_OPENAI,
    WorkerRole.LLM_ANTHROPIC,
)
ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("QUANTDESK_ARTIFACTS", ROOT / ".artifacts")) / "console"
DOCS = ROOT / "docs"
DESK_FORM = {
    "portfolio": BOOK,
    "as_of": "2012-06-01",
    "max_tickers": "2",
    "min_conviction": "low",
    "analysts": ["market", "news"],
    "concurrency": "2",
    "approval": "required",
    "reflect": "no",
}
WATCHLIST = "consolenames"
WATCHLIST_CSV = "symbol,name\nQBTX,Quantum\nLMNW,Lumen\n"
"""Two sim names, uploaded as a person's CSV would be."""
SCAN_FIELDS = ("max_tickers", "min_conviction")
EARLIER_DESK = {
    "as_of": "2012-03-01T00:00:00Z",
    "max_tickers": 3,
    "min_conviction": "low",
    "analysts": ["market", "news"],
    "concurrency": 3,
    "reflect": False,
}
needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it)"
)


@dataclass
class ConsoleStack:
    """The console's address, the stack's settings and client, and the fake vendor."""

    url: str
    settings: Settings
    client: Client
    vendor: FakeLlmServer
    routed: RoutedFake
    """Anthropic's vendor, answering each agent from its own script."""

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=30)


@pytest.fixture(scope="module")
def vendor() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


@pytest.fixture(scope="module")
def routed() -> Iterator[RoutedFake]:
    with RoutedFake(PIPELINE_ROLES) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def stack(
    dev_env: WorkflowEnvironment,
    s3_settings: Settings,
    vendor: FakeLlmServer,
    routed: RoutedFake,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[ConsoleStack]:
    folder = tmp_path_factory.mktemp("console")
    port = free_port_base(lambda base: [base])
    settings = isolated_settings(
        s3_settings,
        folder,
        QUEUE,
        temporal={"address": dev_env.client.service_client.config.target_host},
        openai={"api_key": KEY, "base_url": vendor.base_url_openai},
        anthropic={"api_key": KEY, "base_url": routed.base_url_anthropic},
        console={"port": port},
    )
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    with tools_reading(settings):
        async with running_workers(dev_env.client, [plan_for(r, settings) for r in ROLES]):
            serving = asyncio.create_task(server.serve())
            while not server.started:
                await asyncio.sleep(0.05)
            try:
                yield ConsoleStack(
                    f"http://127.0.0.1:{port}", settings, dev_env.client, vendor, routed
                )
            finally:
                server.should_exit = True
                await serving


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def opened_book(stack: ConsoleStack) -> None:
    """The book's first AutoRun, months earlier and approved at once: holdings and a first
    snapshot, so the later run trades a book that holds something and the curve has two points."""
    await stack.client.execute_workflow(
        "AutoRun",
        {**EARLIER_DESK, "portfolio": BOOK},
        id=f"autorun-{BOOK}-first",
        task_queue=QUEUE,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def desk_run(stack: ConsoleStack, opened_book: None) -> str:
    """An AutoRun with approval required, started through the Start form; its workflow id."""
    async with stack.http() as http:
        answer = await http.post("/start/autorun", data=DESK_FORM)
    assert answer.status_code == 303, answer.text
    return answer.headers["location"].removeprefix("/runs/")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def studies(stack: ConsoleStack) -> tuple[str, str]:
    """A small evaluation (started as `quantdesk eval` does) and a small backtest (started
    through the Start form), both completed; their workflow ids."""
    evaluation = await stack.client.start_workflow(
        "Evaluate",
        {"windows": {"kind": "cut", "symbols": ["GOOG"], "timeframe": "1d", "count": 2}},
        id=f"evaluate-console-{uuid.uuid4().hex[:6]}",
        task_queue=QUEUE,
    )
    async with stack.http() as http:
        started = await http.post(
            "/start/backtest",
            data={
                "flow": "quantagent",
                "symbol": "GOOG",
                "start": "2010-06-01",
                "end": "2010-06-15",
                "every": "5",
            },
        )
    assert started.status_code == 303, shown(started)
    backtest = started.headers["location"].removeprefix("/runs/")
    await evaluation.result()
    await stack.client.get_workflow_handle(backtest).result()
    return evaluation.id, backtest


async def _until(check: object, timeout: float = 120.0) -> None:
    """Wait until the coroutine function ``check`` returns true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {check}"
        await asyncio.sleep(0.3)


async def _portfolio_done(stack: ConsoleStack, workflow_id: str) -> None:
    """Approve the desk's plan over HTTP if it still waits, then wait for the AutoRun."""

    async def waiting_or_done() -> bool:
        async with stack.http() as http:
            page = (await http.get(f"/runs/{workflow_id}/live")).text
        return "awaiting-approval" in page or "Portfolio outcome" in page

    await _until(waiting_or_done)
    async with stack.http() as http:
        await http.post(
            f"/approvals/{workflow_id}-portfolio/approve", data={"by": "test", "note": "ok"}
        )
    await stack.client.get_workflow_handle(workflow_id).result()


def shown(answer: httpx.Response) -> str:
    """The text of an answer as a person reads it (entities decoded)."""
    return html.unescape(answer.text)


@pytest.fixture(scope="module")
def shots() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@needs_chromium
async def test_an_approval_round_trip_in_chromium(
    stack: ConsoleStack, opened_book: None, studies: tuple[str, str], tmp_path: Path, shots: Path
) -> None:
    names = tmp_path / "names.csv"
    names.write_text(WATCHLIST_CSV)
    async with chromium_page(tmp_path / "profile") as page:
        await page.goto(f"{stack.url}/watchlists")
        await page.evaluate(f"document.getElementById('f-name').value = {WATCHLIST!r}")
        await page.choose_file("#f-csv", names)
        await page.evaluate("document.getElementById('create').click()")
        await page.wait_for("document.getElementById('start-autorun')")
        assert await page.evaluate("document.getElementById('said').innerText") == (
            f"created watchlist {WATCHLIST} with 2 symbol(s)"
        )
        await page.screenshot(shots / "watchlist.png")
        await page.evaluate("document.getElementById('start-autorun').click()")
        await page.wait_for("document.getElementById('start-form')")
        assert await page.evaluate("document.getElementById('f-watchlist').value") == WATCHLIST
        given = {k: v for k, v in DESK_FORM.items() if k not in SCAN_FIELDS}
        await page.fill_and_submit(given, "start")
        await page.wait_for("location.pathname.startsWith('/runs/autorun-')")
        workflow_id = (await page.evaluate("location.pathname")).removeprefix("/runs/")
        # The page is not reloaded: its live part fetches the run again until the plan waits.
        await page.evaluate("window.notReloaded = true")
        await page.wait_for("document.getElementById('awaiting-approval')", timeout=180)
        assert await page.evaluate("window.notReloaded === true")
        tickers = "[...document.querySelectorAll('#tickers tr td:first-child')]"
        shown_first = (await page.evaluate(f"{tickers}.map(td => td.innerText)"))[:2]
        assert shown_first == ["QBTX", "LMNW"]  # the watchlist's names, then the holdings
        await page.screenshot(shots / "run-waiting-approval.png")

        await page.goto(f"{stack.url}/portfolios/{BOOK}")
        await page.wait_for("document.querySelector('.approval form')")
        before = await page.evaluate("document.querySelectorAll('#trades tr').length")
        await page.screenshot(shots / "portfolio-approval.png")
        await page.evaluate(
            "document.querySelector('.approval input[name=by]').value = 'Ada';"
            "document.querySelector('.approval input[name=note]').value = 'sized well';"
            "document.querySelector('.approval button.approve').click()"
        )
        await page.wait_for("document.getElementById('said')")
        said = await page.evaluate("document.getElementById('said').innerText")
        assert "approved by Ada: sized well" in said
        await page.wait_for(f"document.querySelectorAll('#trades tr').length > {before}", 120)
        await page.wait_for("document.getElementById('positions')", timeout=60)
        await page.screenshot(shots / "portfolio.png")

        await page.goto(f"{stack.url}/runs/{workflow_id}")
        await page.wait_for("document.getElementById('status').innerText === 'completed'", 120)
        await page.wait_for("document.getElementById('outcome')")
        outcome = await page.evaluate("document.getElementById('outcome').innerText")
        assert "approved by Ada" in outcome
        await page.wait_for("document.getElementById('report')")
        await page.wait_for("[...document.querySelectorAll('#tickers img')].every(i => i.complete)")
        assert await page.evaluate("document.querySelectorAll('#tickers img').length") >= 1
        await page.screenshot(shots / "run.png")

        for name, path in (
            ("runs", "/runs"),
            ("start", "/start"),
            ("watchlists", "/watchlists"),
            ("studies", "/studies"),
            ("pipeline", f"/runs/{workflow_id}-pipeline-" + await _first_ticker(page)),
            ("not-found", "/runs/no-such-run"),
        ):
            await page.goto(stack.url + path)
            await page.screenshot(shots / f"{name}.png")
    if os.environ.get("QUANTDESK_UPDATE_DOCS"):  # the pictures of the README and docs/console.md
        for name in ("run", "portfolio"):
            shutil.copyfile(shots / f"{name}.png", DOCS / f"console-{name}.png")


async def _first_ticker(page: Page) -> str:
    cell = "document.querySelector('#tickers tr:nth-child(2) td a')"
    return str(await page.evaluate(f"{cell} ? {cell}.innerText : ''"))


@needs_chromium
async def test_a_parked_run_shows_why_and_resume_finishes_it(
    stack: ConsoleStack, tmp_path: Path, shots: Path
) -> None:
    vendor = stack.vendor
    for _ in range(3):  # the indicator, pattern and trend agents each ask once
        vendor.unauthorized()
    workflow_id = f"quantagent-parked-{uuid.uuid4().hex[:6]}"
    handle = await stack.client.start_workflow(
        "QuantAgent",
        {
            "symbol": "GOOG",
            "timeframe": "1d",
            "as_of": "2012-06-01T00:00:00Z",
            "llm": {"provider": "openai"},
        },
        id=workflow_id,
        task_queue=QUEUE,
    )
    async with chromium_page(tmp_path / "profile") as page:
        await page.goto(f"{stack.url}/runs/{workflow_id}")
        # All three agents ask at once; each refused call waits on its own.
        await page.wait_for("document.querySelectorAll('#waiting li').length === 3", 120)
        reason = await page.evaluate("document.getElementById('waiting').innerText")
        assert "401" in reason or "key" in reason.lower()
        assert KEY not in reason
        await page.screenshot(shots / "run-parked.png")
        asked = len(vendor.requests)
        for _ in range(12):  # the key is fixed: every call now gets a valid answer
            vendor.reply_conforming("GOOG holds its trend.")
        await page.evaluate("document.getElementById('resume').click()")
        await page.wait_for("document.getElementById('said')")
        await page.wait_for("document.getElementById('status').innerText === 'completed'", 120)
        assert len(vendor.requests) > asked
        await page.wait_for("document.getElementById('pattern-chart').complete")
        await page.screenshot(shots / "quantagent.png")
    await handle.result()


# --- over HTTP ------------------------------------------------------------------------------


async def test_a_pipeline_shows_its_debate_turn_by_turn_while_it_goes(stack: ConsoleStack) -> None:
    """The bear's first call is refused, so the debate stops after the bull's turn: the page
    shows that turn (read live from the debate child) and the wait; resume finishes the run."""
    script_pipeline(stack.routed)
    stack.routed.on(DEBATER_AGENTS[Speaker.BEAR], Scripted(status=401, message="invalid x-api-key"))
    workflow_id = f"pipeline-debate-{uuid.uuid4().hex[:6]}"
    await stack.client.start_workflow(
        "Pipeline",
        {
            "symbol": SYMBOL,
            "as_of": "2012-06-01T00:00:00Z",
            "analysts": ["market", "news"],
            "llm": {"provider": "anthropic"},
        },
        id=workflow_id,
        task_queue=QUEUE,
    )
    live = ""

    async def debate_waits() -> bool:
        nonlocal live
        async with stack.http() as http:
            live = shown(await http.get(f"/runs/{workflow_id}/live"))
        return 'id="waiting"' in live and "bull, round 1" in live

    await _until(debate_waits)
    assert "The bull case rests on the 12% revenue growth." in live
    assert "bear, round 1" not in live
    assert "Analyst reports" in live and "Revenue grew 12% year on year." in live
    async with stack.http() as http:
        debate = shown(await http.get(f"/runs/{workflow_id}-debate"))
    assert "Transcript" in debate and "bull, round 1" in debate and 'id="resume"' in debate
    async with stack.http() as http:
        resumed = await http.post(f"/runs/{workflow_id}/resume")
    assert resumed.status_code == 303
    await stack.client.get_workflow_handle(workflow_id).result()
    async with stack.http() as http:
        page = shown(await http.get(f"/runs/{workflow_id}"))
    assert "bear, round 1" in page and 'id="decision"' in page and "Overweight" in page


async def test_runs_are_filtered_through_the_search_attributes(
    stack: ConsoleStack, desk_run: str
) -> None:
    async def listed() -> bool:
        async with stack.http() as http:
            page = await http.get("/runs", params={"flow": "AutoRun", "portfolio": BOOK})
        return page.status_code == 200 and desk_run in shown(page)

    await _until(listed)
    async with stack.http() as http:
        other = await http.get("/runs", params={"flow": "Scan", "portfolio": BOOK})
        assert desk_run not in shown(other)
        bad = await http.get("/runs", params={"status": "sleeping"})
        assert bad.status_code == 400 and "sleeping" in shown(bad)
        malformed = await http.get("/runs", params={"limit": "lots"})
        assert malformed.status_code == 422 and "limit" in shown(malformed)
        assert "Traceback" not in shown(malformed)


async def test_a_failed_run_shows_its_innermost_cause(stack: ConsoleStack) -> None:
    handle = await stack.client.start_workflow(
        "QuantAgent",
        {"symbol": "GOOG", "timeframe": "7x"},
        id=f"quantagent-bad-{uuid.uuid4().hex[:6]}",
        task_queue=QUEUE,
    )
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    async with stack.http() as http:
        page = shown(await http.get(f"/runs/{handle.id}"))
    assert 'id="status">failed' in page
    assert 'id="failure"' in page and "`timeframe` '7x' is not one of" in page


async def test_a_run_whose_child_keeps_failing_is_shown_stuck_with_its_message(
    stack: ConsoleStack,
) -> None:
    queue = f"{QUEUE}-stuck"
    async with stuck_worker(stack.client, queue):
        parent_id, child_id = await start_stuck_tree(stack.client, queue, "console-stuck")
        try:
            await until_marked(stack.client, parent_id, child_id)
            async with stack.http() as http:
                parent = shown(await http.get(f"/runs/{parent_id}"))
                child = shown(await http.get(f"/runs/{child_id}"))
                listed = shown(
                    await http.get(
                        "/runs", params={"status": "running", "children": "on", "limit": 500}
                    )
                )
        finally:
            await stack.client.get_workflow_handle(parent_id).terminate("test over")
    banner = parent.split('id="stuck"')[1].split("</div>")[0]
    assert f'href="/runs/{child_id}"' in banner and f"RuntimeError: {POISON_MESSAGE}" in banner
    assert f"temporal workflow terminate -w {child_id}" in banner
    assert f'title="{POISON_MESSAGE}">stuck</span>: ' in parent  # the step, not "running"
    assert 'id="status">running' in parent
    assert 'id="status">stuck' in child and "this run" in child and POISON_MESSAGE in child
    row = next(line for line in listed.split("<tr>") if f"/runs/{child_id}" in line)
    assert f'class="badge state-stuck" title="{POISON_MESSAGE}">stuck' in row
    parent_row = next(line for line in listed.split("<tr>") if f'/runs/{parent_id}"' in line)
    assert "state-running" in parent_row


async def test_an_unknown_run_or_object_is_a_404_with_a_message(stack: ConsoleStack) -> None:
    async with stack.http() as http:
        run = await http.get("/runs/no-such-run")
        resume = await http.post("/runs/no-such-run/resume")
        book = await http.get("/portfolios/nobody")
        payload = await http.get("/objects/payloads/secret.txt")
        flow = await http.get("/start/nothing")
    assert run.status_code == 404 and "no run with id 'no-such-run'" in shown(run)
    assert resume.status_code == 404
    assert book.status_code == 404 and "no portfolio called 'nobody'" in shown(book)
    assert payload.status_code == 404
    assert flow.status_code == 404 and "autorun" in shown(flow)


async def test_a_malformed_form_shows_each_problem_next_to_its_field(stack: ConsoleStack) -> None:
    async with stack.http() as http:
        answer = await http.post(
            "/start/autorun",
            data={"max_tickers": "0", "min_conviction": "certain", "llm.provider": "nobody"},
        )
        typo = await http.post("/start/autorun", data={"max_ticker": "2"})
    assert typo.status_code == 422
    assert "unknown field 'max_ticker' (did you mean 'max_tickers'?)" in shown(typo)
    assert answer.status_code == 422
    assert 'id="problem-max_tickers"' in shown(answer) and "greater than or equal to 1" in shown(
        answer
    )
    assert 'id="problem-min_conviction"' in shown(answer) and "'certain'" in shown(answer)
    assert "nobody" in shown(answer)
    assert "Traceback" not in shown(answer)


async def test_a_finished_approval_is_refused_with_409(stack: ConsoleStack, desk_run: str) -> None:
    await _portfolio_done(stack, desk_run)
    async with stack.http() as http:
        again = await http.post(f"/approvals/{desk_run}-portfolio/reject", data={"by": "late"})
        resume = await http.post(f"/runs/{desk_run}/resume")
        report = await http.get(f"/runs/{desk_run}")
    assert again.status_code == 409 and "no approval waits" in shown(again)
    assert resume.status_code == 409 and "nothing to resume" in shown(resume)
    assert 'id="report"' in shown(report)
    tally = shown(report).split('<p id="tally"><b>')[1].split("</b>")[0]
    assert re.fullmatch(r"\d+ of \d+ decided: \d+ \w+.*", tally), tally


async def test_quantdesk_run_links_a_run_to_its_console_page_while_the_console_answers(
    stack: ConsoleStack, desk_run: str
) -> None:
    # In a thread: the console serves from this test's event loop.
    page = await asyncio.to_thread(console_link, stack.settings, desk_run)
    assert page == f"{stack.url}/runs/{desk_run}"
    async with httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(page)).status_code == 200
    elsewhere = stack.settings.model_copy(
        update={"console": ConsoleSettings(port=free_port_base(lambda base: [base]))}
    )
    assert await asyncio.to_thread(console_link, elsewhere, desk_run) is None


async def test_the_book_page_shows_positions_trades_curve_and_risk(
    stack: ConsoleStack, desk_run: str
) -> None:
    await _portfolio_done(stack, desk_run)
    async with stack.http() as http:
        book = await http.get(f"/portfolios/{BOOK}/live")
        books = await http.get("/portfolios")
        studies = await http.get("/studies")
        start = await http.get("/start")
    assert book.status_code == 200
    assert (
        'id="trades"' in shown(book)
        and 'id="positions"' in shown(book)
        and 'id="risk"' in shown(book)
    )
    assert BOOK in shown(books)
    assert studies.status_code == 200 and start.status_code == 200


async def test_a_console_beyond_loopback_asks_for_its_token(stack: ConsoleStack) -> None:
    app = create_app(stack.settings.model_copy(update={"console": ConsoleSettings(token="t0ken")}))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as http:
        assert (await http.get("/health")).status_code == 200
        assert (await http.get("/portfolios")).status_code == 401
        first = await http.get("/portfolios?token=t0ken")
        assert first.status_code == 303 and first.headers["location"] == "/portfolios"
        assert (await http.get("/portfolios")).status_code == 200  # the cookie now
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as http:
        bearer = {"Authorization": "Bearer t0ken"}
        assert (await http.get("/portfolios", headers=bearer)).status_code == 200


async def test_evaluations_and_backtests_show_their_tables_and_plots(
    stack: ConsoleStack, studies: tuple[str, str]
) -> None:
    evaluation, backtest = studies
    async with stack.http() as http:
        listed = shown(await http.get("/studies"))
        run = shown(await http.get(f"/runs/{backtest}"))
        plot = await http.get(listed.split('<img class="chart thumb" src="')[1].split('"')[0])
    assert evaluation in listed and backtest in listed
    assert "QuantAgent, offline" in listed  # the evaluation's label
    assert "after cutoff: " in listed  # the offline analyst was trained on no period
    assert 'id="plot"' in run and 'id="report"' in run
    assert plot.status_code == 200 and plot.headers["content-type"] == "image/png"


async def test_a_post_from_another_site_is_refused(stack: ConsoleStack, desk_run: str) -> None:
    async with stack.http() as http:
        answer = await http.post(
            f"/runs/{desk_run}/resume", headers={"Origin": "http://evil.example"}
        )
    assert answer.status_code == 403 and "evil.example" in answer.text


async def test_schedules_are_listed_and_their_buttons_answer(stack: ConsoleStack) -> None:
    """What each action does is the client's (``test_client``); here, the page and its posts."""
    name = f"console-{uuid.uuid4().hex[:6]}"
    request = ScheduleRequest(
        name=name,
        flow="scan",
        cron="30 15 * * 1-5",
        tz="America/New_York",
        workflow_input={},
        paused=True,
    )
    await create_schedule(stack.client, stack.settings, request)
    try:
        async with stack.http() as http:
            listed = shown(await http.get("/start"))
            unpaused = await http.post(f"/schedules/{name}/unpause")
            unknown = await http.post("/schedules/no-such-schedule/pause")
            verb = await http.post(f"/schedules/{name}/delete")
        assert name in listed and "paused" in listed
        assert unpaused.status_code == 303 and unpaused.headers["location"].startswith(
            "/start?said="
        )
        assert unknown.status_code == 404 and "no-such-schedule" in shown(unknown)
        assert verb.status_code == 404  # deleting is left to the CLI
    finally:
        await stack.client.get_schedule_handle(name).delete()
