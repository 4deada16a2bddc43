"""Reading runs for an assistant: a run's state, a bounded wait, its report in pages, its
charts and its decisions, all through the console's ``load_run`` and ``Desk``.

A host drops a tool call after about a minute, so ``wait_for`` never blocks for a whole run:
it returns when the run closes, when it needs a person (an approval, a parked call), or
after at most ``MAX_WAIT_SECONDS``, reporting progress as it goes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import WorkflowExecutionStatus

from client.desk import Desk
from client.errors import Conflict, NotFound
from client.reports import report_refs
from client.run_view import RunPage, load_run
from mcp_server.contracts import DecisionView, ReportPage, RunView
from shared.storage.buckets import CHARTS_BUCKET, REPORTS_BUCKET
from shared.storage.objects import ObjectRef
from workflows.progress import RunProgress, StepState

MAX_WAIT_SECONDS = 45.0
"""Hosts drop a call at about 60 s: a wait ends well before."""
POLL_SECONDS = 1.0
PAGE_CHARS = 12_000
"""A report page: about 3k tokens of Markdown, well under the 10k a host takes at once."""
QUANTAGENT_CHARTS = ("pattern", "trend")

Progress = Callable[[float, float, str], Awaitable[None]]
"""``(progress, total, message)``: where a wait reports how it goes."""


async def run_view(desk: Desk, workflow_id: str) -> RunView:
    """The run as the Run page shows it, with what to call next."""
    page = await load_run(desk, workflow_id)
    return _view(page)


def _view(page: RunPage) -> RunView:
    progress = page.progress
    awaiting = bool(page.progress_extra.get("awaiting_approval") or page.parts.get("approval"))
    total = progress.usage.total if progress else None
    view = RunView(
        workflow_id=page.workflow_id,
        flow=page.flow,
        status=page.status_name,
        finished=not page.running,
        started=page.started,
        closed=page.closed,
        symbol=page.symbol,
        portfolio=page.portfolio,
        as_of=page.as_of,
        phase=progress.phase if progress else "",
        steps={step: state.value for step, state in (progress.steps if progress else {}).items()},
        done=progress.done if progress else 0,
        total=progress.total if progress else 0,
        waiting=dict(progress.waiting) if progress else {},
        stuck={run_id: run.message for run_id, run in page.stuck.items()},
        awaiting_approval=awaiting,
        llm_calls=total.calls if total else 0,
        tokens=total.total_tokens if total else 0,
        cost_usd=total.cost_usd if total else 0.0,
        elapsed_seconds=progress.elapsed_seconds if progress else None,
        estimate_seconds=progress.estimate_seconds if progress else None,
        failure=page.failure,
        web_ui=page.web_ui,
    )
    view.next = _next_step(view)
    return view


def _next_step(view: RunView) -> str:
    if view.awaiting_approval:
        return "a plan waits for a person: get_plan, then ask the user (approve_plan / reject_plan)"
    if view.stuck:
        return "the run's code keeps failing (see stuck): a person must deploy a fix"
    if view.waiting:
        return "calls wait for a fix (see waiting): fix the cause, then resume_run"
    if not view.finished:
        return "wait_run to follow it (each call returns within 45 s)"
    if view.status == "completed":
        return "get_decision, get_report, get_chart"
    return "see failure; start_run again once the cause is fixed"


async def wait_for(desk: Desk, workflow_id: str, seconds: float, report: Progress) -> RunView:
    """Follow the run for up to ``seconds`` (at most ``MAX_WAIT_SECONDS``); return at once
    when it closes or needs a person. Progress goes to ``report`` on every poll."""
    handle, described = await desk.described(workflow_id)
    limit = min(max(seconds, 0.0), MAX_WAIT_SECONDS)
    began = time.monotonic()
    while described.status == WorkflowExecutionStatus.RUNNING:
        waited = time.monotonic() - began
        raw = await desk.query(handle, "progress")
        if raw is not None:
            progress = RunProgress.model_validate(raw)
            await report(
                waited, limit, f"{progress.phase} ({progress.done}/{progress.total} steps)"
            )
            if progress.waiting or await _awaits_person(desk, workflow_id, raw):
                break
        if waited >= limit:
            break
        await asyncio.sleep(min(POLL_SECONDS, limit - waited))
        described = await handle.describe()
    return await run_view(desk, workflow_id)


async def _awaits_person(desk: Desk, workflow_id: str, progress: dict[str, Any]) -> bool:
    """Whether the run (a Portfolio run, or an AutoRun's Portfolio child) waits for an approval."""
    if progress.get("awaiting_approval"):
        return True
    if progress.get("steps", {}).get("portfolio") != StepState.WAITING.value and not any(
        child.endswith("-portfolio") for child in progress.get("children", {})
    ):
        return False
    child = await desk.child_query(f"{workflow_id}-portfolio", "progress")
    return bool((child or {}).get("awaiting_approval"))


# --- reports --------------------------------------------------------------------------------


async def completed(desk: Desk, workflow_id: str, wanted: str) -> RunPage:
    """The run's page once it completed; ``Conflict`` saying what to do before."""
    page = await load_run(desk, workflow_id)
    if page.result is None:
        state = page.status_name
        hint = "wait_run first" if page.running else f"it ended {state}: {page.failure or ''}"
        raise Conflict(f"{workflow_id} is {state}, so it has no {wanted} yet: {hint}")
    return page


def split_pages(text: str, size: int = PAGE_CHARS) -> list[str]:
    """``text`` cut into pages of at most ``size`` characters, at a line's end where one is
    near (so a table row or a paragraph is not cut in two)."""
    pages = []
    while len(text) > size:
        cut = text.rfind("\n", size // 2, size) + 1 or size
        pages.append(text[:cut])
        text = text[cut:]
    return [*pages, text]


async def report_page(desk: Desk, workflow_id: str, page_number: int) -> ReportPage:
    """Page ``page_number`` (from 1) of the run's Markdown report; a QuantAgent run, which
    stores none, reads its three agents' reports and its decision instead."""
    page = await completed(desk, workflow_id, "report")
    source, text = await report_text(desk, page)
    pages = split_pages(text)
    if not 1 <= page_number <= len(pages):
        raise NotFound(f"no page {page_number}: the report of {workflow_id} has {len(pages)}")
    return ReportPage(
        workflow_id=workflow_id,
        source=source,
        page=page_number,
        pages=len(pages),
        next_page=page_number + 1 if page_number < len(pages) else None,
        text=pages[page_number - 1],
    )


async def report_text(desk: Desk, page: RunPage) -> tuple[str, str]:
    refs = report_refs(page.result)
    own = [ref for ref in refs if f"/{page.workflow_id}/" in ref.key] or refs
    markdown = [ref for ref in own if ref.key.endswith(".md")]
    if markdown:
        data = await asyncio.to_thread(desk.book_io.store.get_bytes, markdown[0])
        return markdown[0].key, data.decode("utf-8", errors="replace")
    if page.flow == "QuantAgent" and page.result:
        return "the run's result", quantagent_report(page.result)
    raise NotFound(
        f"{page.flow} {page.workflow_id} stores no Markdown report: get_run, get_decision"
    )


def quantagent_report(result: dict[str, Any]) -> str:
    """A QuantAgent run's report: its decision, then what each of its agents wrote."""
    decision = result["decision"]
    pattern = result["pattern_report"]
    trend = result["trend_report"]
    return "\n\n".join(
        [
            f"# QuantAgent {result['symbol']} {result['timeframe']} as of {result['as_of']}",
            f"## Decision: {decision['decision']} (horizon {result['forecast_horizon']}, "
            f"risk/reward {decision['risk_reward_ratio']})\n\n{decision['justification']}",
            f"## Indicator agent\n\n{result['indicator_report']}",
            f"## Pattern agent\n\n{pattern.get('analysis') or pattern}",
            f"## Trend agent\n\n{trend.get('analysis') or trend}",
        ]
    )


# --- charts ---------------------------------------------------------------------------------


def chart_refs(page: RunPage) -> dict[str, ObjectRef]:
    """The run's charts by name: a QuantAgent's ``pattern`` and ``trend``; a report's charts
    by ticker (an AutoRun's) or file name."""
    result = page.result or {}
    if page.flow == "QuantAgent":
        return {
            name: ObjectRef.model_validate(result[f"{name}_chart"]["chart"])
            for name in QUANTAGENT_CHARTS
            if result.get(f"{name}_chart")
        }
    found = {}
    for ref in report_refs(result):
        if ref.key.endswith(".png") and ref.bucket in (CHARTS_BUCKET, REPORTS_BUCKET):
            name = ref.key.rsplit("/", 1)[-1].removesuffix(".png").removeprefix("chart-")
            found[name] = ref
    return found


async def chart_bytes(desk: Desk, workflow_id: str, name: str) -> tuple[ObjectRef, bytes]:
    """The PNG of the run's chart ``name``; ``NotFound`` naming the charts it has."""
    page = await completed(desk, workflow_id, "charts")
    charts = chart_refs(page)
    if name not in charts:
        have = ", ".join(sorted(charts)) or "none"
        raise NotFound(f"{workflow_id} has no chart {name!r} (its charts: {have})")
    ref = charts[name]
    return ref, await asyncio.to_thread(desk.book_io.store.get_bytes, ref)


# --- decisions ------------------------------------------------------------------------------


async def decisions(desk: Desk, workflow_id: str) -> DecisionView:
    """What the run decided so far (an AutoRun: the tickers decided; a Portfolio run: the
    book manager's decision once made)."""
    page = await load_run(desk, workflow_id)
    found = _decisions_of(page)
    if found is None:
        raise NotFound(f"a {page.flow} run makes no decision: get_report reads what it made")
    return DecisionView(
        workflow_id=workflow_id, flow=page.flow, finished=not page.running, decisions=found
    )


def _decisions_of(page: RunPage) -> dict[str, dict[str, Any]] | None:
    result = page.result or {}
    parts = page.parts
    if page.flow == "QuantAgent":
        if not result:
            return {}
        return {
            result["symbol"]: {
                **result["decision"],
                "forecast_horizon": result["forecast_horizon"],
                "pattern": result["pattern_report"],
                "trend": result["trend_report"],
            }
        }
    if page.flow == "Pipeline":
        decision = (parts.get("state") or {}).get("decision") or result.get("decision")
        return {page.symbol or "": decision} if decision else {}
    if page.flow == "AutoRun":
        return {row["ticker"]: row["decision"] for row in parts["tickers"] if row["decision"]}
    if page.flow == "Portfolio":
        decision = result.get("decision") or (parts.get("plan") or {}).get("decision")
        return {page.portfolio or "": decision} if decision else {}
    if page.flow == "Scan":
        summary = parts.get("summary")
        return {"scan": summary} if summary else {}
    return None
