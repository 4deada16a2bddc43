"""The Prometheus scrape configuration of the stack `up` runs, in its data dir.

`up` writes two files: ``prometheus.yml``, which a Prometheus of the user's is started with
(``prometheus --config.file=<data dir>/prometheus.yml``), and the targets it reads through
``file_sd_configs`` (``prometheus/targets.json``), one per process that serves /metrics:
the dev server, the console, each worker. Prometheus rereads the targets file when it
changes, so the configuration follows the ports `up` gives; `up` rewrites both on each run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from cli.stack.components import Component
from shared.config import Settings

JOB = "quantdesk"
SCRAPE_INTERVAL = "15s"


def targets_path(settings: Settings) -> Path:
    return (settings.data_dir / "prometheus" / "targets.json").resolve()


def config_path(settings: Settings) -> Path:
    return (settings.data_dir / "prometheus.yml").resolve()


def write_scrape_config(settings: Settings, components: Sequence[Component]) -> Path:
    """Write the targets of ``components`` (each labelled with its name) and the
    configuration that reads them; the configuration's path."""
    targets = targets_path(settings)
    targets.parent.mkdir(parents=True, exist_ok=True)
    groups = [
        {"targets": [c.metrics], "labels": {"component": c.name}} for c in components if c.metrics
    ]
    _replace(targets, json.dumps(groups, indent=2) + "\n")
    config = config_path(settings)
    _replace(
        config,
        "# Written by `quantdesk up` (rewritten on each run): the stack's /metrics endpoints.\n"
        "# prometheus --config.file=" + str(config) + "\n"
        "global:\n"
        f"  scrape_interval: {SCRAPE_INTERVAL}\n"
        f"  evaluation_interval: {SCRAPE_INTERVAL}\n"
        "scrape_configs:\n"
        f"  - job_name: {JOB}\n"
        "    file_sd_configs:\n"
        f"      - files: [{json.dumps(str(targets))}]\n",
    )
    return config


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: Prometheus may read it at any moment."""
    partial = path.with_suffix(path.suffix + ".tmp")
    partial.write_text(text)
    partial.replace(path)
