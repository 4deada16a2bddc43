"""One run as the doors show it: what Temporal says of it, its progress, what its flow made.

Every flow answers the common ``progress`` query (``RunProgress``), so the steps, waits,
tokens, cost and times read the same for all. What a flow produced comes from its
result once it completed, and while it runs from what it offers live: a Pipeline's
``state`` query and its debate child's transcript so far, an AutoRun's finished
Pipeline children and its Portfolio child's approval, a Portfolio run's ``plan``.
Results and state are read as JSON, so a page shows whatever a flow's contract holds.
A running run, or one below it, whose workflow task keeps failing is shown in a banner
with its message, and on the step it holds up (``activities.stuck_runs``: the parent's own
progress cannot know, so the page overlays it).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import FailureError

from activities.stuck_runs import StuckRun, stuck_steps
from client.desk import Desk
from client.errors import NotFound
from client.links import object_url, web_ui_url
from client.paging import Paging, paged
from client.reports import report_refs
from client.steps import StepRow, step_rows
from shared.reports.autorun import chart_name
from shared.spending.ledger import Standing
from workflows.progress import RunProgress, StepState
from workflows.visibility import AS_OF, FLOW, PORTFOLIO, SYMBOL

LIVE_STATES = frozenset({StepState.RUNNING, StepState.WAITING})
PIPELINE_STEP = "pipeline "
"""An AutoRun shows each ticker's Pipeline as the step ``pipeline <TICKER>``."""
BATCH_STEP = "batch "
"""...and each of its ``PipelineBatch`` children (many names) as ``batch <N>``."""


@dataclass
class RunPage:
    """Everything the Run page shows of one run."""

    workflow_id: str
    run_id: str
    flow: str
    status: WorkflowExecutionStatus | None
    started: datetime
    closed: datetime | None
    symbol: str | None
    portfolio: str | None
    as_of: datetime | None
    summary: str | None
    web_ui: str | None
    handle: WorkflowHandle[Any, Any]
    progress: RunProgress | None = None
    progress_extra: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    failure: str | None = None
    parts: dict[str, Any] = field(default_factory=dict)
    report: dict[str, str] | None = None
    stuck: dict[str, StuckRun] = field(default_factory=dict)
    """Runs at or below this one whose workflow task keeps failing, by workflow id."""
    stuck_steps: dict[str, StuckRun] = field(default_factory=dict)
    """The steps they hold up, by step."""
    spending: Standing | None = None
    """What the run's tree (its root's) spent against its limit."""
    spend_root: str = ""
    page_asked: int = 1
    """The page of a long part (an AutoRun's tickers) the request asked for."""
    paging: Paging | None = None
    """Set by a flow whose part is shown in pages."""

    @property
    def running(self) -> bool:
        """Whether the run is still going (the page keeps refreshing)."""
        return self.status == WorkflowExecutionStatus.RUNNING

    @property
    def status_name(self) -> str:
        """``running`` (``stuck`` when its workflow task keeps failing), ``completed``..."""
        if self.workflow_id in self.stuck:
            return "stuck"
        return self.status.name.lower() if self.status else "unknown"

    @property
    def step_rows(self) -> list[StepRow]:
        """The Steps table, large groups of steps folded (``client.steps``)."""
        if self.progress is None:
            return []
        return step_rows(self.progress.steps, self.progress.waiting, self.stuck_steps)

    def step_state(self, step: str) -> StepState | None:
        """A step's state in the progress, None when not (yet) known."""
        return self.progress.steps.get(step) if self.progress else None


async def load_run(desk: Desk, workflow_id: str, page_asked: int = 1) -> RunPage:
    """The run as it is now, with page ``page_asked`` of its long part; ``NotFound`` for an
    unknown id or a page it does not have."""
    _, described = await desk.described(workflow_id)
    attributes = described.typed_search_attributes
    page = RunPage(
        workflow_id=described.id,
        run_id=described.run_id,
        flow=attributes.get(FLOW) or described.workflow_type,
        status=described.status,
        started=described.start_time,
        closed=described.close_time,
        symbol=attributes.get(SYMBOL),
        portfolio=attributes.get(PORTFOLIO),
        as_of=attributes.get(AS_OF),
        summary=await described.static_summary(),
        web_ui=web_ui_url(desk.settings, described.id, described.run_id),
        handle=(await desk.client()).get_workflow_handle(described.id, run_id=described.run_id),
        page_asked=page_asked,
    )
    page.spend_root = described.root_id or described.id
    page.spending = await asyncio.to_thread(desk.spending.run_standing, page.spend_root)
    raw = await desk.query(page.handle, "progress", settled=not page.running)
    if raw is not None:
        page.progress = RunProgress.model_validate(raw)
        page.progress_extra = {k: v for k, v in raw.items() if k not in RunProgress.model_fields}
    if page.running:
        page.stuck = await desk.stuck(page.workflow_id, described.root_id)
        page.stuck_steps = stuck_steps(page.workflow_id, page.progress, page.stuck)
    if page.status == WorkflowExecutionStatus.COMPLETED:
        page.result = await desk.result(page.workflow_id, page.run_id)
        page.report = await _report(desk, page)
    elif not page.running:
        page.failure = await _failure(page)
    loader = FLOW_PARTS.get(described.workflow_type)
    if loader is not None:
        page.parts = await loader(desk, page)
    if page.paging is None and page_asked != 1:
        raise NotFound(f"no page {page_asked}: {page.flow} {workflow_id} is shown on one page")
    return page


async def _failure(page: RunPage) -> str:
    """Why a closed run did not complete, in the words of its innermost cause."""
    try:
        await page.handle.result()
    except WorkflowFailureError as error:
        return innermost_cause(error)
    return f"the run ended {page.status_name}"


async def _report(desk: Desk, page: RunPage) -> dict[str, str] | None:
    """The run's own report: an HTML page shown in a frame, or Markdown shown as HTML."""
    refs = report_refs(page.result)
    own = [ref for ref in refs if f"/{page.workflow_id}/" in ref.key] or refs
    pages = [ref for ref in own if ref.key.endswith((".html", ".md"))]
    if not pages:
        return None
    ref = pages[0]
    if ref.key.endswith(".html"):
        return {"html_url": f"/objects/{ref.bucket}/{ref.key}"}
    text = await asyncio.to_thread(desk.book_io.store.get_bytes, ref)
    return {"markdown": text.decode("utf-8", errors="replace"), "source": ref.key}


# --- what each flow produced ----------------------------------------------------------------


async def _pipeline(desk: Desk, page: RunPage) -> dict[str, Any]:
    """Analyst reports, both debates turn by turn (live from the debate child), plans, decision."""
    # An AutoRun's Pipeline returns a digest (``slim_result``): its state query has the rest.
    whole = page.result if page.result and "stored_decision" not in page.result else None
    state = whole or await desk.query(page.handle, "state") or {}
    research = state.get("research_transcript") or []
    risk = state.get("risk_transcript") or []
    if not research and page.step_state("debate") in LIVE_STATES:
        research = await _transcript_so_far(desk, f"{page.workflow_id}-debate")
    if not risk and page.step_state("risk") in LIVE_STATES:
        risk = await _transcript_so_far(desk, f"{page.workflow_id}-risk")
    reports = state.get("reports") or {}
    return {
        "state": state,
        "reports": {
            kind: report
            for kind, report in reports.items()
            if isinstance(report, dict) and report.get("report_markdown")
        },
        "missing": reports.get("missing") or {},
        "research": research,
        "risk": risk,
    }


async def _transcript_so_far(desk: Desk, child_id: str) -> list[dict[str, Any]]:
    progress = await desk.child_query(child_id, "progress")
    return list((progress or {}).get("transcript") or [])


async def _quantagent(desk: Desk, page: RunPage) -> dict[str, Any]:
    """The decision, the three reports and the two charts."""
    result = page.result or {}
    return {
        "result": result,
        "charts": {
            name: object_url((result.get(f"{name}_chart") or {}).get("chart"))
            for name in ("pattern", "trend")
            if result.get(f"{name}_chart")
        },
    }


async def _autorun(desk: Desk, page: RunPage) -> dict[str, Any]:
    """The asked page of tickers, each with its Pipeline's state, decision and (once reported)
    chart, and the Portfolio's outcome (or the approval it waits for). Only the page's
    children are read: an AutoRun of hundreds of names is shown 25 at a time."""
    result = page.result or {}
    charts = (result.get("report") or {}).get("charts") or {}
    decisions = {d["symbol"]: d for d in result.get("decisions") or []}
    failures = {f["symbol"]: f["reason"] for f in result.get("failures") or []}
    steps = {**(page.progress.steps if page.progress else {}), **await _batched_steps(desk, page)}
    tickers = [s.removeprefix(PIPELINE_STEP) for s in steps if s.startswith(PIPELINE_STEP)]
    tickers = tickers or result.get("candidates") or []
    page.paging = paged(page.page_asked, len(tickers), "tickers")
    rows = []
    for ticker in page.paging.window(tickers):
        child_id = f"{page.workflow_id}-pipeline-{ticker}"
        state = steps.get(PIPELINE_STEP + ticker)
        decision = decisions.get(ticker)
        if decision is None and state == StepState.DONE:
            decision = (await desk.result(child_id, "")).get("decision")
        stuck = page.stuck_steps.get(PIPELINE_STEP + ticker)
        rows.append(
            {
                "ticker": ticker,
                "child": child_id,
                "state": "stuck" if stuck else (state.value if state else "done"),
                "stuck": stuck,
                "decision": decision,
                "failure": failures.get(ticker),
                "chart": object_url(charts.get(chart_name(ticker))),
            }
        )
    portfolio_id = f"{page.workflow_id}-portfolio"
    outcome = None
    approval = None
    if result or steps.get("portfolio") == StepState.DONE:
        outcome = await desk.result(portfolio_id, "")
    elif steps.get("portfolio") in LIVE_STATES:
        progress = await desk.child_query(portfolio_id, "progress") or {}
        if progress.get("awaiting_approval"):
            approval = {"workflow_id": portfolio_id}
    return {
        "tickers": rows,
        "tally": _tally(result),
        "outcome": outcome,
        "approval": approval,
        "portfolio_id": portfolio_id,
    }


def _tally(result: dict[str, Any]) -> str:
    """A finished AutoRun in a line, over all its pages: ``20 of 22 decided: 8 Buy, 7 Hold,
    5 Sell; 2 failed`` (empty while it runs: the Steps table counts its Pipelines)."""
    if not result.get("candidates"):
        return ""
    decisions = result.get("decisions") or []
    ratings = Counter(str(d.get("rating")) for d in decisions).most_common()
    said = f"{len(decisions)} of {len(result.get('candidates') or [])} decided"
    if ratings:
        said += ": " + ", ".join(f"{count} {rating}" for rating, count in ratings)
    failed = len(result.get("failures") or [])
    return said + (f"; {failed} failed" if failed else "")


async def _batched_steps(desk: Desk, page: RunPage) -> dict[str, StepState]:
    """Each name's state in the ``PipelineBatch`` children running now, which know it better
    than the AutoRun (there, a name shows running until its batch returns)."""
    running = page.progress.children if page.progress else {}
    found: dict[str, StepState] = {}
    for child, step in running.items():
        if not step.startswith(BATCH_STEP):
            continue
        progress = await desk.child_query(child, "progress") or {}
        for name, state in (progress.get("steps") or {}).items():
            if name.startswith(PIPELINE_STEP):
                found[name] = StepState(state)
    return found


async def _portfolio(desk: Desk, page: RunPage) -> dict[str, Any]:
    """The plan (and whether it waits for a person), or the outcome."""
    return {
        "plan": None if page.result else await desk.query(page.handle, "plan"),
        "awaiting": bool(page.progress_extra.get("awaiting_approval")),
        "outcome": page.result,
    }


async def _scan(desk: Desk, page: RunPage) -> dict[str, Any]:
    """The summary and its shortlist."""
    return {"summary": (page.result or {}).get("summary")}


async def _study(desk: Desk, page: RunPage) -> dict[str, Any]:
    """An evaluation's or a backtest's plot (the table is in its report)."""
    result = page.result or {}
    plot = (result.get("reports") or {}).get("plot") or result.get("chart") or {}
    return {"plot": object_url(plot.get("report")), "result": result}


FLOW_PARTS: dict[str, Callable[[Desk, RunPage], Awaitable[dict[str, Any]]]] = {
    "Pipeline": _pipeline,
    "QuantAgent": _quantagent,
    "AutoRun": _autorun,
    "Portfolio": _portfolio,
    "Scan": _scan,
    "Evaluate": _study,
    "Backtest": _study,
}
"""Workflow type → what its Run page shows beyond the steps (templates/flows/<type>.html)."""


def innermost_cause(error: WorkflowFailureError) -> str:
    """The innermost cause of a failed run (the one that names the field)."""
    cause: BaseException = error
    while isinstance(cause, WorkflowFailureError | FailureError) and cause.cause is not None:
        cause = cause.cause
    return str(cause or error)
