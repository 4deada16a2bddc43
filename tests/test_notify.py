"""Notices to people through Apprise, against real receivers: an HTTP server taking the JSON
webhook's posts and an SMTP server taking the e-mails. Each (run, event, URL) is sent once,
however often the step is retried; a notifier that fails or hangs is bounded and named, never
a hang; a Reconcile that finds drift tells people in a run beside it and completes whatever
the notifier does; `quantdesk notify test` says which URL took its message."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio
from pydantic import SecretStr
from temporalio.client import WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from activities.notify import NotifyActivities
from shared.agents.pipeline.schemas import SIGNAL_OF_RATING, Rating
from shared.agents.portfolio.inputs import TickerDecision
from shared.broker.book import BrokerBook
from shared.config import ENV_PREFIX, Settings, load_settings
from shared.notify.ledger import NoticeLedger
from shared.notify.notices import Notice, NoticeKind
from shared.notify.sender import deliver
from shared.portfolio.models import BrokerKind
from shared.portfolio.store import PortfolioStore
from tests.cli_process import run_quantdesk
from tests.fakes.alpaca.server import AlpacaStandIn
from tests.fakes.notifiers import Mailbox, Webhook
from tests.servers import isolated_settings, running_workers
from workers.main import plan_for
from workers.roles import WorkerRole

NOTICE = Notice(
    kind=NoticeKind.DRIFT,
    run="reconcile-1",
    title="desk: the book and its broker differ",
    body="cash: the broker has +1000 against the book",
    link="http://127.0.0.1:8400/runs/reconcile-1",
)


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with Webhook() as hook:
        yield hook


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with Mailbox() as box:
        yield box


def _activities(tmp_path: Any, *urls: str) -> NotifyActivities:
    settings = load_settings(data_dir=tmp_path, notify={"urls": list(urls), "timeout_seconds": 1})
    return NotifyActivities(settings)


def test_a_notice_reaches_a_webhook_and_a_mailbox(webhook: Webhook, mailbox: Mailbox) -> None:
    posted = deliver(NOTICE, SecretStr(webhook.url()), 2)
    mailed = deliver(NOTICE, SecretStr(mailbox.url()), 2)

    assert posted.ok and mailed.ok
    [post] = webhook.posts
    assert post.body["title"] == NOTICE.title
    assert post.body["message"] == f"{NOTICE.body}\n\n{NOTICE.link}"
    [mail] = mailbox.messages
    assert f"Subject: {NOTICE.title}" in mail and "To: ops@example.org" in mail
    assert "cash: the broker has +1000" in mail and NOTICE.link in mail


def test_a_failing_or_hanging_notifier_is_named_and_bounded(webhook: Webhook) -> None:
    webhook.statuses["/down"] = 500
    refused = deliver(NOTICE, SecretStr(webhook.url("down")), 1)
    webhook.delay = 30
    started = time.monotonic()
    hung = deliver(NOTICE, SecretStr(webhook.url("slow")), 1)

    assert not refused.ok and "500" in refused.why
    assert refused.target == f"json://127.0.0.1:{webhook.port}/down"
    assert not hung.ok and time.monotonic() - started < 30  # its read timeout, not the hang


def test_the_secrets_of_a_url_never_show(webhook: Webhook) -> None:
    webhook.statuses["/hook"] = 500

    delivery = deliver(NOTICE, SecretStr(f"json://desk:s3cr3t@127.0.0.1:{webhook.port}/hook"), 1)

    assert not delivery.ok and "s3cr3t" not in delivery.model_dump_json()


def test_each_url_takes_a_notice_once_and_a_retry_sends_only_where_it_failed(
    webhook: Webhook, tmp_path: Any
) -> None:
    activities = _activities(tmp_path, webhook.url("up"), webhook.url("down"))
    webhook.statuses["/down"] = 500

    with pytest.raises(ApplicationError, match="1 of 2 notifier"):
        activities.send_notice(NOTICE)
    webhook.statuses["/down"] = 200
    retried = activities.send_notice(NOTICE)
    again = activities.send_notice(NOTICE)

    assert [post.path for post in webhook.posts] == ["/up", "/down", "/down"]
    assert [d.target.endswith("/down") for d in retried.deliveries] == [True]
    assert retried.had_it == 1 and (again.deliveries, again.had_it) == ([], 2)


# -- in the desk's flows -----------------------------------------------------------------------

QUEUE = "test-notify"
KEY, SECRET = "PKNOTIFY000000000000", "notify-secret"
on_the_server = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def broker() -> Iterator[AlpacaStandIn]:
    with AlpacaStandIn(key_id=KEY, secret=SECRET, cash=Decimal(10_000), prices={}) as server:
        yield server


@pytest.fixture(scope="module")
def desk(
    s3_settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    hook: Webhook,
    broker: AlpacaStandIn,
) -> Settings:
    return isolated_settings(
        s3_settings,
        tmp_path_factory.mktemp("notify"),
        QUEUE,
        alpaca={"base_url": broker.base_url, "key_id": KEY, "secret_key": SECRET},
        notify={
            "urls": [hook.url("desk")],
            "escalate_urls": [hook.url("escalate")],
            "timeout_seconds": 2,
        },
        console={"public_url": "https://desk.example.org"},
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment, desk: Settings) -> AsyncIterator[None]:
    roles = (WorkerRole.WORKFLOWS, WorkerRole.TOOLS, WorkerRole.BROKER, WorkerRole.LLM_OFFLINE)
    async with running_workers(ts_env.client, [plan_for(role, desk) for role in roles]):
        yield


def _drifted_book(desk: Settings) -> str:
    """A book that believes it has $9,000 at a broker that holds $10,000."""
    name = f"book{uuid.uuid4().hex[:6]}"
    BrokerBook.from_settings(desk).create(name, Decimal(9_000), broker=BrokerKind.ALPACA)
    return name


async def _reconcile(env: WorkflowEnvironment, book: str) -> str:
    run = f"reconcile-{uuid.uuid4().hex[:8]}"
    await env.client.execute_workflow("Reconcile", {"portfolio": book}, id=run, task_queue=QUEUE)
    return run


def _dies_once_after_each_record(monkeypatch: pytest.MonkeyPatch, run: str) -> None:
    """The worker dies between each of ``run``'s sends and the step's completion, once per
    event: every notice's step is retried after its message went out."""
    recorded = NoticeLedger.record
    died: set[str] = set()

    def record_then_die(self: NoticeLedger, about: str, event: str, target: str) -> None:
        recorded(self, about, event, target)
        if about == run and event not in died:
            died.add(event)
            raise RuntimeError("the worker is gone before the step completes")

    monkeypatch.setattr(NoticeLedger, "record", record_then_die)


async def _until_waiting(handle: WorkflowHandle[Any, Any]) -> None:
    for _ in range(2_000):
        with contextlib.suppress(RPCError):  # no query handler before the first task ran
            if (await handle.query("progress"))["awaiting_approval"]:
                return
        await asyncio.sleep(0.02)
    raise AssertionError("the plan never waited for approval")


async def _told(env: WorkflowEnvironment, notify_run: str) -> None:
    """Once the ``Notify`` run ``notify_run`` has been started, its end."""
    for _ in range(500):
        with contextlib.suppress(RPCError):  # not started yet
            await env.client.get_workflow_handle(notify_run).result()
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{notify_run} never started")


# First on this server: its clock stops skipping once a run ends leaving a notice running.
@on_the_server
async def test_a_waiting_plan_tells_waiting_reminder_escalation_and_outcome_once_each(
    ts_env: WorkflowEnvironment,
    workers: None,
    desk: Settings,
    hook: Webhook,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    book = f"appr{uuid.uuid4().hex[:6]}"
    PortfolioStore.from_settings(desk).create(book, 100_000)
    run = f"portfolio-{book}"
    _dies_once_after_each_record(monkeypatch, run)
    as_of = datetime(2012, 6, 1, tzinfo=UTC)
    decisions = [
        TickerDecision(
            symbol=symbol,
            rating=Rating.BUY,
            signal=SIGNAL_OF_RATING[Rating.BUY],
            executive_summary=f"Buy {symbol}",
            as_of=as_of,
        ).model_dump(mode="json")
        for symbol in ("QBTX", "LMNW")
    ]
    handle = await ts_env.client.start_workflow(
        "Portfolio",
        {
            "portfolio": book,
            "as_of": as_of.isoformat(),
            "decisions": decisions,
            "approval": "required",
            "approval_timeout_minutes": 60,
        },
        id=run,
        task_queue=QUEUE,
    )
    await _until_waiting(handle)
    await _told(ts_env, f"{run}-notify-approval_waiting")
    # Past the reminder (30 minutes), then past the escalation (45), each told before going on.
    for minutes, kind in ((31, "approval_reminder"), (15, "approval_escalation")):
        await ts_env.sleep(timedelta(minutes=minutes))
        await _told(ts_env, f"{run}-notify-{kind}")
    await handle.execute_update("approve", {"by": "ops", "note": "go ahead"})
    await handle.result()
    await _told(ts_env, f"{run}-notify-approval_outcome")

    told = [post for post in hook.posts if run in post.body["message"]]
    by_title = {post.body["title"]: post for post in told}
    assert len(told) == len(by_title) == 4, [post.body["title"] for post in told]
    [waiting] = [post for title, post in by_title.items() if title.startswith(f"{book}: a plan")]
    assert waiting.body["title"].endswith("orders waits for approval")
    assert "buy" in waiting.body["message"].lower() and "QBTX" in waiting.body["message"]
    assert f"quantdesk approve {run}" in waiting.body["message"]
    assert f"https://desk.example.org/runs/{run}" in waiting.body["message"]
    assert by_title[f"Reminder: {book}'s plan still waits for approval"].path == "/desk"
    assert by_title[f"Escalation: {book}'s plan expires unanswered soon"].path == "/escalate"
    outcome = by_title[f"{book}: the plan was approved"]
    assert "approved by ops: go ahead" in outcome.body["message"]


@on_the_server
async def test_drift_is_told_once_in_a_run_beside_the_reconcile(
    ts_env: WorkflowEnvironment, workers: None, desk: Settings, hook: Webhook
) -> None:
    book = _drifted_book(desk)
    run = await _reconcile(ts_env, book)
    await ts_env.client.get_workflow_handle(f"{run}-notify-drift").result()

    [post] = [post for post in hook.posts if book in post.body["title"]]
    assert post.body["title"] == f"{book}: the book and its broker differ"
    assert "cash: the broker has +1000" in post.body["message"]
    assert f"quantdesk broker reconcile {book} --adopt" in post.body["message"]


@on_the_server
async def test_a_notifier_down_leaves_the_run_unharmed_and_is_asked_again(
    ts_env: WorkflowEnvironment, workers: None, desk: Settings, hook: Webhook
) -> None:
    hook.statuses["/desk"] = 500
    book = _drifted_book(desk)

    def posts() -> int:
        return len([post for post in hook.posts if book in post.body["title"]])

    try:
        run = await _reconcile(ts_env, book)  # completes whatever the notifier does
        told = ts_env.client.get_workflow_handle(f"{run}-notify-drift")
        for _ in range(200):  # the first attempt, refused
            if posts():
                break
            await asyncio.sleep(0.05)
        assert posts() == 1 and (await told.describe()).status.name == "RUNNING"
    finally:
        hook.statuses["/desk"] = 200
    sent = await told.result()

    assert posts() == 2 and len(sent["deliveries"]) == 1


@on_the_server
async def test_a_step_retried_after_its_send_does_not_send_again(
    ts_env: WorkflowEnvironment,
    workers: None,
    desk: Settings,
    hook: Webhook,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker dies between the send and the step's completion: the retry finds the
    ledger's record and sends nothing."""
    run = f"notify-once-{uuid.uuid4().hex[:6]}"
    _dies_once_after_each_record(monkeypatch, run)
    notice = NOTICE.model_copy(update={"run": run, "title": f"{run}: once"})
    sent = await ts_env.client.execute_workflow(
        "Notify", {"notice": notice.model_dump(mode="json")}, id=run, task_queue=QUEUE
    )

    assert len([post for post in hook.posts if post.body["title"] == notice.title]) == 1
    assert sent["had_it"] == 1 and sent["deliveries"] == []


def test_notify_test_says_which_url_took_it(webhook: Webhook, mailbox: Mailbox) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    webhook.statuses["/refused"] = 500
    urls = f"{webhook.url('ok')} {mailbox.url()} {webhook.url('refused')}"
    result = run_quantdesk(
        {**clean, f"{ENV_PREFIX}NOTIFY__URLS": urls, "COLUMNS": "200"}, "notify", "test"
    )

    assert result.returncode == 1, result.stderr
    rows = [line for line in result.stdout.splitlines() if "json://" in line or "mailto" in line]
    assert len(rows) == 3 and "yes" in rows[0] and "yes" in rows[1] and "no" in rows[2]
    assert "500" in rows[2]
    assert [post.path for post in webhook.posts] == ["/ok", "/refused"]
    assert "Subject: quantdesk: a test notice" in mailbox.messages[0]
