"""Every flow's agent specs, registered: import this wherever agents are answered or shown."""

from shared.agents import pipeline, portfolio, scan  # noqa: F401  (each registers its specs)
