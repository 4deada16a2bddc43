"""The evaluation study of docs/evaluation.md, in one command, replayable from the reply cache.

Windows are cut from the bundled data (GOOG daily, EURUSD hourly; ``--seed``) and
written in QuantAgent's benchmark layout. Each caller is evaluated with every variant
(anonymised, mirrored, rescaled, random walk), so its report holds the accuracy table
against the baselines (random, linreg slope, always long), the paired tests, one probe
table per agent and baseline, and the raw-versus-anonymised gap:

- the offline analyst on ``--windows`` windows per asset;
- the local llama.cpp model (SmolLM2-135M, ``quantdesk model install smollm2``) on the
  first ``--local-windows`` of them (GOOG's first), unless ``--no-local``.

Everything runs in this process against its own Temporal dev server and S3 server,
whose data lives in ``--store``; the reply cache is on (``QUANTDESK_LLM_CACHE``), so
the local model's replies are kept there and a second run with the same options
answers every call from the cache: the same tables, in seconds, without the model's
sampling in the way. The reports are written to ``--out`` and printed.

    .venv/bin/python bench/study_evaluation.py [--windows 10] [--local-windows 1] [--no-local]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.testing import WorkflowEnvironment  # noqa: E402

from shared.config import Settings  # noqa: E402
from shared.evaluation.probes import Variant  # noqa: E402
from shared.evaluation.sources import CutWindows, cut_windows  # noqa: E402
from shared.llm.providers import PROVIDERS, QUEUE_OFFLINE  # noqa: E402
from shared.storage.objects import ObjectStore  # noqa: E402
from tests.local_llm import local_llm_for_tests  # noqa: E402
from tests.servers import evaluate_plans, running_workers, s3_for_tests, tools_reading  # noqa: E402
from tests.test_evaluation import write_benchmark_file  # noqa: E402
from workers.converter import data_converter  # noqa: E402
from workers.main import WorkerPlan, _llm_plan  # noqa: E402
from workers.namespace_setup import ensure_search_attributes  # noqa: E402
from workflows.evaluate import EvaluateResult  # noqa: E402

QUEUE = "study-evaluation"
ASSETS = (("GOOG", "1d"), ("EURUSD", "1h"))
LOCAL = "llamacpp"


def write_windows(roots: dict[Path, int], per_asset: int, seed: int) -> None:
    """``per_asset`` windows of each asset cut by ``seed``, in the benchmark layout; each root
    gets the first so many of them (GOOG's first, then EURUSD's, in time order)."""
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)
    written = 0
    for symbol, timeframe in ASSETS:
        spec = CutWindows(symbols=[symbol], timeframe=timeframe, count=per_asset, seed=seed)
        for n, window in enumerate(cut_windows(spec), 1):
            for root in (root for root, count in roots.items() if written < count):
                write_benchmark_file(root / symbol / f"{symbol}_{timeframe}_{n}.csv", window.bars)
            written += 1


def plans(settings: Settings, local: bool) -> list[WorkerPlan]:
    """The Evaluate and QuantAgent workflows, their tools, charts and each provider's worker."""
    llm_queues = [QUEUE_OFFLINE] + ([PROVIDERS[LOCAL].task_queue] if local else [])
    llm_plans = [_llm_plan(settings, queue) for queue in dict.fromkeys(llm_queues)]
    return evaluate_plans(QUEUE, settings, llm_plans)


async def evaluate(
    env: WorkflowEnvironment, settings: Settings, root: Path, provider: str, seed: int, out: Path
) -> None:
    """One Evaluate with every variant; prints and writes its Markdown report."""
    started = time.perf_counter()
    result: EvaluateResult = await env.client.execute_workflow(
        "Evaluate",
        {
            "windows": {"kind": "directory", "path": str(root)},
            "llm": {"provider": provider},
            "concurrency": 2,
            "seed": seed,
            "variants": [variant.value for variant in Variant],
        },
        id=f"study-{provider}-{uuid.uuid4().hex[:6]}",
        task_queue=QUEUE,
        result_type=EvaluateResult,
    )
    wall = time.perf_counter() - started
    markdown = ObjectStore.from_settings(settings).get_bytes(result.reports.markdown.report)
    path = out / f"{provider}.md"
    path.write_bytes(markdown)
    usage = result.usage.total
    print(markdown.decode())
    print(
        f"{provider}: {result.summary.windows} windows x {1 + len(Variant)} ways in {wall:.0f} s, "
        f"{usage.calls} LLM calls; wrote {path}\n",
        flush=True,
    )


@contextlib.contextmanager
def local_model(store: Path, wanted: bool) -> Iterator[dict[str, object] | None]:
    """The local model served on a free port while the block runs (None without it)."""
    if not wanted:
        yield None
        return
    with local_llm_for_tests(store / "local-llm") as server:
        yield server.settings.model_dump()


async def main(options: argparse.Namespace) -> None:
    store, out = options.store.resolve(), options.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    windows, local_windows = store / "windows", store / "local-windows"
    write_windows(
        {windows: len(ASSETS) * options.windows, local_windows: options.local_windows},
        options.windows,
        options.seed,
    )
    temporal = str(Path(sys.executable).parent / "temporal")
    with (
        s3_for_tests(store / "s3") as s3_settings,
        local_model(store, not options.no_local) as local_llm,
    ):
        update: dict[str, object] = {"llm_cache": True}
        if local_llm is not None:
            update["local_llm"] = type(s3_settings.local_llm).model_validate(local_llm)
        settings = s3_settings.model_copy(update=update)
        env = await WorkflowEnvironment.start_local(
            data_converter=data_converter(settings), dev_server_existing_path=temporal, ui=False
        )
        await ensure_search_attributes(env.client)
        try:
            # run_tool reads through this process's S3, not the settings of a stack.
            with tools_reading(settings):
                async with running_workers(env.client, plans(settings, local_llm is not None)):
                    await evaluate(env, settings, windows, "offline", options.seed, out)
                    if local_llm is not None:
                        await evaluate(env, settings, local_windows, LOCAL, options.seed, out)
        finally:
            await env.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=10, help="offline windows per asset")
    parser.add_argument("--local-windows", type=int, default=1, help="windows for the local model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-local", action="store_true", help="the offline analyst only")
    parser.add_argument("--store", type=Path, default=Path(".quantdesk/study"))
    parser.add_argument("--out", type=Path, default=Path("evaluations/study"))
    asyncio.run(main(parser.parse_args()))
    sys.stdout.flush()
    os._exit(0)  # sdk-python #300: skip the interpreter teardown that can abort
