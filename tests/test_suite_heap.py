"""The suite's guard on its own process: a garbage collection during a test walks the
objects of that test's module, never the whole session's heap.

Workflow workers run in the pytest process; a full collection over the session's heap
stopped a workflow task for over 2 s under CI's load, which Temporal fails as a deadlock
(``tests/conftest.py``, ``pytest_runtest_setup``)."""

from __future__ import annotations

import gc


def test_what_outlives_a_module_is_frozen_out_of_the_collectors_sight() -> None:
    frozen, tracked = gc.get_freeze_count(), len(gc.get_objects())

    assert frozen > 50_000, f"{frozen} objects frozen: the imports at least should be"
    assert tracked < frozen // 5, f"{tracked} objects tracked against {frozen} frozen"
