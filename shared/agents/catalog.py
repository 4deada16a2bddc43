"""Every flow's agent specs, registered: import this wherever agents are answered or shown."""

from shared.agents import pipeline  # noqa: F401  (registers the Pipeline's specs)
