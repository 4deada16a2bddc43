"""What CLI commands print, recorded: the consoles of their modules swapped for one that records."""

from __future__ import annotations

from types import ModuleType

import pytest
from rich.console import Console


def recording_console(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> Console:
    """One recording console (wide, so lines do not wrap) in place of each module's ``console``."""
    recorded = Console(record=True, width=200)
    for module in modules:
        monkeypatch.setattr(module, "console", recorded)
    return recorded
