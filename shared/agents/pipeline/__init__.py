"""The TradingAgents per-ticker Pipeline's agents: one spec each, and what the specs share.

``agents`` (every agent's spec, registered in running order; one module per agent
holds its spec and its offline rule), ``schemas`` (the structured outputs),
``inputs`` (what each kind of agent is given, which its request carries), ``roles``
(the agents' names and the tables derived from the specs), ``prompts`` (one builder
per kind of agent) and ``facts`` (the price facts read back from the market tools).
"""

from shared.agents.pipeline import agents as _agents  # noqa: F401  (registers the specs)
