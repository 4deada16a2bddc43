"""The TradingAgents per-ticker Pipeline's agents: schemas, typed inputs, roles and prompts.

``schemas`` (the structured outputs), ``inputs`` (what each kind of agent is
given, which is also its request context), ``roles`` (the twelve agents and
their LLM roles), ``prompts`` (one builder per kind of agent) and ``facts``
(the price facts read back from the market tools' results).
"""
