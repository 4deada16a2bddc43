"""The offline provider: deterministic analysts that read their inputs."""

from shared.agents import catalog as _catalog  # noqa: F401  (registers the agents' specs)
from shared.llm.offline import reflection as _reflection  # noqa: F401  (registers its analyst)
from shared.llm.offline.engine import answer_offline, register_analyst

__all__ = ["answer_offline", "register_analyst"]
