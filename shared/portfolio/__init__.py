"""quantdesk: the paper book in SQL, valued, risk-measured and constrained strictly as of a date.

- ``models``: the records (portfolios, holdings, trades, snapshots, decisions), money as Decimal.
- ``schema``, ``store``: the versioned tables and ``PortfolioStore`` (one transaction per trade,
  booked once per idempotency key).
- ``market``: closes, histories and GICS sectors through the data router, as of a time.
- ``valuation``: the book at the as-of closes.
- ``risk``: volatility, Sharpe, Sortino, VaR, drawdown, beta, correlation, sector weights.
- ``prioritize``: the Scan's candidates scored, with the memory gate.
- ``limits``, ``costs``, ``orders``: the constraints, the broker's fees and slippage, orders.
- ``constraints``, ``sweep``: the PM's orders sized to the limits; the cash sweep into T-bills.
- ``broker``: the paper broker that fills a plan, each order under its own key.
"""
