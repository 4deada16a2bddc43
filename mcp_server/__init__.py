"""quantdesk over the Model Context Protocol: `quantdesk mcp`, an AI assistant's door to the runs.

The server reaches the system only through the project's own clients, as the console does
(``client.desk.Desk`` and the console's and CLI's functions): it starts flows with inputs
checked by their models, reads runs, reports, charts, decisions and books, and answers a
plan only through the Portfolio run's own update, bound to the hash of the plan a person
saw and confirmed.
"""
