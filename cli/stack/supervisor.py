"""Starting, checking and stopping the local stack: `quantdesk up / status / down`.

Each process we start is detached (own session, stdin from /dev/null, output
appended to ``<data_dir>/logs/<name>.log``) and recorded in
``<data_dir>/run/<name>.pid`` with its command line. A pid file counts only while
the live process under that pid still has that command line, so a reused pid is
never mistaken for ours: `up` does not skip it and `down` never signals it.

`up` heals: it starts what is missing, waits for every component together
(saying what it waits for), and restarts a worker that was running but shows no
poller (see ``_restart_stuck``). It holds a lock per data dir, touches nothing
healthy, and may be called as often as wanted, also while runs are in flight.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from cli.stack.components import (
    TEMPORAL,
    WORKER,
    Blocked,
    Component,
    Problem,
    TemporalProbe,
    plan,
)
from cli.stack.process_usage import ProcessUsage, usage_of
from cli.stack.scrape_config import write_scrape_config
from cli.stack.servers import (
    ServerLaunch,
    check_ports_distinct,
    check_ports_free,
    wait_until,
)
from shared.config import Settings
from shared.storage.credentials import ensure_generated_credentials
from workers.roles import WorkerRole

STOP_GRACE_SECONDS = 10.0
KILL_WAIT_SECONDS = 3.0
LOG_TAIL_LINES = 15
EXITED = "the process exited"
ALL_ROLES = tuple(WorkerRole)
# How often `up` checks what it waits for, and when it says so: nothing about a
# component that passes within QUIET_SECONDS, then a line every NOTICE_EVERY
# seconds, or sooner (never within NOTICE_GAP) when the reason changes.
POLL_INTERVAL = 0.25
QUIET_SECONDS = 2.0
NOTICE_EVERY = 10.0
NOTICE_GAP = 2.0

Say = Callable[[str], None]
"""Where `up` reports what it waits for and what it restarts, a line at a time."""


def _quiet(_line: str) -> None:
    """The default ``Say``: a caller without a terminal hears nothing."""


class ComponentState(StrEnum):
    """What a command found or did, as shown in the table."""

    STARTED = "started"
    RESTARTED = "restarted"
    ALREADY_RUNNING = "already running"
    RUNNING = "running"
    UNHEALTHY = "unhealthy"
    EXTERNAL = "external"
    STOPPED = "stopped"
    NOT_STARTED = "not started"


CLAIMS_HEALTH = {
    ComponentState.STARTED,
    ComponentState.RESTARTED,
    ComponentState.ALREADY_RUNNING,
    ComponentState.RUNNING,
    ComponentState.EXTERNAL,
}


class ComponentReport(BaseModel):
    """One row of `up`, `status` or `down`."""

    name: str
    pid: int | None = None
    address: str = Field(description="host:port of a server, task queue of a worker")
    state: ComponentState
    healthy: bool = Field(description="its check passed (`down` checks nothing)")
    log: Path | None = None
    detail: str = Field("", description="why it is unhealthy, with the end of its log")
    usage: ProcessUsage | None = Field(
        None, description="memory and age of a process we run (with its children), if known"
    )
    metrics: str | None = Field(None, description="host:port of its /metrics endpoint")


class PidRecord(BaseModel):
    """What a pid file holds: the pid, the command line it must still have, and what it was
    started able to do (``ServerLaunch.answers``)."""

    pid: int
    argv: list[str]
    answers: str = ""


def _pid_path(settings: Settings, name: str) -> Path:
    return settings.data_dir / "run" / f"{name}.pid"


def _log_path(settings: Settings, name: str) -> Path:
    return settings.data_dir / "logs" / f"{name}.log"


def _command_line(pid: int) -> str | None:
    """The live command line of ``pid``; None for no process or a zombie (it has none)."""
    if Path("/proc/self").exists():
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return " ".join(raw.decode(errors="replace").split("\0")).strip() or None
    shown = subprocess.run(["ps", "-p", str(pid), "-o", "command="], capture_output=True, text=True)
    return shown.stdout.strip() or None


def _is_ours(record: PidRecord) -> bool:
    """Whether ``record.pid`` is alive and still runs the command we started.

    A process this one spawned is ours for as long as it has not exited (its pid
    cannot be reused before we reap it), and its command line is not read: right
    after the exec the kernel may still show it empty (the parent resumes before
    the new program's arguments are mapped; seen under load, where `up` took a
    just-started dev server for dead and exited 1). Any other pid is ours only
    while its live command line is the one recorded.
    """
    try:
        # Reaps it if it is our own exited child, so it does not linger as a zombie.
        pid, _status = os.waitpid(record.pid, os.WNOHANG)
    except ChildProcessError:
        return _command_line(record.pid) == " ".join(record.argv)
    return pid == 0


def _live_record(settings: Settings, name: str) -> PidRecord | None:
    """The record of a running process we started, dropping a stale pid file."""
    path = _pid_path(settings, name)
    try:
        record = PidRecord.model_validate_json(path.read_text())
    except (OSError, ValidationError):
        record = None
    if record is not None and _is_ours(record):
        return record
    path.unlink(missing_ok=True)
    return None


def _spawn(settings: Settings, name: str, launch: ServerLaunch) -> PidRecord:
    """Start a process detached from this terminal, and record its pid."""
    log = _log_path(settings, name)
    if launch.cwd is not None:
        launch.cwd.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        out.write(f"--- {stamp} quantdesk up: {' '.join(launch.argv)}\n".encode())
        out.flush()
        process = subprocess.Popen(
            launch.argv,
            cwd=launch.cwd,
            env={**os.environ, **launch.env},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    record = PidRecord(pid=process.pid, argv=launch.argv, answers=launch.answers)
    _pid_path(settings, name).write_text(record.model_dump_json())
    return record


def _log_tail(path: Path) -> str:
    """The last lines of a log, to show why a component is unhealthy."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _health(component: Component, record: PidRecord | None) -> Problem:
    """The component's check: of the process we run under ``record``, or of an external one."""
    if record is None:
        return component.check(None)
    return component.check(record.pid) if _is_ours(record) else EXITED


@dataclass
class _Wait:
    """One component `up` waits for: in what state, for how long, and what it last found."""

    component: Component
    record: PidRecord | None  # None for an external endpoint
    state: ComponentState
    limit: float
    since: float = field(default_factory=time.monotonic)
    problem: Problem = "not checked yet"
    told: Problem = None
    told_at: float = float("-inf")

    def settled(self) -> bool:
        """Check once; settled when it passed, the process exited, waiting cannot help
        (``Blocked``) or the time is up."""
        self.problem = _health(self.component, self.record)
        waited = time.monotonic() - self.since
        blocked = isinstance(self.problem, Blocked)
        return self.problem in (None, EXITED) or blocked or waited >= self.limit

    def tell(self, say: Say) -> None:
        """Say what is missing, unless it is early or was just said."""
        now = time.monotonic()
        waited = now - self.since
        gap = NOTICE_GAP if self.problem != self.told else NOTICE_EVERY
        if waited >= QUIET_SECONDS and now - self.told_at >= gap:
            say(f"waiting for {self.component.name}: {self.problem} ({waited:.0f} s)")
            self.told, self.told_at = self.problem, now


def _settle(waits: list[_Wait], say: Say) -> None:
    """Check every wait together until each one passed, exited or ran out of time."""
    pending = list(waits)
    while pending:
        pending = [wait for wait in pending if not wait.settled()]
        for wait in pending:
            wait.tell(say)
        if pending:
            time.sleep(POLL_INTERVAL)


def _report(
    settings: Settings,
    component: Component,
    state: ComponentState,
    record: PidRecord | None = None,
    problem: Problem = None,
) -> ComponentReport:
    """A row. A state that claims health turns "unhealthy" on a problem, with the log's end."""
    claims_health = state in CLAIMS_HEALTH
    log = _log_path(settings, component.name) if component.launch else None
    detail = problem or ""
    if problem and claims_health and log is not None:
        detail = f"{problem}; last lines of {log}:\n{_log_tail(log)}"
    return ComponentReport(
        name=component.name,
        pid=record.pid if record else None,
        address=component.address,
        state=ComponentState.UNHEALTHY if problem and claims_health else state,
        healthy=claims_health and problem is None,
        log=log,
        detail=detail,
        usage=usage_of(record.pid) if record and claims_health else None,
        metrics=component.metrics if component.launch else None,
    )


def _observe(
    settings: Settings, component: Component, record: PidRecord | None, state: ComponentState
) -> ComponentReport:
    """Check a component once: one we run (in ``state``), an external one, or a stopped one."""
    if record is not None:
        return _report(settings, component, state, record, _health(component, record))
    if component.launch is None:
        return _report(settings, component, ComponentState.EXTERNAL, None, _health(component, None))
    return _report(settings, component, ComponentState.STOPPED)


def _start_or_watch(
    settings: Settings, component: Component, record: PidRecord | None, launch: ServerLaunch | None
) -> _Wait:
    """Start the component if it is missing; either way, what `up` waits for."""
    if launch is not None:
        record = _spawn(settings, component.name, launch)
        return _Wait(component, record, ComponentState.STARTED, component.timeout)
    if record is not None:
        return _Wait(component, record, ComponentState.ALREADY_RUNNING, component.patience)
    return _Wait(component, None, ComponentState.EXTERNAL, component.timeout)


def _is_stuck(wait: _Wait) -> bool:
    """A process that was running and exited while `up` waited, or a worker that never polled."""
    if wait.state is not ComponentState.ALREADY_RUNNING:
        return False
    return wait.problem == EXITED or (wait.component.is_worker and wait.problem is not None)


def _restart_stuck(settings: Settings, waits: list[_Wait], say: Say) -> list[_Wait]:
    """Restart what was running but is stuck, and wait for the new processes.

    Why a worker is restarted rather than waited for longer: a worker whose server
    went away keeps its process and retries its polls with a back-off. It usually
    polls again within seconds of the server's return (hence the grace), but
    nothing bounds that, and a worker whose poll loop died for another reason never
    polls again. A new process connects at once and is checked like any other.
    This is safe while runs are in flight: only a worker without a poller is
    touched, SIGTERM first (an activity it still runs may finish within
    STOP_GRACE_SECONDS), and what it held is retried by Temporal once the
    activity's timeout expires (activities are idempotent). A server is never
    restarted while it lives; one that exited while `up` waited is started again.
    """
    stuck = [
        (wait, launch) for wait in waits if (launch := wait.component.launch) and _is_stuck(wait)
    ]
    if not stuck:
        return waits
    for wait, _launch in stuck:
        waited = time.monotonic() - wait.since
        say(f"restarting {wait.component.name} after {waited:.0f} s: {wait.problem}")
    _terminate([wait.record for wait, _launch in stuck if wait.record and _is_ours(wait.record)])
    fresh: dict[str, _Wait] = {}
    for wait, launch in stuck:
        spec = launch()
        check_ports_free(spec, patience=KILL_WAIT_SECONDS)
        record = _spawn(settings, wait.component.name, spec)
        fresh[wait.component.name] = _Wait(
            wait.component, record, ComponentState.RESTARTED, wait.component.timeout
        )
    _settle(list(fresh.values()), say)
    return [fresh.get(wait.component.name, wait) for wait in waits]


def _start(
    settings: Settings,
    group: list[Component],
    running: dict[str, PidRecord | None],
    launches: dict[str, ServerLaunch],
) -> list[_Wait]:
    """Start the group's missing processes at once; what `up` then waits for."""
    return [_start_or_watch(settings, c, running[c.name], launches.get(c.name)) for c in group]


def _heal(settings: Settings, waits: list[_Wait], say: Say) -> list[_Wait]:
    """Wait for all together, then restart the stuck and wait for them."""
    _settle(waits, say)
    return _restart_stuck(settings, waits, say)


def _reports(settings: Settings, waits: list[_Wait]) -> list[ComponentReport]:
    return [_report(settings, w.component, w.state, w.record, w.problem) for w in waits]


@contextlib.contextmanager
def _exclusive(settings: Settings) -> Iterator[None]:
    """One `up` or `down` at a time per data dir, so two never start the same server twice."""
    for folder in ("run", "logs"):
        (settings.data_dir / folder).mkdir(parents=True, exist_ok=True)
    with (settings.data_dir / "run" / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _live_workers(settings: Settings) -> dict[str, PidRecord]:
    """Every worker process of this data dir's stack that is running, by component name."""
    return {
        path.stem: record
        for path in sorted((settings.data_dir / "run").glob(f"{WORKER}*.pid"))
        if (record := _live_record(settings, path.stem))
    }


def _replace_unplanned_workers(
    settings: Settings,
    workers: list[Component],
    running: dict[str, PidRecord | None],
    say: Say,
    *,
    split: bool,
) -> None:
    """Stop the worker processes that do not serve what `up` plans now, before it starts the
    planned ones: those of the other shape (one per role when one serves all, and the other
    way round) and a planned one serving other roles (its command line differs). Split
    workers of roles not named stay: `up --split --roles a` adds a, it takes nothing away."""
    launches = {c.name: c.launch() for c in workers if c.launch}
    stale = {
        name: record
        for name, record in _live_workers(settings).items()
        if (name == WORKER if split else name != WORKER)
        or ((launch := launches.get(name)) is not None and not _launched_as(record, launch))
    }
    if not stale:
        return
    for name, record in stale.items():
        answering = f"; answering {record.answers}" if record.answers else ""
        say(
            f"stopping {name} (roles {record.argv[-1]}{answering}): replaced by {', '.join(launches)}"
        )
    _terminate(list(stale.values()))
    for name in stale:
        _pid_path(settings, name).unlink(missing_ok=True)
        if name in running:
            running[name] = None


def _launched_as(record: PidRecord, launch: ServerLaunch) -> bool:
    """Whether the process under ``record`` was started as ``launch`` would start it now."""
    return record.argv == launch.argv and record.answers == launch.answers


def up(
    settings: Settings,
    roles: Sequence[WorkerRole] = ALL_ROLES,
    say: Say = _quiet,
    *,
    split: bool = False,
) -> list[ComponentReport]:
    """Start every component that is not running, servers before workers, and check them all.

    Every port is checked before anything starts, so a conflict leaves nothing half-up, and
    so are the payload keys: no process of the stack could read a run without them.
    Workers start once Temporal is healthy, while the other servers still come up (a
    worker connects to nothing else to start); not at all while it is unhealthy. One worker
    process serves every role in ``roles`` (with ``split``: one process per role).
    ``say`` hears what `up` waits for while it waits, and what it restarts.
    """
    settings.payload_keys()
    with _exclusive(settings), TemporalProbe(settings) as probe:
        if settings.s3.embedded:
            ensure_generated_credentials(settings.data_dir)
        components = plan(settings, roles, probe, split=split)
        write_scrape_config(settings, components)
        servers = [c for c in components if not c.is_worker]
        workers = [c for c in components if c.is_worker]
        running = {c.name: _live_record(settings, c.name) for c in components}
        _replace_unplanned_workers(settings, workers, running, say, split=split)
        launches = {c.name: c.launch() for c in components if c.launch and running[c.name] is None}
        check_ports_distinct(launches.values())
        for launch in launches.values():
            check_ports_free(launch)
        server_waits = _start(settings, servers, running, launches)
        cluster = [w for w in server_waits if w.component.name == TEMPORAL]
        rest = [w for w in server_waits if w.component.name != TEMPORAL]
        cluster = _heal(settings, cluster, say)
        if not all(w.problem is None for w in cluster):
            why = f"not started: {TEMPORAL} unhealthy"
            return _reports(settings, cluster + _heal(settings, rest, say)) + [
                _report(settings, w, ComponentState.NOT_STARTED, problem=why) for w in workers
            ]
        rest += _start(settings, workers, running, launches)
        return _reports(settings, cluster + _heal(settings, rest, say))


def _running_split(settings: Settings) -> bool:
    """Whether the workers running are one per role (`up --split`) rather than one for all."""
    names = set(_live_workers(settings))
    return WORKER not in names and bool(names)


def status(settings: Settings, roles: Sequence[WorkerRole] = ALL_ROLES) -> list[ComponentReport]:
    """Each component's pid, address and health from one cheap check; starts nothing. The
    workers are shown in the shape they run in (one for all roles, or one per role)."""
    with TemporalProbe(settings) as probe:
        return [
            _observe(settings, c, _live_record(settings, c.name), ComponentState.RUNNING)
            for c in plan(settings, roles, probe, split=_running_split(settings))
        ]


def _send(records: Iterable[PidRecord], signum: signal.Signals) -> None:
    for record in records:
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signum)


def _terminate(records: list[PidRecord]) -> None:
    """SIGTERM all at once so they drain in parallel; SIGKILL whoever outlives the grace."""
    _send(records, signal.SIGTERM)
    wait_until(lambda: not any(map(_is_ours, records)), timeout=STOP_GRACE_SECONDS)
    _send([r for r in records if _is_ours(r)], signal.SIGKILL)
    wait_until(lambda: not any(map(_is_ours, records)), timeout=KILL_WAIT_SECONDS)


def down(settings: Settings, roles: Sequence[WorkerRole] = ALL_ROLES) -> list[ComponentReport]:
    """Stop exactly the processes `up` started, workers first (they drain), then servers.

    The workers stopped are those of ``roles`` in the shape they run in: with one worker for
    all roles, that one (a process cannot stop a part of itself). External endpoints are
    neither checked nor touched: they are not ours to stop.
    """
    with _exclusive(settings), TemporalProbe(settings) as probe:
        components = plan(settings, roles, probe, split=_running_split(settings))
        running = {c.name: _live_record(settings, c.name) for c in components}
        for workers in (True, False):
            _terminate([r for c in components if c.is_worker is workers and (r := running[c.name])])
        unplanned = _stop_unplanned(settings, {c.name for c in components})
        for component in components:
            _pid_path(settings, component.name).unlink(missing_ok=True)
    return [
        _report(settings, c, ComponentState.STOPPED, record)
        if (record := running[c.name]) or c.launch
        else _report(settings, c, ComponentState.EXTERNAL)
        for c in components
    ] + unplanned


def _stop_unplanned(settings: Settings, planned: set[str]) -> list[ComponentReport]:
    """Stop servers an earlier `up` started that today's settings no longer plan (the
    local model after QUANTDESK_LOCAL_LLM__MODEL was unset): `up` started them, so `down`
    stops them. Workers left out of ``roles`` are not servers and stay."""
    stopped = []
    for path in sorted((settings.data_dir / "run").glob("*.pid")):
        name = path.stem
        unplanned = name not in planned and not name.startswith(WORKER)
        record = _live_record(settings, name) if unplanned else None
        if record is None:
            continue
        _terminate([record])
        path.unlink(missing_ok=True)
        stopped.append(
            ComponentReport(
                name=name,
                pid=record.pid,
                address="(no longer in the settings)",
                state=ComponentState.STOPPED,
                healthy=False,
                log=_log_path(settings, name),
            )
        )
    return stopped
