"""The Portfolio flow's agents: one spec each (``agents``; one module per agent holds its
spec and its offline rule), output schemas (``schemas``), the agents' names and the table
derived from the specs (``roles``), what each is given (``inputs``), their prompts
(``prompts``) and the run's Markdown report (``report``)."""

from shared.agents.portfolio import agents as _agents  # noqa: F401  (registers the specs)
