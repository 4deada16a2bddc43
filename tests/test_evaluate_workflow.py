"""The ``Evaluate`` workflow offline: time-skipping server, real S3, real QuantAgent children.

Six windows in QuantAgent's benchmark layout (three GOOG daily, three EURUSD hourly,
cut from the bundled data with gaps between them, so no held-out bar of one window
is a visible bar of another) are evaluated once per module; the tests then read
the table, the children's histories and the stored reports.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.llm import LlmActivities
from shared.config import Settings
from shared.evaluation.anonymise import PLACEHOLDER_PREFIX
from shared.evaluation.probes import Variant
from shared.evaluation.windows import HELD_OUT
from shared.llm.providers import QUEUE_OFFLINE
from shared.market.bars import Bar
from shared.market.sources import BundledSource
from shared.storage.objects import ObjectStore
from tests.servers import evaluate_plans, running_workers, start_time_skipping, tools_reading
from tests.test_evaluation import (
    FALL_BACK,
    write_benchmark_file,
    write_dst_shifted_file,
)
from workers.main import WorkerPlan
from workflows.evaluate import EvaluateProgress, EvaluateResult, EvaluateWorkflow
from workflows.quantagent import QuantAgentResult

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-evaluate"
ROOT = Path(__file__).resolve().parent.parent
WINDOW_BARS = 100
SLICES = {"GOOG": ("1d", (300, 700, 1500)), "EURUSD": ("1h", (0, 1000, 4000))}
"""Where each window starts in the bundled series: far apart, so windows share no bar."""


@dataclass(frozen=True)
class BenchmarkWindow:
    """A window as written to disk, for the test's own bookkeeping."""

    window_id: str
    asset: str
    bars: list[Bar]

    @property
    def rose(self) -> bool:
        return self.bars[-1].close > self.bars[-HELD_OUT - 1].close


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BenchmarkWindow]]:
    root = tmp_path_factory.mktemp("benchmark")
    written = []
    for asset, (timeframe, starts) in SLICES.items():
        series = BundledSource().read(asset, timeframe)
        for n, start in enumerate(starts, 1):
            bars = series[start : start + WINDOW_BARS]
            write_benchmark_file(root / asset / f"{asset}_{timeframe}_{n}.csv", bars)
            written.append(BenchmarkWindow(f"{asset}_{timeframe}_{n}", asset, bars))
    return root, written


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment, s3_settings: Settings) -> AsyncIterator[None]:
    # run_tool reads through the worker's own settings; here, the test's S3, so the indicator
    # agent gets its tools' answers rather than their errors.
    with tools_reading(s3_settings):
        async with running_workers(ts_env.client, _plans(s3_settings)):
            yield


def _plans(s3_settings: Settings) -> list[WorkerPlan]:
    chat = LlmActivities(s3_settings, QUEUE_OFFLINE).chat
    return evaluate_plans(QUEUE, s3_settings, [WorkerPlan(queue=QUEUE_OFFLINE, activities=[chat])])


async def _start(env: WorkflowEnvironment, payload: dict[str, Any]) -> WorkflowHandle[Any, Any]:
    return await env.client.start_workflow(
        "Evaluate",
        payload,
        id=f"eval-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
        result_type=EvaluateResult,
    )


@dataclass(frozen=True)
class Evaluated:
    handle: WorkflowHandle[Any, Any]
    result: EvaluateResult
    windows: list[BenchmarkWindow]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def evaluated(
    ts_env: WorkflowEnvironment, workers: None, benchmark: tuple[Path, list[BenchmarkWindow]]
) -> Evaluated:
    root, windows = benchmark
    handle = await _start(
        ts_env, {"windows": {"kind": "directory", "path": str(root)}, "concurrency": 3}
    )
    return Evaluated(handle, await handle.result(), windows)


def _payload_texts(node: Any) -> Iterator[str]:
    """Every payload of a history (inputs, results) decoded to its JSON text."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "payloads" and isinstance(value, list):
                yield from (base64.b64decode(p.get("data", "")).decode() for p in value)
            else:
                yield from _payload_texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _payload_texts(item)


def _json_time(bar: Bar) -> str:
    return bar.model_dump(mode="json")["time"]


async def _child_input(env: WorkflowEnvironment, workflow_id: str) -> dict[str, Any]:
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    return json.loads(started.input.payloads[0].data)


async def test_the_table_scores_the_childrens_calls_against_the_held_out_closes(
    ts_env: WorkflowEnvironment, evaluated: Evaluated
) -> None:
    hits: dict[str, list[bool]] = {"GOOG": [], "EURUSD": []}
    for window in evaluated.windows:
        child = ts_env.client.get_workflow_handle(
            child_id_of(evaluated, window), result_type=QuantAgentResult
        )
        decision = (await child.result()).decision.decision
        hits[window.asset].append((decision == "LONG") == window.rose)

    summary = evaluated.result.summary

    assert [(row.asset, row.timeframe, row.n, row.failed) for row in summary.rows] == [
        ("EURUSD", "1h", 3, 0),
        ("GOOG", "1d", 3, 0),
    ]
    for row in summary.rows:
        assert row.correct == sum(hits[row.asset])
        rose = [w.rose for w in evaluated.windows if w.asset == row.asset]
        assert row.baselines["always_long"] == pytest.approx(sum(rose) / 3)
        paired = list(zip(hits[row.asset], rose, strict=True))
        against_long = row.paired["always_long"]
        assert against_long.wins == sum(hit and not up for hit, up in paired)
        assert against_long.losses == sum(up and not hit for hit, up in paired)
        assert row.ci_low is not None and row.ci_high is not None
        assert row.ci_low <= row.accuracy <= row.ci_high  # type: ignore[operator]
        assert row.mean_risk_reward is not None and 1.2 <= row.mean_risk_reward <= 1.8
    assert summary.overall.n == 6 and summary.overall.correct == sum(map(sum, hits.values()))
    assert evaluated.result.runs == 1
    assert evaluated.result.usage.total.calls == 6 * 5


def child_id_of(evaluated: Evaluated, window: BenchmarkWindow) -> str:
    return f"{evaluated.handle.id}-{window.window_id}"


async def test_children_get_only_the_visible_bars_and_are_named_after_the_evaluation(
    ts_env: WorkflowEnvironment, evaluated: Evaluated
) -> None:
    for window in evaluated.windows:
        given = await _child_input(ts_env, child_id_of(evaluated, window))

        visible = [bar.model_dump(mode="json") for bar in window.bars[:-HELD_OUT]]
        assert given["bars"] == visible
        assert given["symbol"] == window.asset


async def test_no_held_out_bar_appears_in_any_history_of_the_evaluation(
    ts_env: WorkflowEnvironment, evaluated: Evaluated
) -> None:
    ids = [evaluated.handle.id, *(child_id_of(evaluated, w) for w in evaluated.windows)]
    texts = []
    for workflow_id in ids:
        history = await ts_env.client.get_workflow_handle(workflow_id).fetch_history()
        texts += list(_payload_texts(history.to_json_dict()))
    everything = "\n".join(texts)

    for window in evaluated.windows:
        assert _json_time(window.bars[-HELD_OUT - 1]) in everything  # the last visible bar is
        for bar in window.bars[-HELD_OUT:]:
            assert _json_time(bar) not in everything


async def test_the_four_reports_are_stored_and_the_progress_query_agrees(
    evaluated: Evaluated, s3_settings: Settings
) -> None:
    store = ObjectStore.from_settings(s3_settings)
    reports = evaluated.result.reports

    markdown = store.get_bytes(reports.markdown.report).decode()
    table = list(csv.DictReader(io.StringIO(store.get_bytes(reports.csv.report).decode())))
    stored = json.loads(store.get_bytes(reports.json_table.report))
    png = store.get_bytes(reports.plot.report)
    progress = await evaluated.handle.query("progress", result_type=EvaluateProgress)

    assert "| **overall** | 6 | 0 |" in markdown
    # The offline analyst is a rule trained on no period: every window is after its cutoff.
    assert [row["asset"] for row in table] == ["EURUSD", "GOOG", "overall", "after cutoff"]
    assert "**Headline, after the training cutoff: accuracy" in markdown
    assert {w["window_id"] for w in stored["windows"]} == {w.window_id for w in evaluated.windows}
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert reports.plot.report.key.startswith(f"evaluate/{evaluated.handle.id}/")
    assert (progress.phase, progress.total, progress.done, progress.failed) == ("done", 6, 6, 0)
    assert progress.accuracy == pytest.approx(evaluated.result.summary.overall.accuracy)


async def test_the_history_replays_deterministically(evaluated: Evaluated) -> None:
    history = await evaluated.handle.fetch_history()
    replayer = Replayer(workflows=[EvaluateWorkflow], data_converter=pydantic_data_converter)

    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)

    assert replayed.replay_failure is None


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def probed(
    ts_env: WorkflowEnvironment,
    workers: None,
    benchmark: tuple[Path, list[BenchmarkWindow]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Evaluated:
    """A window of each asset, each also shown anonymised, mirrored, rescaled and as a walk."""
    root = tmp_path_factory.mktemp("probes")
    windows = [w for w in benchmark[1] if w.window_id.endswith("_1")]
    for window in windows:
        write_benchmark_file(root / window.asset / f"{window.window_id}.csv", window.bars)
    handle = await _start(
        ts_env,
        {
            "windows": {"kind": "directory", "path": str(root)},
            "concurrency": 2,
            "variants": [variant.value for variant in Variant],
        },
    )
    return Evaluated(handle, await handle.result(), windows)


async def test_probes_show_every_window_each_way_and_report_every_caller(
    probed: Evaluated,
) -> None:
    probes = probed.result.probes
    assert probes is not None and probes.failed == 0
    by_caller = {caller.caller: caller for caller in probes.callers}
    assert list(by_caller) == [
        "QuantAgent decision",
        "pattern agent",
        "trend agent",
        "random",
        "linreg slope",
        "always long",
    ]
    slope, decision = by_caller["linreg slope"], by_caller["QuantAgent decision"]
    assert slope.flip_rate is not None and (slope.flip_rate.hits, slope.flip_rate.n) == (2, 2)
    # The offline analyst reads momentum and the channel's slope: the mirror flips it, and a
    # rescaled, shifted copy changes nothing it reads.
    assert decision.flip_rate is not None and (decision.flip_rate.hits, decision.flip_rate.n) == (
        2,
        2,
    )
    assert decision.consistency is not None and decision.consistency.value == 1.0
    assert decision.long_bias is not None and decision.long_bias.n == 2
    assert [(row.label, row.n, row.gap) for row in probes.gap] == [
        ("EURUSD 1h", 1, 0.0),
        ("GOOG 1d", 1, 0.0),
        ("overall", 2, 0.0),
    ]
    assert probed.result.usage.total.calls == 2 * 5 * 5
    assert probed.result.summary.overall.n == 2


async def test_an_anonymised_child_is_shown_no_ticker_and_no_real_date(
    ts_env: WorkflowEnvironment, probed: Evaluated, s3_settings: Settings
) -> None:
    for window in probed.windows:
        given = await _child_input(ts_env, f"{child_id_of(probed, window)}-anonymised")
        text = json.dumps(given)

        assert given["symbol"].startswith(PLACEHOLDER_PREFIX)
        assert window.asset not in text
        assert not [bar for bar in window.bars if _json_time(bar)[:10] in text]
        assert given["as_of"] == given["bars"][-1]["time"]
    markdown = ObjectStore.from_settings(s3_settings).get_bytes(
        probed.result.reports.markdown.report
    )
    assert b"## Raw against anonymised" in markdown and b"### linreg slope" in markdown


async def test_an_evaluation_with_probes_replays_deterministically(probed: Evaluated) -> None:
    history = await probed.handle.fetch_history()
    replayer = Replayer(workflows=[EvaluateWorkflow], data_converter=pydantic_data_converter)

    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)

    assert replayed.replay_failure is None


async def test_a_long_evaluation_continues_as_new_and_scores_every_window(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    windows = {"kind": "cut", "symbols": ["GOOG"], "timeframe": "1d", "count": 4, "bars": 60}
    handle = await _start(ts_env, {"windows": windows, "windows_per_run": 2, "concurrency": 2})

    result: EvaluateResult = await handle.result()

    latest = await handle.describe()
    assert result.runs == 2
    assert latest.run_id != handle.first_execution_run_id
    assert result.summary.overall.n == 4


async def test_repeats_ask_each_window_again_and_count_it_once(
    ts_env: WorkflowEnvironment, workers: None, s3_settings: Settings
) -> None:
    windows = {"kind": "cut", "symbols": ["GOOG"], "timeframe": "1d", "count": 1, "bars": 60}
    handle = await _start(ts_env, {"windows": windows, "repeats": 2, "concurrency": 2})

    result: EvaluateResult = await handle.result()

    claims = result.summary.claims
    assert result.summary.overall.n == 1
    assert claims is not None and claims.spread is not None
    # The offline analyst is deterministic: both repeats agree on every window.
    assert (claims.spread.repeats, claims.spread.unanimous) == (2, 1.0)
    stored = ObjectStore.from_settings(s3_settings).get_bytes(result.reports.json_table.report)
    scored = json.loads(stored)["windows"]
    assert [len(w["repeats"]) for w in scored] == [2]
    again = await _child_input(ts_env, f"{handle.id}-{scored[0]['window_id']}-r2")
    assert again["llm"]["sample"] == 1  # a repeat misses the first run's cached replies


async def test_windows_that_all_fail_stop_the_evaluation_after_the_first_three(
    s3_settings: Settings, benchmark: tuple[Path, list[BenchmarkWindow]]
) -> None:
    # Children failing mid-flight leave chart activities of closed runs in flight; on the
    # shared time-skipping server they held its clock for later tests (the portfolio's
    # approval timeout never fired), so this test runs on a server of its own.
    root, _ = benchmark
    env = await start_time_skipping()
    try:
        async with running_workers(env.client, _plans(s3_settings)):
            handle = await _start(
                env,
                {
                    "windows": {"kind": "directory", "path": str(root)},
                    # No such offline model: every child's first agent call fails for good.
                    "llm": {"provider": "offline", "model": "gpt-5"},
                    "concurrency": 1,
                },
            )

            with pytest.raises(WorkflowFailureError) as caught:
                await handle.result()

            message = str(caught.value.cause)
            assert "the first 3 windows all failed" in message
            assert "the offline provider has no model 'gpt-5'" in message
            progress = await handle.query("progress", result_type=EvaluateProgress)
            assert (progress.done, progress.failed, progress.total) == (3, 3, 6)
    finally:
        await env.shutdown()


async def test_a_dst_shifted_window_is_scored_and_a_broken_one_fails_alone(
    ts_env: WorkflowEnvironment, workers: None, s3_settings: Settings, tmp_path: Path
) -> None:
    prices = BundledSource().read("EURUSD", "1h")
    four_hourly = [
        bar.model_copy(update={"time": FALL_BACK + i * timedelta(hours=4)})
        for i, bar in enumerate(prices[2000 : 2000 + WINDOW_BARS])
    ]
    write_benchmark_file(tmp_path / "BTC" / "BTC_4h_1.csv", four_hourly)
    write_dst_shifted_file(tmp_path / "BTC" / "BTC_4h_2.csv", prices[3000 : 3000 + WINDOW_BARS])
    broken = prices[4000 : 4000 + WINDOW_BARS]
    bad = broken[40].model_copy(update={"high": broken[40].low, "low": broken[40].high + 1})
    write_benchmark_file(tmp_path / "BTC" / "BTC_4h_3.csv", [*broken[:40], bad, *broken[41:]])

    handle = await _start(ts_env, {"windows": {"kind": "directory", "path": str(tmp_path)}})
    result: EvaluateResult = await handle.result()

    summary = result.summary
    assert (summary.overall.n, summary.overall.failed, summary.irregular) == (2, 1, 1)
    progress = await handle.query("progress", result_type=EvaluateProgress)
    assert (progress.done, progress.failed, progress.total) == (3, 1, 3)
    stored = json.loads(
        ObjectStore.from_settings(s3_settings).get_bytes(result.reports.json_table.report)
    )
    windows = {w["window_id"]: w for w in stored["windows"]}
    assert windows["BTC_4h_1"]["correct"] is not None and windows["BTC_4h_1"]["spacing"] == []
    assert windows["BTC_4h_2"]["correct"] is not None
    assert windows["BTC_4h_2"]["spacing"][0]["first_row"] == 79
    assert "BTC_4h_3.csv`: row 40 at" in windows["BTC_4h_3"]["error"]
    assert "high is below low" in windows["BTC_4h_3"]["error"]
    with pytest.raises(RPCError):  # the broken window was never analysed
        await ts_env.client.get_workflow_handle(f"{handle.id}-BTC_4h_3").describe()


@pytest.mark.parametrize(
    ("payload", "field", "given"),
    [
        (
            {"windows": {"kind": "directory", "path": "/nonexistent/benchmark"}},
            "windows.path",
            "/nonexistent/benchmark is not a directory",
        ),
        (
            {"windows": {"kind": "cut", "symbols": ["NOPE"], "timeframe": "1d", "count": 1}},
            "symbol",
            "unknown symbol 'NOPE'",
        ),
        ({"windows": {"kind": "tape"}}, "windows", "{'kind': 'tape'} is invalid"),
        (
            {"windows": {"kind": "directory", "path": "x"}, "concurrency": 0},
            "concurrency",
            "0 is invalid: Input should be greater than or equal to 1",
        ),
        (
            {"windows": {"kind": "directory", "path": "x"}, "llm": {"provider": "skynet"}},
            "llm.provider",
            "'skynet'",
        ),
    ],
)
async def test_bad_input_fails_the_evaluation_naming_the_field_and_the_value(
    ts_env: WorkflowEnvironment, workers: None, payload: dict[str, Any], field: str, given: str
) -> None:
    handle = await _start(ts_env, payload)

    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()

    cause: BaseException | None = caught.value.cause
    while cause is not None and cause.__cause__ is not None:
        cause = cause.__cause__
    assert f"`{field}" in str(cause)
    assert given in str(cause)


async def test_the_cli_follows_an_evaluation_prints_the_table_and_writes_the_reports(
    ts_env: WorkflowEnvironment, workers: None, s3_settings: Settings, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "QUANTDESK_DATA_DIR": str(s3_settings.data_dir),
        "QUANTDESK_S3__ENDPOINT": s3_settings.s3.endpoint,
        "QUANTDESK_TEMPORAL__ADDRESS": ts_env.client.service_client.config.target_host,
        "QUANTDESK_QUEUES__WORKFLOWS": QUEUE,
        "COLUMNS": "160",
    }
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "cli.main", "eval", "quantagent", "--symbol", "GOOG,^GSPC"),
        *("--count", "1", "--bars", "60", "--seed", "4", "--anonymise", "--out", str(tmp_path)),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output = (await process.communicate())[0].decode()

    assert process.returncode == 0, output
    assert "Evaluation: QuantAgent, offline" in output
    assert "GOOG 1d" in output and "^GSPC 1d" in output and "overall" in output
    assert "Paired tests against the baselines" in output and "McNemar's exact p" in output
    assert ", p=" in output
    assert "Raw against anonymised" in output
    written = sorted(path.name for path in tmp_path.glob("evaluate-quantagent-*/*"))
    assert written == [
        "evaluation.csv",
        "evaluation.json",
        "evaluation.md",
        "evaluation.png",
        "probes.json",
    ]
    assert f"wrote {tmp_path}" in output
    probes = json.loads(next(tmp_path.glob("*/probes.json")).read_text())
    assert [row["asset"] for row in probes["gap"]] == ["GOOG", "^GSPC", "overall"]
    table = next(tmp_path.glob("*/evaluation.csv")).read_text()
    assert table.splitlines()[-2].startswith("overall,all,2,0,")
    assert table.splitlines()[-1].startswith("after cutoff,all,2,0,")
    assert "Headline, after the training cutoff" in output and "Trading the calls" in output
