"""Imports every tool module so the registry is complete wherever tools run."""
