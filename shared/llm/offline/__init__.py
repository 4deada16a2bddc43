"""The offline provider: deterministic analysts that read their inputs."""

from shared.agents import catalog as _catalog  # noqa: F401  (registers the agents' specs)
from shared.llm.offline.engine import answer_offline

__all__ = ["answer_offline"]
