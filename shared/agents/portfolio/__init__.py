"""The Portfolio flow's agents: output schemas (``schemas``), the four agents and their LLM
roles (``roles``), what each is given (``inputs``), their prompts (``prompts``) and the
run's Markdown report (``report``)."""
