"""quantdesk: the book's side of a real broker (Alpaca paper trading first), in SQL.

A book bound to a broker never fills its own orders: it writes an order intent
before anything is sent, books the fills the broker reports (each once), and
checks every order against its guardrails and halt first. The HTTP client and
the Temporal activities call these; nothing here speaks to a broker.

- ``models``: the records (order intents, fills, halts, adoptions), money as Decimal.
- ``intents``: client order ids, the intent's statuses and the moves between them.
- ``guardrails``: the limits an order must pass before it may be sent.
- ``drift``: the book against the broker's positions, cash and fills.
- ``book``: ``BrokerBook``, the portfolio store with intents, fills, halts and adoptions.

Built on ``shared.portfolio``. The tables are the book's: they live in
``shared.portfolio.schema`` and migrate with it, so one schema version covers a book
and its orders; the book's own record carries only its ``BrokerKind``.
"""
