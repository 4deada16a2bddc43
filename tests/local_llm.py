"""The real local model for the test suite: SmolLM2-135M behind llama.cpp's server.

The model is installed once per machine, outside the repository, by the same
function as `quantdesk model install` (into ``~/.cache/quantdesk/models``, or
``$QUANTDESK_TEST_MODEL_CACHE``), and served by the same launch spec as `quantdesk
up`'s ``local-llm`` component (``quantdesk local-llm`` in a subprocess), on a free
loopback port.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cli.model import install_model
from cli.stack.local_llm import health_problem, local_llm_server
from cli.stack.servers import wait_until
from shared.config import LocalLlmSettings, Settings, load_settings
from tests.servers import free_port_base, running

MODEL_CACHE_VARIABLE = "QUANTDESK_TEST_MODEL_CACHE"
TEST_MODEL = "smollm2"
TEST_CONTEXT_TOKENS = 4096
# Idle, SmolLM2 loads in under a second here; a loaded 2-core machine is slower.
HEALTH_TIMEOUT = 60.0
LOG_TAIL_CHARS = 3000


@dataclass(frozen=True)
class LocalLlmServer:
    """A running llama.cpp server: where to reach it, and what it serves."""

    url: str
    """The OpenAI-compatible base URL, ``http://127.0.0.1:<port>/v1``."""
    model: Path
    """The GGUF file it serves (as model ``local``)."""
    settings: LocalLlmSettings
    """The ``local_llm`` section it runs with: ``load_settings(local_llm=...)`` reaches it."""


def model_cache() -> Path:
    """Where test models are kept across runs."""
    configured = os.environ.get(MODEL_CACHE_VARIABLE)
    return Path(configured) if configured else Path.home() / ".cache" / "quantdesk" / "models"


def cached_model() -> Path:
    """SmolLM2-135M, installed into the cache if it is not there yet (or not intact)."""
    return install_model(TEST_MODEL, model_cache())


def _log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-LOG_TAIL_CHARS:] if log.exists() else ""


@contextmanager
def local_llm_for_tests(folder: Path) -> Iterator[LocalLlmServer]:
    """``quantdesk local-llm`` serving the test model until the block ends."""
    model = cached_model()
    folder.mkdir(parents=True, exist_ok=True)

    def settings_for(port: int) -> Settings:
        # One thread: the suite runs on two xdist workers beside it, and llama.cpp's threads
        # meet at a barrier for every operation, so a second thread waiting for a busy core
        # holds up every token (a 63 s QuantAgent took 511 s on a loaded machine).
        section = {
            "model": model,
            "port": port,
            "context_tokens": TEST_CONTEXT_TOKENS,
            "threads": 1,
        }
        return load_settings(data_dir=folder, local_llm=section)

    port = free_port_base(lambda base: [base], high=30000)
    settings = settings_for(port)
    log = folder / "local-llm.log"
    with running(local_llm_server(settings), log) as process:

        def healthy() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"local-llm exited: {_log_tail(log)}")
            return health_problem(settings) is None

        if not wait_until(healthy, timeout=HEALTH_TIMEOUT, interval=0.2):
            problem = health_problem(settings)
            raise RuntimeError(f"local-llm not healthy in {HEALTH_TIMEOUT:.0f} s: {problem}")
        yield LocalLlmServer(settings.local_llm.url, model, settings.local_llm)
