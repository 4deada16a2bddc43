"""Charts for the vision agents: candlesticks (and trendlines) as PNG bytes, drawn in memory."""
