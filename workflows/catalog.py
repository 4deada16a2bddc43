"""Every workflow class the ``workflows`` worker role runs."""

from __future__ import annotations

WORKFLOWS: list[type] = []
