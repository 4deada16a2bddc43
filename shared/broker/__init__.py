"""quantdesk's brokers: where a book's orders go (Alpaca first), and what the book knows of them.

A book bound to a broker never fills its own orders: it writes an order intent
before anything is sent, books the fills the broker reports (each once), and
checks every order against its guardrails and halt first.

- ``models``: the records (order intents, fills, halts, adoptions), money as Decimal.
- ``intents``: client order ids, the intent's statuses and the moves between them.
- ``guardrails``: the limits an order must pass before it may be sent.
- ``drift``: the book against the broker's positions, cash and fills.
- ``book``: ``BrokerBook``, the portfolio store with intents, fills, halts and adoptions.
- ``alpaca_client``, ``alpaca_wire``, ``alpaca_errors``: a thin client of Alpaca's
  Trading API v2 (one request per call, Temporal owns retries), its wire models and
  its failures.

The tables are the book's: they live in ``shared.portfolio.schema`` and migrate with
it, so one schema version covers a book and its orders.
"""
