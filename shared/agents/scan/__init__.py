"""The Scan's agents: one spec each (``agents``; one module per agent holds its spec and
its offline rule), the summary schema and scanner reports (``schemas``), the agents' names
and the tables derived from the specs (``roles``), what each is given (``inputs``), one
prompt builder per kind of agent (``prompts``) and the figures read back from tool results
(``facts``)."""

from shared.agents.scan import agents as _agents  # noqa: F401  (registers the specs)
