"""The data tools: schemas from their arguments models, and reads bound to as_of (the tools that
compute from the data, indicators and screens, are test_computed_tools.py).

Each tool runs through ``run_tool`` against a router over ``FakeVendor``, which
answers with structured canned records and records every read it is asked for,
so a test checks both what the tool read (kind, arguments, exactly the context's
as_of) and what it returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from pydantic_core import to_jsonable_python

from shared.data.contracts import (
    POINT_IN_TIME,
    DataKind,
    Fundamentals,
    IndexLevel,
    IndustryCompany,
    InsiderTransaction,
    Listing,
    MacroPoint,
    MacroSeries,
    MarketMovers,
    Mover,
    NewsItem,
    Reach,
    Sector,
    SectorPerformance,
    SocialPost,
    Statement,
    StatementKind,
)
from shared.data.router import DataRouter
from shared.errors import NoData
from shared.llm.contracts import ToolCall, ToolRequest, ToolResult
from shared.market.bars import Bar, Timeframe
from shared.ta.indicator_names import IndicatorByName
from shared.tools.catalog import (
    DATA_TOOLS,
    FUNDAMENTALS_TOOLS,
    MARKET_TOOLS,
    NEWS_TOOLS,
    SCAN_TOOLS,
    SOCIAL_TOOLS,
)
from shared.tools.registry import TOOLS, ToolServices, run_tool, tool_specs

AS_OF = datetime(2024, 3, 1, 21, 0, tzinfo=UTC)


def _walk(symbol: str, count: int, end: datetime = AS_OF) -> list[Bar]:
    """Daily bars of a seeded random walk, the last one starting before ``end``."""
    rng = np.random.default_rng(sum(map(ord, symbol)))
    closes = 100 * np.exp(np.cumsum(rng.normal(0, 0.015, count)))
    first = end.replace(hour=0) - timedelta(days=count)
    return [
        Bar(
            time=first + timedelta(days=i),
            open=close * 0.998,
            high=close * 1.01,
            low=close * 0.99,
            close=close,
            volume=float(rng.integers(1_000, 5_000)),
        )
        for i, close in enumerate(closes)
    ]


def _news(n: int, **about: Any) -> NewsItem:
    return NewsItem(
        id=f"n{n}",
        published_at=AS_OF - timedelta(hours=6 * n + 1),
        title=f"headline {n}",
        summary="what happened",
        source="wire",
        **about,
    )


def _statement(kind: StatementKind, quarter: int) -> Statement:
    period_end = date(2023, 3 * quarter, 28)
    return Statement(
        symbol="AAA",
        kind=kind,
        fiscal_period=f"2023Q{quarter}",
        period_end=period_end,
        reported_at=datetime(2023, 3 * quarter, 28, tzinfo=UTC) + timedelta(days=30),
        items={"revenue": 1e9 * quarter, "net_income": 1e8 * quarter},
    )


def _trade(
    symbol: str, side: str, shares: float, days_ago: int, insider: str = "J. Doe"
) -> InsiderTransaction:
    return InsiderTransaction(
        symbol=symbol,
        insider=insider,
        role="CEO",
        side=side,
        shares=shares,
        price=100.0,
        traded_on=(AS_OF - timedelta(days=days_ago + 2)).date(),
        filed_at=AS_OF - timedelta(days=days_ago),
    )


def _mover(symbol: str, change: float) -> Mover:
    return Mover(symbol=symbol, name=symbol, last=50.0, change_pct=change, volume=1e6)


LISTINGS = [
    Listing(symbol="AAA", name="Aaa Corp", sector=Sector.ENERGY, industry="Oil"),
    Listing(symbol="BBB", name="Bbb Inc", sector=Sector.INFORMATION_TECHNOLOGY, industry="Chips"),
    Listing(symbol="CCC", name="Ccc plc", sector=Sector.UTILITIES, industry="Power"),
    Listing(symbol="XLE", name="Energy ETF", asset_type="etf"),
]


@dataclass
class FakeVendor:
    """A vendor of canned, structured records that records every read it is asked for.

    ``bars`` maps a symbol to its full history (``ohlcv`` returns its tail);
    ``trades`` a symbol to its insider trades; a symbol missing from either has no
    data. ``errors`` makes every read of a kind raise.
    """

    name: str = "fake"
    kinds: frozenset[DataKind] = frozenset(DataKind)
    bars: dict[str, list[Bar]] = field(default_factory=dict)
    trades: dict[str, list[InsiderTransaction]] = field(default_factory=dict)
    errors: dict[DataKind, Exception] = field(default_factory=dict)
    reads: list[tuple[str, dict[str, Any], object]] = field(default_factory=list)

    def reach(self, kind: DataKind) -> Reach:
        return POINT_IN_TIME

    def _answer(self, kind: DataKind, answer: Callable[[], Any], /, **arguments: Any) -> Any:
        if kind in self.errors:
            raise self.errors[kind]
        value = answer()
        self.reads.append((kind.value, arguments, value))
        return value

    def universe(self, as_of: datetime) -> list[Listing]:
        return self._answer(DataKind.UNIVERSE, lambda: LISTINGS, as_of=as_of)

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> Any:
        def tail() -> list[Bar]:
            if symbol not in self.bars:
                raise NoData(f"no bars for {symbol}")
            return self.bars[symbol][-lookback:]

        return self._answer(
            DataKind.OHLCV, tail, symbol=symbol, timeframe=timeframe, as_of=as_of, lookback=lookback
        )

    def news(
        self,
        as_of: datetime,
        window: timedelta,
        *,
        symbol: str | None = None,
        topic: str | None = None,
        limit: int = 20,
    ) -> list[NewsItem]:
        about = {"symbols": [symbol]} if symbol else {"topics": [topic]} if topic else {}
        return self._answer(
            DataKind.NEWS,
            lambda: [_news(n, **about) for n in range(min(limit, 3))],
            as_of=as_of,
            window=window,
            symbol=symbol,
            topic=topic,
            limit=limit,
        )

    def social(self, symbol: str, as_of: datetime, window: timedelta, limit: int = 50) -> Any:
        def posts() -> list[SocialPost]:
            return [
                SocialPost(
                    id=f"p{n}",
                    posted_at=as_of - timedelta(hours=n + 1),
                    author=f"user{n}",
                    text=f"${symbol} to the moon",
                    symbol=symbol,
                    likes=n,
                    sentiment=0.5,
                )
                for n in range(2)
            ]

        return self._answer(
            DataKind.SOCIAL, posts, symbol=symbol, as_of=as_of, window=window, limit=limit
        )

    def fundamentals(self, symbol: str, as_of: datetime) -> Fundamentals:
        return self._answer(
            DataKind.FUNDAMENTALS,
            lambda: Fundamentals(
                symbol=symbol,
                as_of=as_of,
                name="Aaa Corp",
                sector=Sector.ENERGY,
                industry="Oil",
                pe_ratio=12.5,
                latest_period="2023Q4",
            ),
            symbol=symbol,
            as_of=as_of,
        )

    def statements(
        self, symbol: str, kind: StatementKind, as_of: datetime, periods: int = 4
    ) -> list[Statement]:
        return self._answer(
            DataKind.STATEMENTS,
            lambda: [_statement(kind, q) for q in (4, 3, 2, 1)][:periods],
            symbol=symbol,
            kind=kind,
            as_of=as_of,
            periods=periods,
        )

    def insider(self, symbol: str, as_of: datetime, window: timedelta) -> Any:
        def trades() -> list[InsiderTransaction]:
            if symbol not in self.trades:
                raise NoData(f"no filings for {symbol}")
            return self.trades[symbol]

        return self._answer(DataKind.INSIDER, trades, symbol=symbol, as_of=as_of, window=window)

    def sectors(self, as_of: datetime) -> list[SectorPerformance]:
        return self._answer(
            DataKind.SECTORS,
            lambda: [
                SectorPerformance(
                    sector=Sector.ENERGY,
                    etf="XLE",
                    return_1d=0.4,
                    return_5d=1.2,
                    return_21d=-3.0,
                    return_ytd=None,
                )
            ],
            as_of=as_of,
        )

    def industry(self, sector: Sector, as_of: datetime, limit: int = 10) -> Any:
        return self._answer(
            DataKind.INDUSTRY,
            lambda: [
                IndustryCompany(
                    symbol="AAA",
                    name="Aaa Corp",
                    sector=sector,
                    industry="Oil",
                    market_cap=5e10,
                    return_21d=2.5,
                )
            ],
            sector=sector,
            as_of=as_of,
            limit=limit,
        )

    def movers(self, as_of: datetime, limit: int = 10) -> MarketMovers:
        return self._answer(
            DataKind.MOVERS,
            lambda: MarketMovers(
                as_of=as_of,
                gainers=[_mover("AAA", 7.5)],
                losers=[_mover("BBB", -6.1)],
                most_active=[_mover("CCC", 0.3)],
            ),
            as_of=as_of,
            limit=limit,
        )

    def indices(self, as_of: datetime) -> list[IndexLevel]:
        return self._answer(
            DataKind.INDICES,
            lambda: [
                IndexLevel(
                    symbol="^GSPC",
                    name="S&P 500",
                    level=5100.0,
                    change_1d_pct=0.8,
                    change_21d_pct=3.1,
                )
            ],
            as_of=as_of,
        )

    def macro(self, series: str, as_of: datetime, lookback: int = 24) -> MacroSeries:
        return self._answer(
            DataKind.MACRO,
            lambda: MacroSeries(
                series=series,
                name="Federal funds rate",
                unit="%",
                points=[
                    MacroPoint(
                        observed=date(2024, 1, 1),
                        released_at=datetime(2024, 2, 1, tzinfo=UTC),
                        value=5.33,
                    )
                ],
            ),
            series=series,
            as_of=as_of,
            lookback=lookback,
        )


def services_over(*vendors: FakeVendor) -> ToolServices:
    """Services whose router asks ``vendors`` in order for every kind."""
    names = tuple(vendor.name for vendor in vendors)
    router = DataRouter({v.name: v for v in vendors}, {kind: names for kind in DataKind})
    return ToolServices(router=router)


def call_tool(
    name: str,
    arguments: dict[str, Any],
    services: ToolServices,
    context: dict[str, Any] | None = None,
) -> ToolResult:
    """``run_tool`` as the activity runs it, with as_of fixed to ``AS_OF`` by default."""
    request = ToolRequest(
        call=ToolCall(id="c1", name=name, arguments=arguments),
        context={"as_of": AS_OF.isoformat(), **(context or {})},
    )
    return run_tool(request, services=lambda: services)


def answer_of(result: ToolResult) -> dict[str, Any]:
    """The parsed content of a successful data tool result."""
    assert result.ok, result.content
    return json.loads(result.content)


# --- Schemas and arguments --------------------------------------------------------------


def test_every_analyst_tuple_names_registered_tools() -> None:
    for names in (MARKET_TOOLS, NEWS_TOOLS, SOCIAL_TOOLS, FUNDAMENTALS_TOOLS, SCAN_TOOLS):
        assert set(names) <= set(DATA_TOOLS) <= set(TOOLS)
    assert len(DATA_TOOLS) == 19


def test_data_tool_schemas_hide_as_of_and_bound_every_number() -> None:
    for spec in tool_specs(DATA_TOOLS):
        properties = spec.parameters["properties"]
        assert "as_of" not in properties, spec.name
        assert "as_of" not in spec.parameters.get("required", []), spec.name
        assert spec.description and "analysis time" in spec.description, spec.name
        for prop, schema in properties.items():
            assert "description" in schema, (spec.name, prop)
            if schema.get("type") in ("integer", "number"):
                assert {"minimum", "maximum", "default"} <= set(schema), (spec.name, prop)


def test_indicator_names_are_offered_as_an_enum() -> None:
    (spec,) = tool_specs(["get_indicators"])

    names = spec.parameters["properties"]["names"]
    assert spec.parameters["required"] == ["symbol", "names"]
    assert names["minItems"] == 1
    assert set(spec.parameters["$defs"]["IndicatorByName"]["enum"]) == set(IndicatorByName)


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("get_ohlcv", {"symbol": "AAA", "lookback": 10_000}, "lookback"),
        ("get_ohlcv", {"symbol": "AAA", "timeframe": "2d"}, "timeframe"),
        ("get_ohlcv", {"symbol": "AA A"}, "symbol"),
        ("get_indicators", {"symbol": "AAA", "names": ["rsi", "sma_77"]}, "names.1"),
        ("get_indicators", {"symbol": "AAA", "names": []}, "names"),
        ("get_company_news", {"symbol": "AAA", "days": 0}, "days"),
        ("get_company_news", {"symbol": "AAA", "ticker": "AAA"}, "ticker"),
        ("get_industry_top_companies", {"sector": "Crypto"}, "sector"),
        ("screen_unusual_volume", {"min_relative_volume": 0.5}, "min_relative_volume"),
    ],
)
def test_bad_arguments_give_an_error_result_naming_the_field(
    name: str, arguments: dict[str, Any], field: str
) -> None:
    vendor = FakeVendor()

    result = call_tool(name, arguments, services_over(vendor))

    assert not result.ok
    assert result.content.startswith(f"error: invalid arguments for {name}: {field}:")
    assert vendor.reads == []


# --- Each tool reads exactly as_of and returns the records --------------------------------

PASS_THROUGH = [
    (
        "get_company_news",
        {"symbol": "aaa", "days": 3, "limit": 5},
        {"window": timedelta(days=3), "symbol": "AAA", "topic": None, "limit": 5},
    ),
    (
        "get_global_news",
        {},
        {"window": timedelta(days=7), "symbol": None, "topic": None, "limit": 20},
    ),
    (
        "get_topic_news",
        {"topic": "Geopolitics", "days": 2},
        {"window": timedelta(days=2), "symbol": None, "topic": "geopolitics", "limit": 20},
    ),
    (
        "get_social_posts",
        {"symbol": "AAA", "days": 3},
        {"symbol": "AAA", "window": timedelta(days=3), "limit": 50},
    ),
    ("get_fundamentals", {"symbol": "AAA"}, {"symbol": "AAA"}),
    (
        "get_balance_sheet",
        {"symbol": "AAA", "periods": 2},
        {"symbol": "AAA", "kind": StatementKind.BALANCE, "periods": 2},
    ),
    (
        "get_cash_flow",
        {"symbol": "AAA"},
        {"symbol": "AAA", "kind": StatementKind.CASH_FLOW, "periods": 4},
    ),
    (
        "get_income_statement",
        {"symbol": "AAA", "periods": 3},
        {"symbol": "AAA", "kind": StatementKind.INCOME, "periods": 3},
    ),
    (
        "get_insider_transactions",
        {"symbol": "AAA", "days": 30},
        {"symbol": "AAA", "window": timedelta(days=30)},
    ),
    ("get_sector_performance", {}, {}),
    (
        "get_industry_top_companies",
        {"sector": "Energy", "limit": 3},
        {"sector": Sector.ENERGY, "limit": 3},
    ),
    ("get_market_movers", {"limit": 5}, {"limit": 5}),
    ("get_indices", {}, {}),
    (
        "get_macro_series",
        {"series": "fedfunds", "lookback": 12},
        {"series": "FEDFUNDS", "lookback": 12},
    ),
]


@pytest.mark.parametrize(
    ("name", "arguments", "read"), PASS_THROUGH, ids=[t[0] for t in PASS_THROUGH]
)
def test_data_tool_reads_as_of_and_returns_the_records(
    name: str, arguments: dict[str, Any], read: dict[str, Any]
) -> None:
    vendor = FakeVendor(
        trades={"AAA": [_trade("AAA", "buy", 500, 3), _trade("AAA", "sell", 90, 9)]}
    )

    result = call_tool(name, arguments, services_over(vendor))

    answer = answer_of(result)
    ((_, asked, returned),) = vendor.reads
    assert asked == {"as_of": AS_OF, **read}
    assert answer["data"] == to_jsonable_python(returned)
    assert answer["as_of"] == AS_OF.isoformat()
    assert answer["vendor"] == result.vendor == "fake"
    assert answer["simulated"] is False


def test_get_ohlcv_returns_the_latest_bars_as_rows() -> None:
    bars = _walk("AAA", 100)
    vendor = FakeVendor(bars={"AAA": bars})

    answer = answer_of(
        call_tool("get_ohlcv", {"symbol": "AAA", "lookback": 30}, services_over(vendor))
    )

    ((_, asked, _),) = vendor.reads
    assert asked == {"symbol": "AAA", "timeframe": Timeframe.D1, "as_of": AS_OF, "lookback": 30}
    data = answer["data"]
    assert data["columns"] == ["time", "open", "high", "low", "close", "volume"]
    assert data["bars"] == len(data["rows"]) == 30
    assert data["rows"][-1] == [
        bars[-1].time.isoformat().replace("+00:00", "Z"),
        bars[-1].open,
        bars[-1].high,
        bars[-1].low,
        bars[-1].close,
        bars[-1].volume,
    ]


# --- Against the simulated market ------------------------------------------------------


def test_tools_read_the_sim_market_and_say_it_is_simulated() -> None:
    sim = pytest.importorskip("shared.data.sim")
    if not hasattr(sim, "SimVendor"):
        pytest.skip("the sim vendor is not written yet")
    vendor = sim.SimVendor(seed=7)
    as_of = datetime(2012, 6, 1, 21, 0, tzinfo=UTC)
    symbol = next(item.symbol for item in vendor.universe(as_of) if item.asset_type == "equity")
    services = ToolServices(router=DataRouter({"sim": vendor}, {k: ("sim",) for k in DataKind}))

    answers = {
        name: call_tool(name, arguments, services, context={"as_of": as_of.isoformat()})
        for name, arguments in [
            ("get_ohlcv", {"symbol": symbol, "lookback": 20}),
            ("get_fundamentals", {"symbol": symbol}),
            ("get_sector_performance", {}),
            ("screen_unusual_volume", {"min_relative_volume": 1.0, "limit": 3}),
        ]
    }

    for name, result in answers.items():
        answer = answer_of(result)
        assert result.vendor == answer["vendor"] == "sim", name
        assert answer["simulated"] is True and "SIMULATED" in answer["note"], name
    rows = json.loads(answers["get_ohlcv"].content)["data"]["rows"]
    assert len(rows) == 20
    assert datetime.fromisoformat(rows[-1][0]) < as_of
    assert len(json.loads(answers["screen_unusual_volume"].content)["data"]["rows"]) == 3
