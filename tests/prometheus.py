"""A real Prometheus (Debian's ``prometheus`` package) for the tests, scraping what they name.

It reads its targets from a file (``file_sd_configs``), as the scrape configuration `up`
writes does, scrapes every second, keeps its data in a temporary directory, and answers
PromQL over its HTTP API.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cli.stack.servers import http_answers, wait_until
from shared.ports import LOOPBACK

SCRAPE_SECONDS = 1
START_TIMEOUT = 30.0


def free_port() -> int:
    """A port the kernel has just given out and taken back."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def debian_binary(name: str) -> str:
    """A binary of Debian's prometheus package; the test is skipped where it is not
    installed (CI installs it)."""
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"Debian's prometheus package is not installed (no {name})")
    return found


def promtool() -> str:
    return debian_binary("promtool")


class Prometheus:
    """One running Prometheus and its targets file."""

    def __init__(self, url: str, targets: Path) -> None:
        self.url = url
        self.targets = targets

    def scrape(self, *addresses: str, job: str = "quantdesk") -> None:
        """Scrape ``addresses`` (host:port) from now on (Prometheus rereads the file)."""
        self.targets.write_text(json.dumps([{"targets": list(addresses), "labels": {"job": job}}]))

    def query(self, expr: str) -> list[dict[str, object]]:
        """The instant vector ``expr`` evaluates to now."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        result: list[dict[str, object]] = body["data"]["result"]
        return result

    def value(self, expr: str) -> float | None:
        """The single value of ``expr`` (None when it is empty)."""
        result = self.query(expr)
        if not result:
            return None
        [sample] = result
        value = sample["value"]
        assert isinstance(value, list)
        return float(value[1])

    def settles_at(self, expr: str, expected: float, timeout: float = 30.0) -> float | None:
        """Wait until ``expr`` equals ``expected`` (a scrape or two); its last value."""
        deadline = time.monotonic() + timeout
        seen = self.value(expr)
        while seen != expected and time.monotonic() < deadline:
            time.sleep(0.5)
            seen = self.value(expr)
        return seen


@contextmanager
def running_prometheus(folder: Path, targets_file: Path | None = None) -> Iterator[Prometheus]:
    """A Prometheus scraping every second the targets of ``targets_file`` (one `up` wrote),
    or of ``folder/targets.json``, which ``Prometheus.scrape`` fills."""
    folder.mkdir(parents=True, exist_ok=True)
    targets = targets_file or folder / "targets.json"
    if targets_file is None:
        targets.write_text("[]")
    config = folder / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {SCRAPE_SECONDS}s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: quantdesk\n    file_sd_configs:\n"
        f"      - files: ['{targets}']\n        refresh_interval: 1s\n"
    )
    port = free_port()
    argv = [
        debian_binary("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address={LOOPBACK}:{port}",
    ]
    url = f"http://{LOOPBACK}:{port}"
    with (folder / "prometheus.log").open("ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: http_answers(f"{url}/-/ready"), timeout=START_TIMEOUT), (
            folder / "prometheus.log"
        ).read_text()[-2000:]
        yield Prometheus(url, targets)
    finally:
        process.terminate()
        process.wait(timeout=30)
