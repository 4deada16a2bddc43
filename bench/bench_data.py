"""Real data through the router, against the vendors' stand-ins at their published limits.

Builds N fictional but real-shaped companies (eight quarters of facts with a restatement,
two Form 4 filings each) into the SEC stand-in and three macro series with vintages into the
FRED stand-in, routes statements, fundamentals and insider trades to ``sec`` and macro to
``fred``, and reads what a Pipeline's fundamentals analyst and the Scan's macro read, as a
tools worker does (``build_router``, the disk cache, the desk's quotas in its database):

1. one Pipeline's data reads, sequential: tool calls by vendor, the vendor's HTTP requests,
   and the time they take on the run's critical path;
2. a desk of N names, eight reads at once (a tools worker's slots): wall time against the
   bound the quotas set, and the most requests the SEC saw in any second and FRED in any
   minute, against their limits;
3. the same desk again, same dates, new processes' routers: the vendor requests it made
   (none, if the cache holds) and the cache's hit rate;
4. a market desk of N names through Massive and Finnhub at their free tiers (Massive 5
   requests a minute; Finnhub 60 a minute and 30 a second), by the default chains: what a
   Pipeline's analysts read of each name (a year of bars, a week of news, the statements,
   the fundamentals, insider trades) and the Scan's movers, eight reads at once; a read
   refused for the quota waits what the vendor says and is asked again, as Temporal retries a
   tool call. Wall time against the bound the quotas set, the most requests each vendor saw in
   its windows and its 429s; then the same desk again from the cache. ``--minute S`` plays
   the vendors' minute in S seconds, on both sides (stand-ins and quotas): the requests and
   their order are those of the real pace, and the bound scales with it.

    .venv/bin/python bench/bench_data.py [--names 100] [--quick] [--market-names 100] [--minute 60]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared.config import DEFAULT_QUOTAS, Settings, VendorQuota, load_settings  # noqa: E402
from shared.data.contracts import DataKind, StatementKind  # noqa: E402
from shared.data.factory import build_router  # noqa: E402
from shared.data.router import DataRouter  # noqa: E402
from shared.errors import NoData, RateLimited  # noqa: E402
from shared.market.bars import Timeframe  # noqa: E402
from tests.fakes.finnhub import KEY as FINNHUB_KEY  # noqa: E402
from tests.fakes.finnhub import FakeFinnhub, Story, sample_company  # noqa: E402
from tests.fakes.fred import KEY, FakeFred, FredSeries, Version  # noqa: E402
from tests.fakes.massive import KEY as MASSIVE_KEY  # noqa: E402
from tests.fakes.massive import FakeMassive, Listed, MassiveMarket, day_bars  # noqa: E402
from tests.fakes.sec import FakeSec, SecCompany  # noqa: E402

AS_OF = datetime(2023, 9, 1, 21, tzinfo=UTC)
IDENTITY = "quantdesk bench bench@example.com"
QUARTERS = [(date(2021 + q // 4, 3 * (q % 4) + 1, 1), q) for q in range(8)]
SERIES = ("CPILFESL", "UNRATE", "FEDFUNDS")


def _quarter_end(start: date) -> date:
    month = start.month + 2
    return (
        date(start.year, month + 1, 1) if month < 12 else date(start.year + 1, 1, 1)
    ) - timedelta(days=1)


def company(index: int) -> SecCompany:
    """A filer with eight quarters: revenue, income, assets, equity, shares, cash flow."""
    cik, ticker = 1_900_000 + index, f"D{index:03d}"
    facts: dict[str, list[dict[str, Any]]] = {}
    filings = []
    for start, q in QUARTERS:
        end = _quarter_end(start)
        filed = end + timedelta(days=35)
        accn = f"{cik:010d}-{filed:%y}-{q:06d}"
        filings.append(
            {"accessionNumber": accn, "filingDate": filed.isoformat(), "form": "10-Q",
             "acceptanceDateTime": f"{filed}T20:00:00.000Z", "primaryDocument": "q.htm"}
        )  # fmt: skip
        base = {
            "accn": accn,
            "form": "10-Q",
            "filed": filed.isoformat(),
            "fy": end.year,
            "fp": f"Q{q % 4 + 1}",
        }
        duration = {**base, "start": start.isoformat(), "end": end.isoformat()}
        instant = {**base, "end": end.isoformat()}
        for concept, value, shape in (
            ("Revenues", 100e6 + index * 1e6 + q * 2e6, duration),
            ("NetIncomeLoss", 10e6 + q * 1e5, duration),
            ("NetCashProvidedByUsedInOperatingActivities", 15e6 + q * 1e5, duration),
            ("Assets", 500e6 + q * 5e6, instant),
            ("StockholdersEquity", 300e6 + q * 2e6, instant),
            ("CommonStockSharesOutstanding", 10e6, instant),
        ):
            facts.setdefault(concept, []).append({**shape, "val": value})
    for n in range(2):
        accepted = AS_OF - timedelta(days=10 + 20 * n)
        filings.append(
            {"accessionNumber": f"{cik:010d}-23-9{n:05d}", "filingDate": accepted.date().isoformat(),
             "form": "4", "acceptanceDateTime": accepted.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
             "primaryDocument": f"xslF345X05/f4-{n}.xml"}
        )  # fmt: skip
    documents = {
        f"{cik:010d}239{n:05d}/f4-{n}.xml": _form4(accepted=AS_OF - timedelta(days=12 + 20 * n))
        for n in range(2)
    }
    units = {k: {"units": {"shares" if "Shares" in k else "USD": v}} for k, v in facts.items()}
    return SecCompany(cik, ticker, f"Company {index} Inc.", "3570", "Computers",
                      {"us-gaap": units}, filings, documents)  # fmt: skip


def _form4(accepted: datetime) -> str:
    return (
        "<ownershipDocument><reportingOwner><reportingOwnerId><rptOwnerName>Insider One"
        "</rptOwnerName></reportingOwnerId><reportingOwnerRelationship><isDirector>1</isDirector>"
        "</reportingOwnerRelationship></reportingOwner><nonDerivativeTable><nonDerivativeTransaction>"
        f"<transactionDate><value>{accepted.date()}</value></transactionDate><transactionCoding>"
        "<transactionCode>P</transactionCode></transactionCoding><transactionAmounts>"
        "<transactionShares><value>100</value></transactionShares><transactionPricePerShare>"
        "<value>20</value></transactionPricePerShare></transactionAmounts>"
        "</nonDerivativeTransaction></nonDerivativeTable></ownershipDocument>"
    )


def macro_series() -> dict[str, FredSeries]:
    versions = {
        name: [
            Version(
                date(2021 + m // 12, m % 12 + 1, 1),
                date(2021 + (m + 1) // 12, (m + 1) % 12 + 1, 12),
                f"{v:.3f}",
            )
            for m, v in ((m, 100 + m * 0.3 + i) for m in range(30))
        ]
        for i, name in enumerate(SERIES)
    }
    return {name: FredSeries(name, "units", found) for name, found in versions.items()}


def pipeline_reads(router: DataRouter, ticker: str) -> Counter[str]:
    """What a Pipeline's fundamentals analyst and the Scan's macro read: tool calls by vendor."""
    reads = [
        (DataKind.FUNDAMENTALS, lambda v: v.fundamentals(ticker, AS_OF)),
        *[
            (DataKind.STATEMENTS, lambda v, k=k: v.statements(ticker, k, AS_OF))
            for k in StatementKind
        ],
        (DataKind.INSIDER, lambda v: v.insider(ticker, AS_OF, timedelta(days=90))),
        *[(DataKind.MACRO, lambda v, s=s: v.macro(s, AS_OF, 12)) for s in SERIES],
    ]
    calls: Counter[str] = Counter()
    for kind, read in reads:
        calls[router.call(kind, read, as_of=AS_OF).vendor] += 1
    return calls


def most_in_window(times: list[float], seconds: float) -> int:
    ordered = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(ordered):
        while t - ordered[start] >= seconds:
            start += 1
        best = max(best, end - start + 1)
    return best


def desk(settings: Settings, tickers: list[str]) -> float:
    router = build_router(settings)
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda t: pipeline_reads(router, t), tickers))
    return time.monotonic() - started


MARKET_AS_OF = datetime(2024, 3, 28, 20, 30, tzinfo=UTC)
STAND_INS_TODAY = date(2024, 7, 1)
"""The stand-ins' "today": within their free tiers' history of ``MARKET_AS_OF``."""


def market_desk(count: int) -> tuple[MassiveMarket, list[Any]]:
    """``count`` companies: Massive's bars and listing, Finnhub's filings and a story each."""
    names = [f"M{i:03d}" for i in range(count)]
    bars = {
        name: day_bars(date(2023, 1, 3), date(2024, 6, 28), 20.0 + i % 80, 1e6 + 1e4 * i, {})
        for i, name in enumerate(names)
    }
    listed = [Listed(name, f"{name} Corp", "CS", date(2000, 1, 3)) for name in names]
    companies = []
    for i, name in enumerate(names):
        company = sample_company(name, cik=str(1_800_000 + i))
        company.news = [Story(i, MARKET_AS_OF - timedelta(days=1), f"{name} news", "Up.")]
        companies.append(company)
    return MassiveMarket(listed=listed, bars=bars), companies


def asked_again(router: DataRouter, kind: DataKind, read: Any) -> str:
    """``read`` through the router: the vendor that answered, or "no data" (an answer); refused
    for a quota, asked again after the wait named."""
    while True:
        try:
            return router.call(kind, read, as_of=MARKET_AS_OF).vendor
        except NoData:
            return "no data"
        except RateLimited as refused:
            time.sleep(refused.retry_after.total_seconds() if refused.retry_after else 1.0)


def analyst_reads(router: DataRouter, ticker: str) -> Counter[str]:
    """What a Pipeline's analysts read of one name: tool calls by vendor."""
    week, quarter = timedelta(days=7), timedelta(days=90)
    reads = [
        (DataKind.OHLCV, lambda v: v.ohlcv(ticker, Timeframe.D1, MARKET_AS_OF, 250)),
        (DataKind.NEWS, lambda v: v.news(MARKET_AS_OF, week, symbol=ticker)),
        *[
            (DataKind.STATEMENTS, lambda v, k=k: v.statements(ticker, k, MARKET_AS_OF))
            for k in StatementKind
        ],
        (DataKind.FUNDAMENTALS, lambda v: v.fundamentals(ticker, MARKET_AS_OF)),
        (DataKind.INSIDER, lambda v: v.insider(ticker, MARKET_AS_OF, quarter)),
    ]
    return Counter(asked_again(router, kind, read) for kind, read in reads)


def market_desk_run(settings: Settings, tickers: list[str]) -> tuple[float, Counter[str]]:
    router = build_router(settings)
    started = time.monotonic()
    calls: Counter[str] = Counter()
    with ThreadPoolExecutor(8) as pool:
        for counted in pool.map(lambda t: analyst_reads(router, t), tickers):
            calls.update(counted)
    calls[asked_again(router, DataKind.MOVERS, lambda v: v.movers(MARKET_AS_OF))] += 1
    return time.monotonic() - started, calls


def arrivals(fake: Any, method: str) -> list[tuple[float, int]]:
    """Each answer of ``fake`` from now on: when, and its status."""
    seen: list[tuple[float, int]] = []
    original = getattr(fake, method)

    def timed(*args: Any) -> Any:
        answer = original(*args)
        seen.append((time.monotonic(), answer[0]))
        return answer

    setattr(fake, method, timed)
    return seen


def market_bench(count: int, minute: float) -> None:
    """Section 4 of the docstring."""
    massive_data, companies = market_desk(count)
    tickers = [company.symbol for company in companies]
    massive_quota = VendorQuota(requests=5, seconds=minute)
    finnhub_quota = VendorQuota(requests=DEFAULT_QUOTAS["finnhub"].requests, seconds=minute)
    with (
        tempfile.TemporaryDirectory() as folder,
        FakeMassive(massive_data, today=STAND_INS_TODAY, window=minute) as massive,
        FakeFinnhub(companies, today=STAND_INS_TODAY, minute=minute) as finnhub,
    ):
        settings = load_settings(
            data_dir=Path(folder),
            massive={"base_url": massive.base_url, "api_key": MASSIVE_KEY},
            finnhub={"base_url": finnhub.base_url, "api_key": FINNHUB_KEY, "news_history_days": None},
            data_quotas={"massive": massive_quota.model_dump(), "finnhub": finnhub_quota.model_dump()},
        )  # fmt: skip
        massive_seen, finnhub_seen = arrivals(massive, "answer"), arrivals(finnhub, "answer")
        wall, calls = market_desk_run(settings, tickers)
        sent = {"massive": len(massive_seen), "finnhub": len(finnhub_seen)}
        bound = max(
            sent["massive"] / massive_quota.requests * massive_quota.seconds,
            sent["finnhub"] / finnhub_quota.requests * finnhub_quota.seconds,
            sent["finnhub"] / DEFAULT_QUOTAS["finnhub/burst"].requests,
        )
        scale = 60 / minute
        print(
            f"market desk of {count} names (a vendor minute played in {minute:g} s): tool calls by vendor {dict(calls)}; requests {sent}"
        )
        print(
            f"  first run: {wall:.1f} s against the quotas' bound {bound:.1f} s ({wall / bound:.2f}x); at the real pace {wall * scale / 60:.1f} min against {bound * scale / 60:.1f} min"
        )
        print(
            f"  most in a vendor minute: Massive {most_in_window([t for t, _ in massive_seen], minute)} (allows 5), Finnhub {most_in_window([t for t, _ in finnhub_seen], minute)} (allows 60); Finnhub in any 1 s: {most_in_window([t for t, _ in finnhub_seen], 1.0)} (allows 30); 429s: Massive {sum(c == 429 for _, c in massive_seen)}, Finnhub {sum(c == 429 for _, c in finnhub_seen)}"
        )
        massive_seen.clear()
        finnhub_seen.clear()
        again, _ = market_desk_run(settings, tickers)
        asked = len(massive_seen) + len(finnhub_seen)
        print(f"  same desk again: {again:.2f} s, vendor requests {asked}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=100)
    parser.add_argument(
        "--quick", action="store_true", help="10 names; a market desk of 5, its minute 1 s"
    )
    parser.add_argument("--market-names", type=int, default=100, help="names of the market desk")
    parser.add_argument("--minute", type=float, default=60.0, help="seconds a vendor minute lasts")
    parser.add_argument("--only-market", action="store_true", help="section 4 alone")
    args = parser.parse_args()
    if not args.only_market:
        filings_bench(10 if args.quick else args.names)
    if args.quick:
        market_bench(5, 1.0)
    else:
        market_bench(args.market_names, args.minute)


def filings_bench(names: int) -> None:
    """Sections 1 to 3 of the docstring."""
    companies = [company(i) for i in range(names)]
    tickers = [c.ticker for c in companies]
    with (
        tempfile.TemporaryDirectory() as folder,
        FakeSec(companies) as sec,
        FakeFred(macro_series()) as fred,
    ):
        settings = load_settings(
            data_dir=Path(folder),
            sec={"identity": IDENTITY, "data_url": sec.url, "www_url": sec.url},
            fred={"base_url": fred.base_url, "api_key": KEY},
            data_routes={"statements": ["sec"], "fundamentals": ["sec"], "insider": ["sec"], "macro": ["fred"]},
        )  # fmt: skip
        started = time.monotonic()
        one = pipeline_reads(build_router(settings), tickers[0])
        critical = time.monotonic() - started
        print(
            f"one Pipeline: tool calls by vendor {dict(one)}; vendor requests: SEC {len(sec.requests)}, FRED {len(fred.requests)}; data time {critical:.2f} s"
        )

        for log in (sec.requests, fred.requests, fred.arrivals):
            log.clear()
        sec_times: list[float] = []
        original = sec.answer

        def timed(path: str, agent: str) -> Any:
            sec_times.append(time.monotonic())
            return original(path, agent)

        sec.answer = timed  # type: ignore[method-assign]
        wall = desk(settings, tickers[1:])
        first_sec, first_fred = len(sec.requests), len(fred.requests)
        limit = DEFAULT_QUOTAS["sec"]
        bound = first_sec / (limit.requests / limit.seconds)
        print(
            f"desk of {names - 1} names, first run: {wall:.1f} s against the SEC quota's bound {bound:.1f} s ({wall / bound:.2f}x); requests SEC {first_sec}, FRED {first_fred}"
        )
        print(
            f"  most SEC requests in any 1 s: {most_in_window(sec_times, 1.0)} (quota {limit.requests}, the SEC allows 10); FRED in any 60 s: {most_in_window(fred.arrivals, 60.0)} (quota {DEFAULT_QUOTAS['fred'].requests})"
        )

        sec.requests.clear()
        fred.requests.clear()
        again = desk(settings, tickers[1:])
        asked = len(sec.requests) + len(fred.requests)
        hit = 1 - asked / max(first_sec + first_fred, 1)
        print(f"same desk again: {again:.2f} s, vendor requests {asked}, cache hit rate {hit:.1%}")


if __name__ == "__main__":
    main()
