"""Research tools: news, social posts, fundamentals, financial statements, insider trades.

Everything is bounded by the analysis time through the vendor's as-of contract
(news by publication, statements by report date, trades by filing date). Lists
come newest first whatever order a vendor uses, because the model reads the top
of a list most carefully.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import Field, StringConstraints

from shared.data.contracts import (
    DataKind,
    Fundamentals,
    InsiderTransaction,
    NewsItem,
    SocialPost,
    Statement,
    StatementKind,
)
from shared.tools.data_tools import (
    AsOfArguments,
    DataReader,
    Symbol,
    data_tool,
    register_data_tool,
)
from shared.tools.registry import Tool

NewsDays = Annotated[int, Field(ge=1, le=90, description="days back from the analysis time")]
NewsLimit = Annotated[int, Field(ge=1, le=50, description="most articles to return")]


def _news(
    data: DataReader,
    days: int,
    limit: int,
    *,
    symbol: str | None = None,
    topic: str | None = None,
) -> list[NewsItem]:
    """Articles published in the ``days`` before as_of, newest first."""
    items = data.read(
        DataKind.NEWS,
        lambda vendor: vendor.news(
            data.as_of, timedelta(days=days), symbol=symbol, topic=topic, limit=limit
        ),
        subject=symbol or (f"topic {topic!r}" if topic else "the market"),
        window=f"{days} days",
    )
    return sorted(items, key=lambda item: item.published_at, reverse=True)


class CompanyNewsArguments(AsOfArguments):
    """Arguments of get_company_news."""

    symbol: Symbol
    days: NewsDays = 7
    limit: NewsLimit = 20


@data_tool(CompanyNewsArguments)
def get_company_news(args: CompanyNewsArguments, data: DataReader) -> list[NewsItem]:
    """News articles about a company published in the last days before the analysis
    time, newest first, with source, summary and sentiment (-1 to 1) where known."""
    return _news(data, args.days, args.limit, symbol=args.symbol)


class GlobalNewsArguments(AsOfArguments):
    """Arguments of get_global_news."""

    days: NewsDays = 7
    limit: NewsLimit = 20


@data_tool(GlobalNewsArguments)
def get_global_news(args: GlobalNewsArguments, data: DataReader) -> list[NewsItem]:
    """Market-wide and macroeconomic news published in the last days before the analysis
    time, newest first."""
    return _news(data, args.days, args.limit)


class TopicNewsArguments(AsOfArguments):
    """Arguments of get_topic_news."""

    topic: Annotated[
        str,
        StringConstraints(
            strip_whitespace=True, to_lower=True, min_length=2, max_length=40, pattern=r"^[\w -]+$"
        ),
    ] = Field(description="e.g. geopolitics, macro, earnings, energy, central banks")
    days: NewsDays = 7
    limit: NewsLimit = 20


@data_tool(TopicNewsArguments)
def get_topic_news(args: TopicNewsArguments, data: DataReader) -> list[NewsItem]:
    """News on one topic (e.g. geopolitics, macro, earnings) published in the last days
    before the analysis time, newest first."""
    return _news(data, args.days, args.limit, topic=args.topic)


class SocialArguments(AsOfArguments):
    """Arguments of get_social_posts."""

    symbol: Symbol
    days: int = Field(7, ge=1, le=30, description="days back from the analysis time")
    limit: int = Field(50, ge=1, le=100, description="most posts to return")


@data_tool(SocialArguments)
def get_social_posts(args: SocialArguments, data: DataReader) -> list[SocialPost]:
    """Social-media posts about a symbol from the last days before the analysis time,
    newest first, with likes and sentiment (-1 to 1) where known."""
    posts = data.read(
        DataKind.SOCIAL,
        lambda vendor: vendor.social(
            args.symbol, data.as_of, timedelta(days=args.days), args.limit
        ),
        subject=args.symbol,
        window=f"{args.days} days",
    )
    return sorted(posts, key=lambda post: post.posted_at, reverse=True)


class FundamentalsArguments(AsOfArguments):
    """Arguments of get_fundamentals."""

    symbol: Symbol


@data_tool(FundamentalsArguments)
def get_fundamentals(args: FundamentalsArguments, data: DataReader) -> Fundamentals:
    """A company's profile and ratios (market cap, P/E, price/book, TTM revenue, net
    income and EPS, debt/equity) from statements reported by the analysis time."""
    return data.read(
        DataKind.FUNDAMENTALS,
        lambda vendor: vendor.fundamentals(args.symbol, data.as_of),
        subject=args.symbol,
    )


class StatementArguments(AsOfArguments):
    """Arguments of the statement tools."""

    symbol: Symbol
    periods: int = Field(4, ge=1, le=12, description="how many of the latest fiscal periods")


def _statements(kind: StatementKind, args: StatementArguments, data: DataReader) -> list[Statement]:
    """The latest ``periods`` statements of ``kind`` reported by as_of, newest first."""
    statements = data.read(
        DataKind.STATEMENTS,
        lambda vendor: vendor.statements(args.symbol, kind, data.as_of, args.periods),
        subject=f"{args.symbol} ({kind.value} statements)",
        window=f"{args.periods} fiscal periods",
    )
    return sorted(statements, key=lambda statement: statement.period_end, reverse=True)


STATEMENTS: dict[str, tuple[StatementKind, str]] = {
    "get_balance_sheet": (StatementKind.BALANCE, "balance sheets (assets, liabilities, equity)"),
    "get_cash_flow": (
        StatementKind.CASH_FLOW,
        "cash-flow statements (operating, investing and financing cash flows, capex)",
    ),
    "get_income_statement": (
        StatementKind.INCOME,
        "income statements (revenue, margins, net income, EPS)",
    ),
}
"""Tool name -> the statement it reads and what the model is told it holds."""


def _register_statement_tool(name: str, kind: StatementKind, holds: str) -> Tool:
    return register_data_tool(
        name,
        f"A company's {holds}, one per fiscal period, for its latest periods reported by "
        "the analysis time, newest first.",
        StatementArguments,
        lambda args, data: _statements(kind, args, data),
    )


STATEMENT_TOOLS: tuple[Tool, ...] = tuple(
    _register_statement_tool(name, kind, holds) for name, (kind, holds) in STATEMENTS.items()
)


class InsiderArguments(AsOfArguments):
    """Arguments of get_insider_transactions."""

    symbol: Symbol
    days: int = Field(90, ge=1, le=365, description="days back from the analysis time")


def read_insider(data: DataReader, symbol: str, days: int) -> list[InsiderTransaction]:
    """Trades of ``symbol`` filed in the ``days`` before as_of, newest filing first."""
    trades = data.read(
        DataKind.INSIDER,
        lambda vendor: vendor.insider(symbol, data.as_of, timedelta(days=days)),
        subject=symbol,
        window=f"{days} days",
    )
    return sorted(trades, key=lambda trade: trade.filed_at, reverse=True)


@data_tool(InsiderArguments)
def get_insider_transactions(args: InsiderArguments, data: DataReader) -> list[InsiderTransaction]:
    """Insiders' buys and sells of a company's shares filed in the last days before the
    analysis time, newest filing first."""
    return read_insider(data, args.symbol, args.days)
