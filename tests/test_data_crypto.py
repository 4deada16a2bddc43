"""ccxt's real Binance client against the strict Binance stand-in over HTTP: only complete
candles up to ``as_of`` (the one forming then is on the wire, never in the answer), our
symbols mapped to the exchange's pairs, every request through the desk's gate, and every
fault as the router's kind naming the exchange."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from shared.config import CcxtSettings, VendorQuota, load_settings
from shared.data.contracts import DataKind
from shared.data.crypto import CcxtVendor, pair_of, quota_of
from shared.data.factory import build_router
from shared.errors import NoData, NotConfigured, NotCovered, RateLimited, VendorFailure
from shared.market.bars import Timeframe
from tests.fakes.exchange import EXCHANGE_INFO, KLINES, FakeBinance, Fault, Pair

BTC = Pair("BTCUSDT", "BTC", "USDT", datetime(2017, 8, 17, 4, tzinfo=UTC), 40_000.0)
ETH_BTC = Pair("ETHBTC", "ETH", "BTC", datetime(2017, 7, 14, 4, tzinfo=UTC), 0.05)
MID_DAY = datetime(2024, 3, 28, 14, 30, tzinfo=UTC)


def utc(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


class CountingGate:
    """The desk's gate as a test sees it: the quota it was built for, and each pass."""

    def __init__(self) -> None:
        self.quotas: list[VendorQuota] = []
        self.passes = 0

    def __call__(self, quota: VendorQuota) -> CountingGate:
        self.quotas.append(quota)
        return self

    def pass_one(self) -> None:
        self.passes += 1


@pytest.fixture
def binance() -> Iterator[FakeBinance]:
    with FakeBinance([BTC, ETH_BTC], now=MID_DAY) as fake:
        yield fake


@pytest.fixture
def gate() -> CountingGate:
    return CountingGate()


def _vendor(
    fake: FakeBinance, gate: CountingGate | None = None, *, timeout: float = 2.0
) -> CcxtVendor:
    settings = CcxtSettings(exchange="binance", base_url=fake.base_url, timeout_seconds=timeout)
    counted = (lambda quota: gate(quota).pass_one) if gate else None
    return CcxtVendor(settings, gate_of=counted, clock=lambda: fake.now)


@pytest.fixture
def vendor(binance: FakeBinance, gate: CountingGate) -> CcxtVendor:
    return _vendor(binance, gate)


def test_the_daily_candle_forming_at_as_of_is_on_the_wire_but_never_returned(
    vendor: CcxtVendor, binance: FakeBinance
) -> None:
    bars = vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=5)

    assert ("BTCUSDT", "1d", utc(2024, 3, 28)) in binance.forming_served
    assert [bar.time for bar in bars] == [utc(2024, 3, day) for day in range(23, 28)]
    # The last bar is the whole of 27 March: it closes at the price of midnight.
    assert bars[-1].close == pytest.approx(BTC.price_at(utc(2024, 3, 28)))
    assert bars[-1].open == pytest.approx(BTC.price_at(utc(2024, 3, 27)))


def test_the_hourly_candle_forming_at_as_of_is_never_returned(
    vendor: CcxtVendor, binance: FakeBinance
) -> None:
    bars = vendor.ohlcv("BTC-USD", Timeframe.H1, MID_DAY, lookback=3)

    assert ("BTCUSDT", "1h", utc(2024, 3, 28, 14)) in binance.forming_served
    assert [bar.time for bar in bars] == [utc(2024, 3, 28, hour) for hour in (11, 12, 13)]


def test_nothing_after_as_of_even_when_the_exchange_has_it(
    vendor: CcxtVendor, binance: FakeBinance
) -> None:
    binance.now = MID_DAY + timedelta(days=3)

    daily = vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=3)
    hourly = vendor.ohlcv("BTC-USD", Timeframe.H1, MID_DAY, lookback=3)

    assert daily[-1].time == utc(2024, 3, 27) and hourly[-1].time == utc(2024, 3, 28, 13)
    # A candle ending exactly at as_of is complete.
    at_midnight = vendor.ohlcv("BTC-USD", Timeframe.D1, utc(2024, 3, 28), lookback=1)
    assert [bar.time for bar in at_midnight] == [utc(2024, 3, 27)]


def test_an_as_of_past_now_still_gets_no_candle_forming_now(
    vendor: CcxtVendor, binance: FakeBinance
) -> None:
    bars = vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY + timedelta(days=2), lookback=2)

    assert [bar.time for bar in bars] == [utc(2024, 3, 26), utc(2024, 3, 27)]


def test_weeks_open_on_monday_and_months_on_the_first(vendor: CcxtVendor) -> None:
    weeks = vendor.ohlcv("BTC-USD", Timeframe.W1, MID_DAY, lookback=2)
    months = vendor.ohlcv("BTC-USD", Timeframe.MO1, MID_DAY, lookback=2)

    assert [bar.time for bar in weeks] == [utc(2024, 3, 11), utc(2024, 3, 18)]
    assert [bar.time for bar in months] == [utc(2024, 1, 1), utc(2024, 2, 1)]


def test_btc_usd_reads_btc_usdt_on_binance(vendor: CcxtVendor, binance: FakeBinance) -> None:
    vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)
    vendor.ohlcv("eth/btc", Timeframe.D1, MID_DAY, lookback=1)

    asked = [r.params["symbol"] for r in binance.requests if r.path == KLINES]
    assert asked == ["BTCUSDT", "ETHBTC"]


def test_our_symbols_name_each_exchanges_pair() -> None:
    assert pair_of("BTC-USD", "binance") == "BTC/USDT"
    assert pair_of("btc-usd", "kraken") == "BTC/USD"
    assert pair_of("ETH/USDC", "coinbase") == "ETH/USDC"


@pytest.mark.parametrize("symbol", ["AAPL", "QBTX", "BRK-B", "^GSPC", "EURUSD=X"])
def test_a_symbol_that_is_not_a_crypto_pair_is_not_configured_without_a_request(
    vendor: CcxtVendor, binance: FakeBinance, gate: CountingGate, symbol: str
) -> None:
    with pytest.raises(NotConfigured, match="ccxt serves crypto pairs only") as refused:
        vendor.ohlcv(symbol, Timeframe.D1, MID_DAY, lookback=5)

    assert isinstance(refused.value, NotCovered)  # the router passes over it silently
    assert binance.requests == [] and gate.passes == 0


def test_a_pair_the_exchange_does_not_list_is_no_data_naming_it(vendor: CcxtVendor) -> None:
    with pytest.raises(NoData, match="binance lists no spot market DOGE/USDT"):
        vendor.ohlcv("DOGE-USD", Timeframe.D1, MID_DAY, lookback=5)


def test_a_pair_not_yet_trading_at_as_of_is_no_data(vendor: CcxtVendor) -> None:
    with pytest.raises(NoData, match="binance has no 1d candles of ETH/BTC complete by 2017-07"):
        vendor.ohlcv("ETH-BTC", Timeframe.D1, utc(2017, 7, 1), lookback=30)


def test_a_pair_the_exchange_refuses_later_is_no_data(
    vendor: CcxtVendor, binance: FakeBinance
) -> None:
    vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)  # markets loaded
    del binance.pairs["BTCUSDT"]  # delisted since: klines answers -1121

    with pytest.raises(NoData, match="binance does not know the candles of BTC/USDT"):
        vendor.ohlcv("BTC-USD", Timeframe.H1, MID_DAY, lookback=1)


def test_more_rows_than_one_call_returns_are_read_in_windows(
    vendor: CcxtVendor, binance: FakeBinance
) -> None:
    bars = vendor.ohlcv("BTC-USD", Timeframe.H1, MID_DAY, lookback=2500)

    hours = [bar.time for bar in bars]
    assert len(hours) == 2500 and hours[-1] == utc(2024, 3, 28, 13)
    assert all(b - a == timedelta(hours=1) for a, b in zip(hours, hours[1:], strict=False))
    klines = [r.params for r in binance.requests if r.path == KLINES]
    assert len(klines) == 3 and all(int(p["limit"]) <= 1000 for p in klines)
    # Each window starts just after the previous one ends.
    for before, after in zip(klines, klines[1:], strict=False):
        assert int(after["startTime"]) == int(before["endTime"]) + 1


def test_every_request_passes_the_gate_markets_included(
    vendor: CcxtVendor, binance: FakeBinance, gate: CountingGate
) -> None:
    vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=5)
    vendor.ohlcv("BTC-USD", Timeframe.H1, MID_DAY, lookback=1500)

    assert binance.requests[0].path == EXCHANGE_INFO
    assert gate.passes == len(binance.requests) == 4
    assert gate.quotas == [quota_of(50)]  # Binance's ccxt rateLimit: 50 ms a request


def test_the_quota_is_the_exchanges_own_spacing() -> None:
    assert quota_of(50) == VendorQuota(requests=20, seconds=1)  # Binance
    assert quota_of(34) == VendorQuota(requests=29, seconds=1)  # Coinbase
    assert quota_of(1000) == VendorQuota(requests=1, seconds=1)  # Kraken
    assert quota_of(3000) == VendorQuota(requests=1, seconds=3)


def test_a_gate_that_refuses_stops_the_request_before_it_is_sent(binance: FakeBinance) -> None:
    def refuse() -> None:
        raise RateLimited("ccxt: the desk's quota is taken", retry_after=timedelta(seconds=2))

    settings = CcxtSettings(base_url=binance.base_url)
    vendor = CcxtVendor(settings, gate_of=lambda quota: refuse, clock=lambda: binance.now)

    with pytest.raises(RateLimited, match="desk's quota"):
        vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=5)
    assert binance.requests == []


def test_past_its_weight_budget_binance_answers_429_and_its_wait_is_kept() -> None:
    # exchangeInfo weighs 20 and klines 2: the third read's klines is past 25.
    with FakeBinance([BTC], now=MID_DAY, weight_per_minute=25) as fake:
        vendor = _vendor(fake)
        vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)
        vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)
        with pytest.raises(RateLimited, match="binance throttled the candles of BTC/USDT") as held:
            vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)

    assert "-1003" in str(held.value) and held.value.retry_after is not None
    assert timedelta(0) < held.value.retry_after <= timedelta(seconds=60)


def test_a_429_is_rate_limited_for_the_exchanges_retry_after(
    vendor: CcxtVendor, binance: FakeBinance
) -> None:
    binance.fail_next(Fault(status=429, retry_after=7))

    with pytest.raises(RateLimited, match="binance throttled the markets") as held:
        vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)

    assert held.value.retry_after == timedelta(seconds=7)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Fault(status=503), "OperationFailed"),  # Binance's -1001 body
        (Fault(delay=2.0), "RequestTimeout"),
        (Fault(drop=True), "NetworkError"),
    ],
)
@pytest.mark.parametrize("when", ["markets", "candles"])
def test_faults_are_vendor_failures_naming_the_exchange(
    binance: FakeBinance, fault: Fault, said: str, when: str
) -> None:
    vendor = _vendor(binance, timeout=0.3)
    if when == "candles":
        vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)
    binance.fail_next(fault)

    with pytest.raises(VendorFailure, match=f"ccxt: binance failed the {when}") as failed:
        vendor.ohlcv("BTC-USD", Timeframe.D1, MID_DAY, lookback=1)

    assert said in str(failed.value)


def test_a_timeframe_the_exchange_lacks_is_not_configured_without_a_request(
    binance: FakeBinance,
) -> None:
    settings = CcxtSettings(exchange="coinbase", base_url=binance.base_url)
    vendor = CcxtVendor(settings, clock=lambda: binance.now)

    with pytest.raises(NotConfigured, match="coinbase has no 4h candles"):
        vendor.ohlcv("BTC-USD", Timeframe.H4, MID_DAY, lookback=5)
    assert binance.requests == []


def test_through_the_router_crypto_comes_from_ccxt_and_stocks_fall_through(
    binance: FakeBinance, tmp_path: Path
) -> None:
    """As a tools worker builds it: the factory's ccxt vendor behind the desk's quota and the
    disk cache, first in the bars' chain."""
    settings = load_settings(
        data_dir=tmp_path,
        ccxt={"exchange": "binance", "base_url": binance.base_url},
        data_routes={"ohlcv": ["ccxt", "sim"]},
    )
    router = build_router(settings)

    def bars(symbol: str, as_of: datetime) -> str:
        def read(vendor: object) -> object:
            return vendor.ohlcv(symbol, Timeframe.D1, as_of, 5)  # type: ignore[attr-defined]

        return router.call(DataKind.OHLCV, read, as_of=as_of).vendor

    assert bars("QBTX", utc(2018, 6, 1)) == "sim" and binance.requests == []  # a sim ticker
    assert bars("BTC-USD", MID_DAY) == "ccxt"
    assert [r.path for r in binance.requests] == [EXCHANGE_INFO, KLINES]


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"interval": "1d"}, -1102),
        ({"symbol": "BTCUSDT", "interval": "1y"}, -1120),
        ({"symbol": "NOPE", "interval": "1d"}, -1121),
        ({"symbol": "BTCUSDT", "interval": "1d", "limit": "1001"}, -1130),
        ({"symbol": "BTCUSDT", "interval": "1d", "startTime": "-5"}, -1100),
        ({"symbol": "BTCUSDT", "interval": "1d", "startTime": "9", "endTime": "3"}, -1130),
        ({"symbol": "BTCUSDT", "interval": "1d", "page": "2"}, -1104),
    ],
)
def test_the_stand_in_refuses_what_binance_refuses(
    binance: FakeBinance, query: dict[str, str], code: int
) -> None:
    answer = httpx.get(binance.base_url + KLINES, params=query)

    assert answer.status_code == 400 and answer.json()["code"] == code


NO_CRYPTO_DESK = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime

    from shared.config import load_settings
    from shared.data.contracts import DataKind
    from shared.data.factory import build_router
    from shared.market.bars import Timeframe

    as_of = datetime(2012, 6, 1, tzinfo=UTC)
    router = build_router(load_settings(data_dir=sys.argv[1]))
    read = lambda vendor: vendor.ohlcv("GOOG", Timeframe.parse("1d"), as_of, 5)
    routed = router.call(DataKind.OHLCV, read, as_of=as_of)
    print("ccxt" in router.vendors, len(routed.value), "ccxt" in sys.modules)
    """
)


def test_a_worker_that_reads_no_crypto_bars_never_imports_ccxt(tmp_path: Path) -> None:
    # The router builds every vendor of its chains; ccxt (0.4 s, 45 MB) waits for a pair.
    shown = subprocess.run(
        [sys.executable, "-c", NO_CRYPTO_DESK, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent.parent,
    ).stdout.split()

    assert shown == ["True", "5", "False"]
