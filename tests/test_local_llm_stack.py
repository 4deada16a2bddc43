"""`quantdesk up / status / down` with a local model: the ``local-llm`` component for real.

One small stack (the two servers, the local model and the OpenAI-compatible worker)
in a temporary data dir on free ports, with ``QUANTDESK_LOCAL_LLM__MODEL`` naming the
test model; the tests run in file order: up, the model answers, status, down.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.stack.local_llm import LOCAL_LLM, MODEL_SETTING
from shared.config import ENV_PREFIX, LocalLlmSettings, Settings
from shared.llm.providers import LOCAL_MODEL, PROVIDERS
from tests.cli_process import run_quantdesk, stack_env, stack_ports, stack_settings
from tests.local_llm import cached_model
from tests.servers import STACK_BASE_HIGH, free_port_base
from tests.test_stack import _alive

pytestmark = pytest.mark.slow

ROLE = "llm-openai-compatible"
WORKER = "worker"
COMPONENTS = ("temporal", "s3", LOCAL_LLM, WORKER)
# The local model's port, placed after the ports the two servers take from the base.
LOCAL_LLM_OFFSET = 40


@dataclass
class Stack:
    env: dict[str, str]
    settings: Settings
    first_up: str
    first_up_status: int

    def quantdesk(self, *args: str) -> tuple[int, str]:
        result = run_quantdesk(self.env, *args, "--roles", ROLE)
        return result.returncode, result.stdout + result.stderr

    def pid(self, name: str) -> int | None:
        path = self.settings.data_dir / "run" / f"{name}.pid"
        return json.loads(path.read_text())["pid"] if path.exists() else None


def _states(output: str) -> dict[str, str]:
    """Component -> state, read from the printed table."""
    rows = (re.split(r"\s{2,}", line.strip()) for line in output.splitlines())
    return {cells[0]: cells[3] for cells in rows if len(cells) == 7 and cells[0] in COMPONENTS}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    model = cached_model()
    data_dir = tmp_path_factory.mktemp("local-llm-stack") / "data"
    base = free_port_base(
        lambda base: [*stack_ports(data_dir, base), base + LOCAL_LLM_OFFSET], high=STACK_BASE_HIGH
    )
    own, servers = stack_settings(data_dir, base)
    port = base + LOCAL_LLM_OFFSET
    settings = servers.model_copy(update={"local_llm": LocalLlmSettings(model=model, port=port)})
    env = stack_env(own, **{MODEL_SETTING: str(model), f"{ENV_PREFIX}LOCAL_LLM__PORT": str(port)})
    first = run_quantdesk(env, "up", "--roles", ROLE)
    stack = Stack(env, settings, first.stdout + first.stderr, first.returncode)
    yield stack
    stack.quantdesk("down")


@pytest.mark.integration
@pytest.mark.timeout(420)
class TestLocalLlmStack:
    """The lifecycle, in order, against one stack."""

    def test_up_starts_the_local_model_healthy(self, stack: Stack) -> None:
        assert stack.first_up_status == 0, stack.first_up
        assert _states(stack.first_up) == dict.fromkeys(COMPONENTS, "started")
        assert f"Local LLM        {stack.settings.local_llm.url}" in stack.first_up

    def test_the_model_answers_where_provider_llamacpp_points(self, stack: Stack) -> None:
        url = stack.settings.base_url(PROVIDERS["llamacpp"])
        assert url == f"http://127.0.0.1:{stack.settings.local_llm.port}/v1"
        with urllib.request.urlopen(f"{url}/models", timeout=10) as response:
            served = [model["id"] for model in json.loads(response.read())["data"]]
        assert served == [LOCAL_MODEL]

    def test_the_worker_is_told_the_local_models_port(self, stack: Stack) -> None:
        pid = stack.pid(WORKER)
        assert pid is not None
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        environ = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
        assert environ[f"{ENV_PREFIX}LOCAL_LLM__PORT"] == str(stack.settings.local_llm.port)

    def test_status_shows_it_running(self, stack: Stack) -> None:
        status, output = stack.quantdesk("status")
        assert status == 0, output
        assert _states(output) == dict.fromkeys(COMPONENTS, "running")
        log = stack.settings.data_dir / "logs" / f"{LOCAL_LLM}.log"
        assert f"as model {LOCAL_MODEL!r}" in log.read_text(errors="replace")

    def test_down_stops_it_cleanly_even_once_the_model_is_unset(self, stack: Stack) -> None:
        pid = stack.pid(LOCAL_LLM)
        assert pid is not None
        unset = {k: v for k, v in stack.env.items() if k != MODEL_SETTING}
        down = run_quantdesk(unset, "down", "--roles", ROLE)
        assert down.returncode == 0, down.stdout + down.stderr
        assert LOCAL_LLM in down.stdout
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
        log = stack.settings.data_dir / "logs" / f"{LOCAL_LLM}.log"
        assert "SIGTERM: stopping" in log.read_text(errors="replace")
        status, output = stack.quantdesk("status")
        assert status == 1
        assert _states(output)[LOCAL_LLM] == "stopped"
