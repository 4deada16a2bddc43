"""A process tree's memory and age as `quantdesk status` shows them."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from cli.stack.process_usage import shown_duration, usage_of


def test_a_tree_counts_its_children_and_its_roots_age() -> None:
    alone = usage_of(os.getpid())
    assert alone is not None and alone.rss_mb > 10
    # A child holding ~200 MB of its own: the tree's memory grows by about that much.
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; b = b'x' * (200 << 20); time.sleep(60)"]
    )
    try:
        deadline = time.monotonic() + 20
        grown = usage_of(os.getpid())
        while grown is not None and grown.rss_mb < alone.rss_mb + 150:
            assert time.monotonic() < deadline, grown
            time.sleep(0.1)
            grown = usage_of(os.getpid())
        own = usage_of(child.pid)
        assert own is not None and grown is not None and own.up_seconds < grown.up_seconds
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_gone_has_no_usage() -> None:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert usage_of(done.pid) is None


def test_durations_read_as_a_person_says_them() -> None:
    assert shown_duration(4.4) == "4 s"
    assert shown_duration(185) == "3 min 5 s"
    assert shown_duration(2 * 3600 + 600) == "2 h 10 min"
    assert shown_duration(3 * 86400 + 4 * 3600 + 59) == "3 d 4 h"
