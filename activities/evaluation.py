"""The ``Evaluate`` workflow's activities: load windows, hand out their visible bars, score, plot.

Windows are snapshotted into S3 once (``load_eval_windows``, tools queue), in
pages of at most ``PAGE_BARS`` bars, so the benchmark's 1,600 windows never
cross Temporal in one payload, and the scorer later reads exactly the bars the
agents were given, even if the directory changed meanwhile.
``read_visible_windows`` returns one page *without its held-out bars*: the
held-out bars leave S3 only inside ``score_evaluation``. An invalid window (bad
rows) is stored with its reason and listed in the manifest with it, so the
workflow records it as failed without analysing it. The plot is rendered
on the charts queue, where matplotlib already runs. Object keys come from the
workflow, so a retried activity overwrites its own objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydantic import BaseModel, Field

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.heartbeat import heartbeating
from activities.services import Services, StoredReport
from shared.agents.quantagent import Direction
from shared.evaluation.probes import (
    ProbeCall,
    ProbeReport,
    Variant,
    probe_report,
    render_probes_markdown,
)
from shared.evaluation.report import render_csv, render_json, render_markdown
from shared.evaluation.scoring import AgentCall, EvaluationSummary, score_windows
from shared.evaluation.sources import WindowSpec, load_windows
from shared.evaluation.windows import (
    InvalidWindow,
    LoadedWindow,
    VisibleWindow,
    Window,
    bar_count,
)
from shared.llm.contracts import LlmChoice
from shared.llm.knowledge import RunCutoff, run_cutoff
from shared.llm.providers import LlmRole
from shared.market.bars import Timeframe
from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
from shared.storage.buckets import PAYLOADS_BUCKET, REPORTS_BUCKET
from shared.storage.objects import ObjectRef

QUANTAGENT_ROLES = tuple(LlmRole)
"""QuantAgent's agents use every role: quick (indicators), vision (charts), deep (decision)."""
PAGE_BARS = 2500
"""Bars per stored page: a page of visible bars is ~330 KB, under the SDK's 512 KiB warning."""

JSON = "application/json"
CONTENT_TYPES = {
    "md": "text/markdown; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "json": JSON,
    "png": "image/png",
}


class LoadWindowsRequest(BaseModel):
    """Which windows to evaluate and under which key prefix to snapshot them."""

    windows: WindowSpec
    prefix: str = Field(min_length=1, description="object keys of this evaluation start with it")


class WindowInfo(BaseModel):
    """One window as the workflow tracks it: no bars, just where they are."""

    window_id: str
    asset: str
    timeframe: Timeframe
    bars: int
    page: int = Field(description="index into the manifest's pages")
    error: str | None = Field(None, description="why the window is invalid: not analysed")


class WindowPage(BaseModel):
    """One stored page of whole windows (held-out bars included): the scorer's copy."""

    windows: list[LoadedWindow]


class WindowManifest(BaseModel):
    """Every window of the evaluation, in order, and the pages that hold their bars."""

    windows: list[WindowInfo]
    pages: list[ObjectRef]


class VisiblePage(BaseModel):
    """One page as the agents may see it, and each window's truth for the progress count."""

    windows: list[VisibleWindow]
    truths: dict[str, Direction] = Field(
        description="window id -> the direction that would have been right; never sent to agents"
    )


class ScoreRequest(BaseModel):
    """The agent's calls to score against the stored windows, and where the tables go."""

    pages: list[ObjectRef] = Field(min_length=1)
    calls: list[AgentCall]
    seed: int
    label: str
    prefix: str
    llm: LlmChoice | None = Field(
        None, description="the models that made the calls: their training cutoffs tag windows"
    )
    windows: WindowSpec | None = Field(
        None, description="which windows: with llm, the configuration the trials ledger records"
    )
    cost_usd: float | None = Field(None, ge=0, description="what the analyses cost, in USD")
    variants: list[Variant] = Field(default_factory=list, description="changed copies analysed")
    probe_calls: list[ProbeCall] = Field(default_factory=list, description="with variants")


class ScoredEvaluation(BaseModel):
    """The table and where its three renderings are stored."""

    summary: EvaluationSummary
    markdown: StoredReport
    csv: StoredReport
    json_table: StoredReport = Field(description="the table and every window behind it")
    probes: ProbeReport | None = Field(None, description="with variants: probes and the gap")


class PlotRequest(BaseModel):
    """The table to plot and where the PNG goes."""

    summary: EvaluationSummary
    prefix: str


def paginate(
    windows: Sequence[Window | InvalidWindow], page_bars: int = PAGE_BARS
) -> Iterator[list[Window | InvalidWindow]]:
    """Consecutive runs of windows holding at most ``page_bars`` bars (at least one window)."""
    page: list[Window | InvalidWindow] = []
    held = 0
    for window in windows:
        if page and held + bar_count(window) > page_bars:
            yield page
            page, held = [], 0
        page.append(window)
        held += bar_count(window)
    if page:
        yield page


def report_key(prefix: str, suffix: str) -> ObjectRef:
    """Where the ``suffix`` rendering of the evaluation under ``prefix`` is stored."""
    return ObjectRef(
        bucket=REPORTS_BUCKET,
        key=f"{prefix}/evaluation.{suffix}",
        content_type=CONTENT_TYPES[suffix],
    )


class EvaluationActivities(Services):
    """The evaluation's I/O steps over the shared, lazily built clients."""

    def _page(self, ref: ObjectRef) -> WindowPage:
        return WindowPage.model_validate_json(self.store.get_bytes(ref))

    @activity_on(TOOLS_QUEUE, "load_eval_windows")
    @heartbeating
    def load_eval_windows(self, request: LoadWindowsRequest) -> WindowManifest:
        """Read and validate every window, store them in pages, return the manifest."""
        with as_temporal_failures():
            windows = load_windows(request.windows)
            infos: list[WindowInfo] = []
            pages: list[ObjectRef] = []
            for number, page in enumerate(paginate(windows)):
                ref = ObjectRef(
                    bucket=PAYLOADS_BUCKET,
                    key=f"{request.prefix}/windows/page-{number:04d}.json",
                    content_type=JSON,
                )
                pages.append(
                    self.store.put_bytes(ref, WindowPage(windows=page).model_dump_json().encode())
                )
                infos += [
                    WindowInfo(
                        window_id=w.window_id,
                        asset=w.asset,
                        timeframe=w.timeframe,
                        bars=bar_count(w),
                        page=number,
                        error=w.error if isinstance(w, InvalidWindow) else None,
                    )
                    for w in page
                ]
            return WindowManifest(windows=infos, pages=pages)

    @activity_on(TOOLS_QUEUE, "read_visible_windows")
    def read_visible_windows(self, page: ObjectRef) -> VisiblePage:
        """One stored page with the held-out bars cut off, and each window's truth."""
        with as_temporal_failures():
            windows = [w for w in self._page(page).windows if isinstance(w, Window)]
            return VisiblePage(
                windows=[VisibleWindow.of(w) for w in windows],
                truths={w.window_id: w.truth for w in windows},
            )

    @activity_on(TOOLS_QUEUE, "score_evaluation")
    @heartbeating
    def score_evaluation(self, request: ScoreRequest) -> ScoredEvaluation:
        """Score the calls on the stored windows; store the Markdown, CSV and JSON tables."""
        with as_temporal_failures():
            windows = [w for ref in request.pages for w in self._page(ref).windows]
            calls = {call.window_id: call for call in request.calls}
            cutoff = (
                run_cutoff(self.settings, request.llm, QUANTAGENT_ROLES) if request.llm else None
            )
            evaluation = score_windows(
                windows, calls, seed=request.seed, label=request.label, cutoff=cutoff
            )
            # The statistics load scipy, statsmodels and arch: only the scoring worker does.
            from shared.evaluation.measure import measure

            evaluation = measure(
                evaluation,
                trials=self._record_trial(request, cutoff),
                cost_usd=request.cost_usd,
                seed=request.seed,
            )
            markdown = render_markdown(evaluation)
            probes = None
            if request.variants:
                probes = probe_report(
                    windows,
                    request.calls,
                    request.probe_calls,
                    variants=request.variants,
                    seed=request.seed,
                )
                markdown += render_probes_markdown(probes)
            return ScoredEvaluation(
                summary=evaluation.summary,
                probes=probes,
                markdown=self.put_report(report_key(request.prefix, "md"), markdown.encode()),
                csv=self.put_report(
                    report_key(request.prefix, "csv"), render_csv(evaluation.summary).encode()
                ),
                json_table=self.put_report(
                    report_key(request.prefix, "json"), render_json(evaluation).encode()
                ),
            )

    def _record_trial(self, request: ScoreRequest, cutoff: RunCutoff | None) -> int:
        """Record the evaluation's configuration in the trials ledger; how many it holds.

        Without the configuration (a request from before the ledger) nothing is recorded."""
        if request.llm is None or request.windows is None or cutoff is None:
            return max(1, self.trials.count("evaluation"))
        config = {
            "flow": "quantagent",
            "windows": request.windows.model_dump(mode="json"),
            "provider": request.llm.provider,
            "models": [model.model for model in cutoff.models],
            "seed": request.seed,
        }
        self.trials.record("evaluation", config, label=request.label)
        return self.trials.count("evaluation")

    @activity_on(CHARTS_QUEUE, "render_evaluation_plot")
    @heartbeating
    def render_evaluation_plot(self, request: PlotRequest) -> StoredReport:
        """The accuracy plot as a PNG in the reports bucket."""
        # matplotlib loads only in the process that draws (the charts worker), not in every
        # process that imports these models.
        from shared.evaluation.plot import render_accuracy_plot

        with as_temporal_failures():
            return self.put_report(
                report_key(request.prefix, "png"), render_accuracy_plot(request.summary)
            )
