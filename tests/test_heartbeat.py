"""The side thread that heartbeats a long sync activity (``activities.heartbeat``), run in
the SDK's own activity environment: it beats while the step runs (not at its start) and stops
with it, and a beat the worker's busy event loop did not take in time (the SDK's
``TimeoutError`` after 10 s) is skipped, never the end of the beats."""

from __future__ import annotations

import threading
import time

from temporalio.testing import ActivityEnvironment

from activities.heartbeat import keep_alive

EVERY = 0.02


def _step(seconds: float) -> None:
    with keep_alive(every=EVERY):
        time.sleep(seconds)


def test_beats_go_on_after_one_the_worker_did_not_take_in_time() -> None:
    env = ActivityEnvironment()
    beats: list[str] = []

    def heartbeat(*_details: object) -> None:
        beats.append(threading.current_thread().name)
        if len(beats) == 1:
            raise TimeoutError

    env.on_heartbeat = heartbeat
    env.run(_step, 0.5)

    assert set(beats) == {"heartbeat"}  # every beat from the side thread, none at the start
    assert len(beats) >= 5, beats


def test_a_step_shorter_than_the_interval_never_beats() -> None:
    env = ActivityEnvironment()
    beats: list[float] = []
    env.on_heartbeat = lambda *_details: beats.append(time.monotonic())

    env.run(_step, EVERY / 4)

    assert beats == []


def test_the_beats_stop_with_the_step() -> None:
    env = ActivityEnvironment()
    beats: list[float] = []
    env.on_heartbeat = lambda *_details: beats.append(time.monotonic())

    env.run(_step, 0.2)
    ended = len(beats)
    time.sleep(10 * EVERY)

    assert ended >= 3 and len(beats) == ended
