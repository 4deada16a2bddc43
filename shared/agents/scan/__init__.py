"""The Scan's agents: the summary schema and scanner reports (``schemas``), the seven
agents and their LLM roles (``roles``), what each is given (``inputs``), one prompt
builder per kind of agent (``prompts``) and the figures read back from tool results
(``facts``)."""
