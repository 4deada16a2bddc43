"""The simulated market and the real data under it: determinism, as-of reads, consistency."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import TypeVar

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.data.contracts import (
    INDEX_SYMBOLS,
    LINE_ITEMS,
    SECTOR_ETFS,
    TBILL_ETF,
    DataKind,
    DataVendor,
    Sector,
    StatementKind,
)
from shared.data.real import INDEX_FILES, load_core_cpi, load_index, load_tbill_rate
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.data.sim.world import DEFAULT_END, DEFAULT_START, world
from shared.errors import InvalidInput, NoData, NotConfigured
from shared.market.bars import Bar, Timeframe, bars_to_frame, validate_bars
from shared.market.sources import DATASETS

T = TypeVar("T")
SIM = SimVendor()
FIRST = datetime.combine(DEFAULT_START, datetime.min.time(), UTC)
LAST = datetime.combine(DEFAULT_END, datetime.max.time(), UTC)
COMPANIES = [item.symbol for item in SIM.universe(LAST) if item.asset_type == "equity"]
ALL_BARS = 5000  # more than the world's sessions: "the whole history"
MACRO = ("FEDFUNDS", "CPI", "UNRATE", "DGS10")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def maybe(read: Callable[[], T]) -> T | None:
    """The read's answer, or None when the sim says it has no data (an allowed answer)."""
    try:
        return read()
    except NoData:
        return None


def history(symbol: str, as_of: datetime = LAST, lookback: int = ALL_BARS) -> pd.DataFrame:
    return bars_to_frame(SIM.ohlcv(symbol, Timeframe.D1, as_of, lookback))


def change(closes: pd.Series | np.ndarray, sessions: int) -> float | None:
    values = np.asarray(closes)
    return None if len(values) <= sessions else float(values[-1] / values[-1 - sessions] - 1)


as_ofs = st.datetimes(
    min_value=FIRST.replace(tzinfo=None),
    max_value=LAST.replace(tzinfo=None),
    timezones=st.just(UTC),
)
companies = st.sampled_from(COMPANIES)


# --- the real data ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("symbol", "rows", "first", "last"),
    [
        ("^GSPC", 5031, date(1999, 1, 4), date(2018, 12, 31)),
        ("^IXIC", 5031, date(1999, 1, 4), date(2018, 12, 31)),
        ("^VIX", 1259, date(2014, 1, 3), date(2019, 1, 3)),
    ],
)
def test_real_indices_load_as_validated_utc_daily_bars(
    symbol: str, rows: int, first: date, last: date
) -> None:
    frame = load_index(symbol)

    validate_bars(frame)
    assert list(frame.columns) == ["open", "high", "low", "close", "volume"]
    assert str(frame.index.tz) == "UTC"
    assert (len(frame), frame.index[0].date(), frame.index[-1].date()) == (rows, first, last)
    assert (frame.index == frame.index.normalize()).all()


def test_real_vix_has_closes_only_and_no_volume() -> None:
    vix = load_index("^VIX")

    assert (vix[["open", "high", "low"]].to_numpy() == vix[["close"]].to_numpy()).all()
    assert (vix["volume"] == 0).all()


def test_real_loaders_hand_out_copies_of_their_cache() -> None:
    spx, cpi = load_index("^GSPC"), load_core_cpi()
    spx["close"] *= 0
    cpi[:] = 0

    assert load_index("^GSPC")["close"].min() > 600
    assert load_core_cpi().min() > 20


def test_real_monthly_series_are_labelled_by_month_start() -> None:
    cpi, bill = load_core_cpi(), load_tbill_rate()

    assert (cpi.index.day == 1).all() and (bill.index.day == 1).all()
    assert cpi.index[-1] == bill.index[-1] == pd.Timestamp("2018-11-01", tz="UTC")
    assert cpi["2018-11-01"] == pytest.approx(259.481)


def test_real_loader_lists_its_indices_for_an_unknown_one() -> None:
    with pytest.raises(InvalidInput, match=r"\^GSPC, \^IXIC, \^VIX"):
        load_index("^DJI")
    assert set(INDEX_FILES) == {"^GSPC", "^IXIC", "^VIX"}


# --- the universe ----------------------------------------------------------------------


def test_universe_is_fictional_companies_in_every_sector_plus_etfs_and_indices() -> None:
    listings = SIM.universe(utc(2012, 6, 1))
    symbols = [item.symbol for item in listings]
    equities = [item for item in listings if item.asset_type == "equity"]

    assert len(symbols) == len(set(symbols))
    assert 60 <= len(equities) <= 100
    assert {item.sector for item in equities} == set(Sector)
    assert all(item.industry and len(item.symbol) == 4 for item in equities)
    reserved = {*SECTOR_ETFS.values(), TBILL_ETF, *INDEX_SYMBOLS, *DATASETS}
    assert not reserved & {item.symbol for item in equities}
    assert reserved - set(DATASETS) <= set(symbols)
    assert all(item.simulated for item in equities)


# --- determinism -----------------------------------------------------------------------

_SHORT = {"start": date(2016, 1, 4), "end": date(2016, 12, 30)}


def digest(vendor: SimVendor) -> str:
    """A hash of a spread of reads: equal worlds give equal digests."""
    at = utc(2016, 11, 15, 22)
    reads = [
        vendor.ohlcv("QBTX", Timeframe.D1, at, 100),
        vendor.ohlcv("XLE", Timeframe.W1, at, 10),
        vendor.news(at, timedelta(days=60), limit=50),
        vendor.social("FRTB", at, timedelta(days=10)),
        [vendor.fundamentals("MDLQ", at)],
        vendor.statements("MDLQ", StatementKind.BALANCE, at),
        maybe(lambda: vendor.insider("QBTX", at, timedelta(days=365))) or [],
        vendor.sectors(at),
        [vendor.movers(at)],
        vendor.indices(at),
        [vendor.macro(series, at) for series in MACRO],
    ]
    dumped = [[record.model_dump(mode="json") for record in read] for read in reads]
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()


def test_the_same_seed_gives_the_same_world() -> None:
    first = digest(SimVendor(7, **_SHORT))
    world.cache_clear()

    assert digest(SimVendor(7, **_SHORT)) == first


def test_different_seeds_give_different_worlds() -> None:
    assert digest(SimVendor(7, **_SHORT)) != digest(SimVendor(8, **_SHORT))


# --- as of -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(as_of=as_ofs, symbol=companies)
def test_no_read_returns_anything_dated_after_as_of(as_of: datetime, symbol: str) -> None:
    window = timedelta(days=30)
    for timeframe in (Timeframe.D1, Timeframe.W1, Timeframe.MO1):
        for bar in maybe(lambda t=timeframe: SIM.ohlcv(symbol, t, as_of, 30)) or []:
            assert bar.time <= as_of
    for news in (
        maybe(lambda: SIM.news(as_of, window, limit=200)),
        maybe(lambda: SIM.news(as_of, window, symbol=symbol)),
        maybe(lambda: SIM.news(as_of, window, topic="macro")),
    ):
        assert all(as_of - window < item.published_at <= as_of for item in news or [])
    posts = maybe(lambda: SIM.social(symbol, as_of, timedelta(days=3))) or []
    assert all(as_of - timedelta(days=3) < post.posted_at <= as_of for post in posts)
    for kind in StatementKind:
        for item in SIM.statements(symbol, kind, as_of, periods=8):
            assert item.reported_at <= as_of
            assert item.period_end < item.reported_at.date()
    trades = maybe(lambda: SIM.insider(symbol, as_of, timedelta(days=365))) or []
    assert all(
        trade.filed_at <= as_of and trade.traded_on < trade.filed_at.date() for trade in trades
    )
    for series in MACRO:
        macro = maybe(lambda s=series: SIM.macro(s, as_of, lookback=36))
        assert macro is not None or series == "DGS10"  # daily, so none on the first morning
        assert all(point.released_at <= as_of for point in (macro.points if macro else []))


@settings(max_examples=25, deadline=None)
@given(as_of=as_ofs, symbol=companies)
def test_fundamentals_use_statements_reported_by_as_of_and_the_last_close(
    as_of: datetime, symbol: str
) -> None:
    facts = SIM.fundamentals(symbol, as_of)
    income = SIM.statements(symbol, StatementKind.INCOME, as_of, periods=4)
    balance = SIM.statements(symbol, StatementKind.BALANCE, as_of, periods=1)[0]
    price = SIM.ohlcv(symbol, Timeframe.D1, as_of, 1)[-1].close

    assert facts.latest_period == income[0].fiscal_period == balance.fiscal_period
    assert facts.price == pytest.approx(price)
    assert facts.market_cap == pytest.approx(price * balance.items["shares_outstanding"])
    eps = sum(item.items["eps_diluted"] for item in income)
    assert facts.eps_ttm == pytest.approx(eps)
    assert facts.pe_ratio == (pytest.approx(price / eps) if eps > 0 else None)
    equity = balance.items["total_equity"]
    assert facts.price_to_book == pytest.approx(facts.market_cap / equity)
    assert facts.debt_to_equity == pytest.approx(balance.items["total_debt"] / equity)


@settings(max_examples=25, deadline=None)
@given(as_of=as_ofs)
def test_sector_and_index_figures_come_from_bars_up_to_as_of(as_of: datetime) -> None:
    for sector in SIM.sectors(as_of):
        bars = history(sector.etf, as_of, 400)
        last_year = bars["close"][bars.index.year < bars.index[-1].year]
        assert sector.return_1d == pytest.approx(change(bars["close"], 1))
        assert sector.return_5d == pytest.approx(change(bars["close"], 5))
        assert sector.return_21d == pytest.approx(change(bars["close"], 21))
        expected_ytd = bars["close"].iloc[-1] / last_year.iloc[-1] - 1 if len(last_year) else None
        assert sector.return_ytd == pytest.approx(expected_ytd)
    for index in SIM.indices(as_of):
        bars = history(index.symbol, as_of, 22)
        assert index.level == pytest.approx(bars["close"].iloc[-1])
        one = change(bars["close"], 1)
        assert index.change_1d_pct == (None if one is None else pytest.approx(one * 100))


@settings(max_examples=15, deadline=None)
@given(as_of=as_ofs)
def test_movers_come_from_the_last_session_up_to_as_of(as_of: datetime) -> None:
    movers = maybe(lambda: SIM.movers(as_of, limit=5))
    if movers is None:
        assert len(history("QBTX", as_of, 2)) < 2
        return
    frames = {symbol: history(symbol, as_of, 21) for symbol in COMPANIES}
    moves = {s: change(f["close"], 1) * 100 for s, f in frames.items()}  # type: ignore[operator]
    volume = {s: f["volume"].iloc[-1] for s, f in frames.items()}
    by_move = sorted(moves, key=moves.__getitem__)

    # Ties keep universe order on both sides, as the vendor's stable sort does.
    by_gain = sorted(moves, key=lambda s: -moves[s])
    assert [m.symbol for m in movers.gainers] == [s for s in by_gain if moves[s] > 0][:5]
    assert [m.symbol for m in movers.losers] == [s for s in by_move if moves[s] < 0][:5]
    assert [m.symbol for m in movers.most_active] == sorted(volume, key=lambda s: -volume[s])[:5]
    for mover in movers.gainers + movers.losers + movers.most_active:
        frame = frames[mover.symbol]
        assert mover.change_pct == pytest.approx(moves[mover.symbol])
        expected = frame["volume"].iloc[-1] / frame["volume"].iloc[:-1].mean()
        assert mover.relative_volume == (pytest.approx(expected) if len(frame) == 21 else None)


@settings(max_examples=15, deadline=None)
@given(as_of=as_ofs, sector=st.sampled_from(list(Sector)))
def test_industry_ranks_a_sectors_companies_by_market_cap_up_to_as_of(
    as_of: datetime, sector: Sector
) -> None:
    ranked = SIM.industry(sector, as_of, limit=20)

    assert {c.sector for c in ranked} == {sector}
    caps = [c.market_cap or 0 for c in ranked]
    assert caps == sorted(caps, reverse=True)
    for company in ranked:
        bars = history(company.symbol, as_of, 22)
        shares = SIM.statements(company.symbol, StatementKind.BALANCE, as_of, 1)[0]
        assert company.return_21d == pytest.approx(change(bars["close"], 21))
        assert company.market_cap == pytest.approx(
            bars["close"].iloc[-1] * shares.items["shares_outstanding"]
        )


def test_a_statement_becomes_visible_exactly_when_reported() -> None:
    newest = SIM.statements("LMNW", StatementKind.INCOME, utc(2014, 6, 1), periods=1)[0]
    just_before = newest.reported_at - timedelta(seconds=1)

    before = SIM.statements("LMNW", StatementKind.INCOME, just_before, periods=1)[0]
    assert before.fiscal_period != newest.fiscal_period
    at = SIM.statements("LMNW", StatementKind.INCOME, newest.reported_at, periods=1)[0]
    assert at == newest


# --- consistency -----------------------------------------------------------------------


def test_bars_are_valid_for_every_symbol_and_timeframe() -> None:
    for item in SIM.universe(LAST):
        for timeframe in (Timeframe.D1, Timeframe.W1, Timeframe.MO1):
            bars = SIM.ohlcv(item.symbol, timeframe, LAST, ALL_BARS)
            validate_bars(bars, field=f"{item.symbol} {timeframe}")
    assert len(SIM.ohlcv("QBTX", Timeframe.D1, LAST, ALL_BARS)) == len(
        load_index("^GSPC")[str(DEFAULT_START.year) :]
    )


def test_balance_sheets_add_up_and_cash_flows_reconcile() -> None:
    for symbol in COMPANIES:
        balances = SIM.statements(symbol, StatementKind.BALANCE, LAST, periods=100)
        flows = SIM.statements(symbol, StatementKind.CASH_FLOW, LAST, periods=100)
        for sheet in balances:
            items = sheet.items
            assert items["total_assets"] == items["total_liabilities"] + items["total_equity"]
            assert 0 < items["cash"] < items["total_assets"]
            assert 0 < items["total_debt"] <= items["total_liabilities"]
        for flow in flows:
            items = flow.items
            assert (
                items["free_cash_flow"]
                == items["operating_cash_flow"] + items["investing_cash_flow"]
            )
        # Oldest first: each quarter's cash change is its three flows (the first has no prior).
        sheets, flows = balances[::-1], flows[::-1]
        for before, after, flow in zip(sheets, sheets[1:], flows[1:], strict=False):
            moved = sum(
                flow.items[k]
                for k in ("operating_cash_flow", "investing_cash_flow", "financing_cash_flow")
            )
            assert after.items["cash"] - before.items["cash"] == moved


def test_statements_are_consecutive_quarters_reported_after_they_end() -> None:
    for kind in StatementKind:
        assert set(LINE_ITEMS[kind]) <= set(SIM.statements("QBTX", kind, LAST, 1)[0].items)
    for symbol in COMPANIES:
        income = SIM.statements(symbol, StatementKind.INCOME, LAST, periods=100)[::-1]
        ends = [item.period_end for item in income]
        assert ends == [d.date() for d in pd.date_range(ends[0], ends[-1], freq="QE")]
        assert all(item.reported_at.date() > item.period_end for item in income)
        assert all(a.reported_at < b.reported_at for a, b in zip(income, income[1:], strict=False))
        for item in income:
            assert (
                item.items["revenue"] > item.items["gross_profit"] >= item.items["operating_income"]
            )


def test_earnings_news_precedes_the_reaction_and_the_gap_follows_the_surprise() -> None:
    agree = total = 0
    for symbol in COMPANIES:
        bars = history(symbol)
        news = SIM.news(LAST, timedelta(days=4000), symbol=symbol, topic="earnings", limit=1000)
        published = {item.published_at for item in news}
        for report in SIM.statements(symbol, StatementKind.INCOME, LAST, periods=100):
            after = bars.index.searchsorted(report.reported_at, side="right")
            if report.reported_at < FIRST or after >= len(bars):
                continue
            assert report.reported_at in published  # the headline comes with the report...
            assert bars.index[after] > report.reported_at  # ...before the session it moves
            eps, estimate = report.items["eps_diluted"], report.items["eps_estimate"]
            surprise = (eps - estimate) / max(abs(estimate), 0.05)
            if abs(surprise) > 0.1:
                gap = bars["open"].iloc[after] / bars["close"].iloc[after - 1] - 1
                agree += np.sign(gap) == np.sign(surprise)
                total += 1
    assert total > 100 and agree / total > 0.85


def test_company_and_energy_shocks_break_before_the_gap_they_cause() -> None:
    agree = total = 0
    # Shocks read above 0.5 in sentiment; routine headlines never do.
    for symbol, topic in [*((s, "company") for s in COMPANIES), ("XLE", "energy")]:
        bars = history(symbol)
        news = SIM.news(LAST, timedelta(days=4000), symbol=symbol, topic=topic, limit=10_000)
        for item in news:
            if abs(item.sentiment or 0) <= 0.5:
                continue
            after = bars.index.searchsorted(item.published_at, side="right")
            gap = bars["open"].iloc[after] / bars["close"].iloc[after - 1] - 1
            # It broke after the close of the session before the move, so before the gap.
            assert item.published_at.date() == bars.index[after - 1].date()
            assert item.published_at.hour >= 21
            agree += np.sign(gap) == np.sign(item.sentiment)
            total += 1
    assert total > 2000 and agree / total > 0.9


def test_sector_etfs_move_as_the_cap_weighted_average_of_their_stocks() -> None:
    listings = SIM.universe(LAST)
    for sector, etf in SECTOR_ETFS.items():
        members = [item.symbol for item in listings if item.sector is sector]
        closes = pd.DataFrame({s: history(s)["close"] for s in members})
        shares = pd.Series(
            {
                s: SIM.statements(s, StatementKind.BALANCE, LAST, 1)[0].items["shares_outstanding"]
                for s in members
            }
        )
        caps = closes.shift(1) * shares
        expected = (caps * closes.pct_change()).sum(axis=1) / caps.sum(axis=1)
        etf_close = history(etf)["close"]
        actual = etf_close.pct_change()
        # Equal up to the ETF's own rounding to cents, at most a cent on the two closes.
        slack = 0.0101 / etf_close.shift(1)
        assert ((actual - expected).abs() <= slack).iloc[1:].all()


def test_the_market_follows_the_real_sp500() -> None:
    real = load_index("^GSPC")[str(DEFAULT_START) : str(DEFAULT_END)]
    spx = history("^GSPC")
    pd.testing.assert_frame_equal(spx, real, check_index_type=False, check_freq=False)
    market = np.log(spx["close"]).diff().iloc[1:]
    stocks = pd.DataFrame({s: np.log(history(s)["close"]).diff() for s in COMPANIES}).iloc[1:]

    assert np.corrcoef(stocks.mean(axis=1), market)[0, 1] > 0.8
    assert np.median([np.corrcoef(stocks[s], market)[0, 1] for s in COMPANIES]) > 0.4
    for index in ("^DJI", "^RUT", "^IXIC"):
        assert np.corrcoef(np.log(history(index)["close"]).diff().iloc[1:], market)[0, 1] > 0.8


def test_vix_is_real_where_vendored_and_modelled_before() -> None:
    vix = history("^VIX")["close"]
    real = load_index("^VIX")["close"]
    shared = vix.index.intersection(real.index)

    assert shared[0] == pd.Timestamp("2014-01-03", tz="UTC")
    np.testing.assert_array_equal(vix[shared], real[shared])
    modelled = vix[vix.index < shared[0]]
    assert modelled.min() >= 9 and modelled["2009-01":"2009-03"].mean() > modelled["2013"].mean()
    flags = {
        d: {i.symbol: i.simulated for i in SIM.indices(d)}
        for d in (utc(2012, 5, 1), utc(2016, 5, 2))
    }
    assert flags[utc(2012, 5, 1)]["^VIX"] and not flags[utc(2016, 5, 2)]["^VIX"]
    assert not flags[utc(2012, 5, 1)]["^GSPC"] and flags[utc(2016, 5, 2)]["^DJI"]


def test_the_tbill_etf_accrues_a_small_yield_and_never_falls() -> None:
    closes = history(TBILL_ETF)["close"]
    daily = closes.pct_change().iloc[1:]

    assert (daily >= 0).all() and daily.max() < 0.0002
    assert closes.iloc[-1] / closes.iloc[0] - 1 < 0.06  # ten years of near-zero rates


def test_insiders_buy_in_clusters_before_big_beats() -> None:
    clustered = beats = 0
    for symbol in COMPANIES:
        trades = maybe(lambda s=symbol: SIM.insider(s, LAST, timedelta(days=4000))) or []
        buys = [t for t in trades if t.side == "buy"]
        for report in SIM.statements(symbol, StatementKind.INCOME, LAST, periods=100):
            eps, estimate = report.items["eps_diluted"], report.items["eps_estimate"]
            if report.reported_at < FIRST + timedelta(days=60) or eps < estimate * 1.2:
                continue
            window = [
                b
                for b in buys
                if timedelta(0) < report.reported_at.date() - b.traded_on < timedelta(days=35)
            ]
            beats += 1
            clustered += len({b.insider for b in window}) >= 2
    assert beats > 20 and clustered / beats > 0.5


def test_social_mood_follows_the_opening_gap() -> None:
    moods, gaps = [], []
    for symbol in COMPANIES[:20]:
        bars = history(symbol)
        gap = bars["open"] / bars["close"].shift(1) - 1
        for post in SIM.social(symbol, utc(2013, 12, 31), timedelta(days=365), limit=100_000):
            session = post.posted_at.replace(hour=0, minute=0, second=0)
            if session in gap.index and not np.isnan(gap[session]):
                moods.append(post.sentiment)
                gaps.append(gap[session])
                assert post.posted_at.hour >= 13  # after the open it reacts to

    assert len(moods) > 1000 and np.corrcoef(moods, gaps)[0, 1] > 0.2


def test_macro_points_are_released_after_what_they_measure() -> None:
    for series in MACRO:
        points = SIM.macro(series, LAST, lookback=100_000).points
        daily = series == "DGS10"
        assert all(
            (p.released_at.date() >= p.observed) if daily else (p.released_at.date() > p.observed)
            for p in points
        )
    cpi = SIM.macro("cpi", LAST, lookback=12)
    real = load_core_cpi()
    assert not cpi.simulated
    assert [p.value for p in cpi.points] == pytest.approx(real.iloc[-12:].tolist())


def test_every_record_is_marked_simulated_unless_its_values_are_real() -> None:
    at = utc(2015, 7, 1)
    records = [
        *SIM.news(at, timedelta(days=10), limit=100),
        *SIM.social("QBTX", at, timedelta(days=10)),
        SIM.fundamentals("QBTX", at),
        *SIM.statements("QBTX", StatementKind.CASH_FLOW, at),
        *SIM.insider("QBTX", at, timedelta(days=400)),
        *SIM.sectors(at),
        *SIM.industry(Sector.ENERGY, at),
        SIM.movers(at),
        *SIM.macro("UNRATE", at).points,
    ]
    assert all(record.simulated for record in records)
    real = {i.symbol for i in SIM.indices(at) if not i.simulated}
    assert real == {"^GSPC", "^IXIC", "^VIX"}


# --- errors ----------------------------------------------------------------------------


def test_an_unknown_symbol_is_no_data_pointing_at_the_universe() -> None:
    for read in (
        lambda: SIM.ohlcv("AAPL", Timeframe.D1, utc(2015, 1, 5), 10),
        lambda: SIM.fundamentals("GOOG", utc(2015, 1, 5)),
        lambda: SIM.news(utc(2015, 1, 5), timedelta(days=1), symbol="MSFT"),
    ):
        with pytest.raises(NoData, match="fictional.*universe"):
            read()


@pytest.mark.parametrize("as_of", [utc(2008, 12, 31, 23), utc(2019, 2, 1), utc(2024, 1, 2)])
def test_an_as_of_outside_the_world_is_no_data_naming_it(as_of: datetime) -> None:
    for read in (
        lambda: SIM.ohlcv("QBTX", Timeframe.D1, as_of, 5),
        lambda: SIM.news(as_of, timedelta(days=30)),
        lambda: SIM.sectors(as_of),
        lambda: SIM.universe(as_of),
        lambda: SIM.macro("CPI", as_of),
    ):
        with pytest.raises(NoData, match=as_of.isoformat().replace("+", r"\+")):
            read()


def test_a_naive_as_of_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="timezone"):
        SIM.sectors(datetime(2015, 1, 5))


def test_intraday_bars_are_not_configured() -> None:
    with pytest.raises(NotConfigured, match="daily"):
        SIM.ohlcv("QBTX", Timeframe.H1, utc(2015, 1, 5), 10)


def test_company_reads_of_an_etf_or_index_are_no_data() -> None:
    with pytest.raises(NoData, match="not a company"):
        SIM.fundamentals("XLK", utc(2015, 1, 5))
    with pytest.raises(NoData, match="not a company"):
        SIM.statements("^GSPC", StatementKind.INCOME, utc(2015, 1, 5))


def test_an_empty_window_is_no_data() -> None:
    with pytest.raises(NoData, match="news"):
        SIM.news(utc(2015, 1, 4, 2), timedelta(seconds=1))


@pytest.mark.parametrize(
    ("read", "field"),
    [
        (lambda: SIM.news(utc(2015, 1, 5), timedelta(days=1), topic="sports"), "topic"),
        (lambda: SIM.macro("GDP", utc(2015, 1, 5)), "series"),
        (lambda: SIM.industry("Crypto", utc(2015, 1, 5)), "sector"),  # type: ignore[arg-type]
        (lambda: SIM.statements("QBTX", "ratios", utc(2015, 1, 5)), "kind"),  # type: ignore[arg-type]
        (lambda: SIM.news(utc(2015, 1, 5), timedelta(0)), "window"),
        (lambda: SIM.movers(utc(2015, 1, 5), limit=0), "limit"),
        (lambda: SimVendor(seed=-1), "seed"),
        (lambda: SimVendor(start=date(1998, 1, 1)).world, "start/end"),
    ],
)
def test_impossible_requests_are_invalid_input(read: Callable[[], object], field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        read()
    assert raised.value.field == field


# --- the vendor in the data layer ------------------------------------------------------


def test_the_sim_vendor_serves_every_kind_through_the_router() -> None:
    assert isinstance(SIM, DataVendor)
    assert SIM.kinds == frozenset(DataKind)
    router = DataRouter({"sim": SIM}, routes={kind: ("sim",) for kind in DataKind})

    day = utc(2015, 1, 5)
    routed = router.call(DataKind.OHLCV, lambda v: v.ohlcv("XLK", Timeframe.D1, day, 3), as_of=day)
    assert routed.vendor == "sim" and all(isinstance(bar, Bar) for bar in routed.value)
    with pytest.raises(NoData, match="sim"):
        router.call(DataKind.SECTORS, lambda v: v.sectors(utc(2030, 1, 1)), as_of=utc(2030, 1, 1))
