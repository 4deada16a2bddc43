"""Imports every tool module so the registry is complete wherever tools run."""

from shared.tools import indicator_tools  # noqa: F401
