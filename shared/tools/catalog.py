"""Imports every tool module so the registry is complete wherever tools run, and names
the tools each agent is offered."""

from shared.tools import (  # noqa: F401  (each module registers its tools)
    indicator_tools,
    market_tools,
    research_tools,
    screens,
)

MARKET_TOOLS: tuple[str, ...] = ("get_ohlcv", "get_indicators")
"""The market analyst's: price history and indicators by name."""

NEWS_TOOLS: tuple[str, ...] = (
    "get_company_news",
    "get_global_news",
    "get_topic_news",
    "get_macro_series",
)
"""The news analyst's: company, world and topic news, and the macro series behind them."""

SOCIAL_TOOLS: tuple[str, ...] = ("get_social_posts", "get_company_news")
"""The social/sentiment analyst's: posts, with the news they react to."""

FUNDAMENTALS_TOOLS: tuple[str, ...] = (
    "get_fundamentals",
    "get_balance_sheet",
    "get_cash_flow",
    "get_income_statement",
    "get_insider_transactions",
)
"""The fundamentals analyst's: ratios, the three statements and insider trades."""

GEOPOLITICAL_TOOLS: tuple[str, ...] = ("get_topic_news", "get_global_news")
MOVERS_TOOLS: tuple[str, ...] = ("get_market_movers", "get_indices")
SECTOR_TOOLS: tuple[str, ...] = ("get_sector_performance",)
SMART_MONEY_TOOLS: tuple[str, ...] = (
    "screen_unusual_volume",
    "screen_insider_buying",
    "screen_52_week_high_breakouts",
)
INDUSTRY_TOOLS: tuple[str, ...] = ("get_industry_top_companies", "get_ohlcv", "get_fundamentals")
MACRO_TOOLS: tuple[str, ...] = ("get_macro_series", "get_global_news", "get_indices")
"""The Scan's scanners, one tuple each: geopolitical, movers, sector, smart money,
industry deep dive, macro synthesis."""

SCAN_TOOLS: tuple[str, ...] = tuple(
    dict.fromkeys(
        GEOPOLITICAL_TOOLS
        + MOVERS_TOOLS
        + SECTOR_TOOLS
        + SMART_MONEY_TOOLS
        + INDUSTRY_TOOLS
        + MACRO_TOOLS
    )
)
"""Every tool of the Scan, once each."""

DATA_TOOLS: tuple[str, ...] = tuple(
    dict.fromkeys(MARKET_TOOLS + NEWS_TOOLS + SOCIAL_TOOLS + FUNDAMENTALS_TOOLS + SCAN_TOOLS)
)
"""Every data tool: each reads as of the context's ``as_of``."""
