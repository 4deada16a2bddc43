"""Session fixtures: the real servers, started once per xdist worker, on free loopback ports.

- ``s3_settings``: SeaweedFS S3 (`weed mini`) with generated credentials and buckets.
- ``ts_env``: Temporal's time-skipping test server (timers jump, so no test sleeps).
- ``dev_env``: the Temporal dev server, as `quantdesk up` runs it.
- ``postgres_server``: a throwaway PostgreSQL (skipped where it is not installed); the
  URL of its server without a database: ``tests.servers.fresh_database`` makes one.
- ``database_url``: an empty database, once a SQLite file and once on that PostgreSQL, so a
  store's tests run on both.
- ``local_llm_server``: SmolLM2-135M behind llama.cpp's server (`quantdesk local-llm`),
  as `quantdesk up` runs it; a ``LocalLlmServer`` (``url`` = the OpenAI-compatible base
  URL ``http://127.0.0.1:<port>/v1``, ``model`` = the GGUF path, ``settings``).
- ``fake_llm``: a ``FakeLlmServer`` per test (the vendor clients' tests).

The session ends through ``os._exit`` with pytest's own status: a process that
used a temporalio client can otherwise abort at exit (sdk-python #300).
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from hypothesis import settings as hypothesis_settings
from temporalio.testing import WorkflowEnvironment

from shared.config import Settings
from tests.fakes.llm_server import FakeLlmServer
from tests.fakes.notifiers import Webhook
from tests.local_llm import LocalLlmServer, local_llm_for_tests
from tests.servers import (
    fresh_database,
    postgres_for_tests,
    s3_for_tests,
    start_dev_server,
    start_time_skipping,
)

_EXIT_STATUS: list[int] = []

# `quantdesk up` writes the `temporal` CLI's profile for the stack it starts
# (``cli.stack.cli_profile``): no test may write the developer's own. A module that reads the
# profile back gives its `up` a file of its own.
os.environ["TEMPORAL_CONFIG_FILE"] = str(
    Path(tempfile.mkdtemp(prefix="quantdesk-temporal-cli-")) / "temporal.toml"
)
os.environ.pop("TEMPORAL_PROFILE", None)

# Hypothesis fails an example that takes over 200 ms: a timing assertion, which a loaded
# two-core machine breaks (the McNemar properties did beside the rest of the suite).
# Speed is the benches' business; examples here only have to be right.
hypothesis_settings.register_profile("suite", deadline=None)
hypothesis_settings.load_profile("suite")


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory shared by the session's servers."""
    return tmp_path_factory.mktemp("quantdesk")


@pytest.fixture(scope="session")
def s3_settings(session_dir: Path) -> Iterator[Settings]:
    """Settings reaching a real S3 server with the buckets created."""
    with s3_for_tests(session_dir / "s3data") as settings:
        yield settings


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server on a loopback port, for the session."""
    with postgres_for_tests() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a SQLite file, then one on the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'quantdesk.db'}"
    return fresh_database(request.getfixturevalue("postgres_server"))


@pytest.fixture(scope="module")
def hook() -> Iterator[Webhook]:
    """A JSON webhook receiver (Apprise's ``json://``) for a module's notices."""
    with Webhook() as served:
        yield served


@pytest.fixture
def fake_llm() -> Iterator[FakeLlmServer]:
    """A fake LLM vendor per test, OpenAI's and Anthropic's wires on one loopback port, for
    the vendor clients' tests (test_llm_clients.py, test_llm_structured_output.py)."""
    with FakeLlmServer() as fake:
        yield fake


@pytest.fixture(scope="session")
def local_llm_server(session_dir: Path) -> Iterator[LocalLlmServer]:
    """The real llama.cpp server with SmolLM2-135M (model ``local``, 4096-token context),
    on a free loopback port; the model is cached across runs (tests/local_llm.py)."""
    with local_llm_for_tests(session_dir / "local-llm") as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def ts_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping test server per test module.

    Its clock is one for every run on it, and it stops skipping for good once a parent
    has completed while children it abandoned (Reflects, parked runs) still run: shared
    by the session, one module's leftovers made a later module's timer (a 90-minute
    approval timeout) wait in real time, depending on the order modules ran in. A
    server per module starts in about a second and leaves no module another's runs."""
    env = await start_time_skipping()
    try:
        yield env
    finally:
        await env.shutdown()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """The Temporal dev server (real persistence, real timers)."""
    env = await start_dev_server()
    try:
        yield env
    finally:
        await env.shutdown()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding a ``slow`` test first, each module's tests kept together and in order.

    The suite runs on two xdist workers with ``--dist loadfile``: a module goes whole to one
    worker, in collection order (``--no-loadscope-reorder``: by default xdist orders modules
    by their number of tests, which put the five-test multi-host module last). Started last, the stack and multi-host modules (minutes
    each) would leave one worker busy long after the other ran dry; started first, the many
    short modules fill in beside them."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)


_MODULE_NOW: list[Path] = []


def pytest_runtest_setup(item: pytest.Item) -> None:
    """At each module's first test, collect the garbage and freeze what is left.

    The workers of a test run in this process, so a full garbage collection walks the whole
    session's heap (collected modules, session servers' clients, caches: 650k objects after
    collection, 900k later) on whichever thread allocates, a workflow's included. Under the
    load of CI such a pass stopped a workflow task for over 2 s: Temporal's deadlock detector
    (TMPRL1101) failed it, and a second long pass while the run was being evicted left the
    eviction retrying for ever with the run's tasks still cancelling (temporalio 1.35): the
    run and, at the session's end, its worker's shutdown hung. Frozen objects are never
    walked, so collections stay as small as one module's own objects, as in a worker
    (``workers.main.freeze_startup_heap``). The previous module's fixtures are finalised
    before this hook runs, so what is frozen is what outlives modules."""
    if item.path not in _MODULE_NOW:
        _MODULE_NOW[:] = [item.path]
        gc.collect()
        gc.freeze()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remember the session's status for the final exit."""
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After the summary is printed: leave with pytest's status, skipping SDK teardown."""
    if _EXIT_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
