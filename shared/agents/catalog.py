"""Every flow's agent specs, registered: import this wherever agents are answered or shown."""

from shared.agents import (  # noqa: F401  (each registers its specs)
    pipeline,
    portfolio,
    quantagent_agents,
    reflector,
    scan,
)
