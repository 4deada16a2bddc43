"""SEC EDGAR through its strict stand-in over HTTP: statements in the version filed last by
``as_of`` (first value before a restatement, restated after), visible from the filing's
acceptance; insider trades dated by filing; fundamentals from those facts and the close at
``as_of``; faults as the router's kinds naming the setting."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.config import EDGAR_IDENTITY_ENV, ENV_PREFIX, SecSettings, load_settings
from shared.data.contracts import DataKind, Sector, StatementKind
from shared.data.factory import build_router, build_vendor
from shared.data.sec import SecVendor, sector_of
from shared.data.sec_mirror import FILES, MIRROR_DIR, SecMirror
from shared.errors import NoData, NotConfigured, RateLimited, VendorFailure
from tests.cli_process import run_quantdesk
from tests.fakes.sec import FakeSec, SecCompany

IDENTITY = "quantdesk tests tests@example.com"
CIK = 1999001
Q1, Q2 = ("2023-01-01", "2023-03-31"), ("2023-04-01", "2023-06-30")
H1 = ("2023-01-01", "2023-06-30")


def _fact(period: tuple[str, ...], val: float, accn: str, filed: str, fp: str) -> dict[str, Any]:
    start, end = period if len(period) == 2 else (None, period[0])
    entry = {"end": end, "val": val, "accn": accn, "form": "10-Q", "filed": filed}
    return {**entry, "fy": 2023, "fp": fp, **({"start": start} if start else {})}


FIRST_Q1 = ("0001999001-23-000010", "2023-05-05")
SECOND_Q2 = ("0001999001-23-000020", "2023-08-04")
RESTATED = ("0001999001-23-000030", "2023-09-15")
OLD_10K = ("0001999001-23-000001", "2023-02-20")  # not among the recent filings
FORM4 = ("0001999001-23-000015", "xslF345X05/wk-form4.xml")


def _concept(*entries: dict[str, Any], unit: str = "USD") -> dict[str, Any]:
    return {"units": {unit: list(entries)}}


ACME = SecCompany(
    cik=CIK,
    ticker="ACMR",
    name="Acme Robotics Inc.",
    sic="3570",
    sic_description="Computer & office equipment",
    facts={
        "us-gaap": {
            "Revenues": _concept(
                _fact(Q1, 100e6, *FIRST_Q1, "Q1"),
                _fact(Q2, 110e6, *SECOND_Q2, "Q2"),
                _fact(Q1, 100e6, *SECOND_Q2, "Q2"),  # the comparative: the same value again
                _fact(Q1, 95e6, *RESTATED, "Q2"),  # the 10-Q/A restates the first quarter
            ),
            "NetIncomeLoss": _concept(
                _fact(Q1, 10e6, *FIRST_Q1, "Q1"), _fact(Q2, 12e6, *SECOND_Q2, "Q2")
            ),
            "Assets": _concept(
                _fact(("2022-12-31",), 480e6, *OLD_10K, "FY"),
                _fact(("2023-03-31",), 500e6, *FIRST_Q1, "Q1"),
                _fact(("2023-06-30",), 520e6, *SECOND_Q2, "Q2"),
            ),
            "StockholdersEquity": _concept(_fact(("2023-03-31",), 300e6, *FIRST_Q1, "Q1")),
            "CommonStockSharesOutstanding": _concept(
                _fact(("2023-03-31",), 10e6, *FIRST_Q1, "Q1"), unit="shares"
            ),
            "NetCashProvidedByUsedInOperatingActivities": _concept(
                _fact(Q1, 20e6, *FIRST_Q1, "Q1"), _fact(H1, 45e6, *SECOND_Q2, "Q2")
            ),
            "PaymentsToAcquirePropertyPlantAndEquipment": _concept(
                _fact(Q1, 5e6, *FIRST_Q1, "Q1"), _fact(H1, 12e6, *SECOND_Q2, "Q2")
            ),
        }
    },
    filings=[
        {
            "accessionNumber": RESTATED[0],
            "filingDate": RESTATED[1],
            "form": "10-Q/A",
            "acceptanceDateTime": "2023-09-15T20:00:00.000Z",
            "primaryDocument": "q2a.htm",
        },
        {
            "accessionNumber": SECOND_Q2[0],
            "filingDate": SECOND_Q2[1],
            "form": "10-Q",
            "acceptanceDateTime": "2023-08-04T20:00:00.000Z",
            "primaryDocument": "q2.htm",
        },
        {
            "accessionNumber": FORM4[0],
            "filingDate": "2023-06-02",
            "form": "4",
            "acceptanceDateTime": "2023-06-02T21:15:00.000Z",
            "primaryDocument": FORM4[1],
        },
        {
            "accessionNumber": FIRST_Q1[0],
            "filingDate": FIRST_Q1[1],
            "form": "10-Q",
            "acceptanceDateTime": "2023-05-05T16:30:00.000Z",
            "primaryDocument": "q1.htm",
        },
    ],  # fmt: skip
    documents={
        f"{FORM4[0].replace('-', '')}/wk-form4.xml": """<?xml version="1.0"?>
<ownershipDocument>
  <issuer><issuerCik>0001999001</issuerCik><issuerTradingSymbol>ACMR</issuerTradingSymbol></issuer>
  <reportingOwner>
    <reportingOwnerId><rptOwnerCik>0002000001</rptOwnerCik><rptOwnerName>Doe Jane</rptOwnerName></reportingOwnerId>
    <reportingOwnerRelationship><isOfficer>1</isOfficer><officerTitle>Chief Financial Officer</officerTitle></reportingOwnerRelationship>
  </reportingOwner>
  <nonDerivativeTable>
    <nonDerivativeTransaction>
      <transactionDate><value>2023-05-31</value></transactionDate>
      <transactionCoding><transactionFormType>4</transactionFormType><transactionCode>P</transactionCode></transactionCoding>
      <transactionAmounts>
        <transactionShares><value>1000</value></transactionShares>
        <transactionPricePerShare><value>50.25</value></transactionPricePerShare>
        <transactionAcquiredDisposedCode><value>A</value></transactionAcquiredDisposedCode>
      </transactionAmounts>
    </nonDerivativeTransaction>
    <nonDerivativeTransaction>
      <transactionDate><value>2023-05-31</value></transactionDate>
      <transactionCoding><transactionFormType>4</transactionFormType><transactionCode>A</transactionCode></transactionCoding>
      <transactionAmounts>
        <transactionShares><value>5000</value></transactionShares>
        <transactionPricePerShare><value>0</value></transactionPricePerShare>
        <transactionAcquiredDisposedCode><value>A</value></transactionAcquiredDisposedCode>
      </transactionAmounts>
    </nonDerivativeTransaction>
  </nonDerivativeTable>
</ownershipDocument>
"""
    },
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.fixture
def sec() -> Iterator[FakeSec]:
    with FakeSec([ACME]) as fake:
        yield fake


def _settings(fake: FakeSec, identity: str | None = IDENTITY) -> SecSettings:
    return SecSettings(identity=identity, data_url=fake.url, www_url=fake.url, timeout_seconds=2)


@pytest.fixture
def vendor(sec: FakeSec) -> SecVendor:
    return SecVendor(_settings(sec), price_at=lambda symbol, as_of: 60.0)


def _revenue(vendor: SecVendor, as_of: datetime) -> dict[str, float]:
    income = vendor.statements("ACMR", StatementKind.INCOME, as_of)
    return {s.fiscal_period: s.items["revenue"] for s in income}


def test_a_quarter_is_invisible_until_its_filing_is_accepted(vendor: SecVendor) -> None:
    accepted = utc(2023, 5, 5, 16, 30)

    with pytest.raises(NoData, match="no income statement of ACMR"):
        vendor.statements("ACMR", StatementKind.INCOME, accepted - timedelta(minutes=1))
    [q1] = vendor.statements("ACMR", StatementKind.INCOME, accepted)

    assert (q1.fiscal_period, q1.items["revenue"], q1.reported_at) == ("2023Q1", 100e6, accepted)


def test_a_restated_quarter_is_seen_as_first_filed_before_and_restated_after(
    vendor: SecVendor,
) -> None:
    before = _revenue(vendor, utc(2023, 9, 1))
    after = _revenue(vendor, utc(2023, 10, 1))

    assert before == {"2023Q2": 110e6, "2023Q1": 100e6}
    assert after == {"2023Q2": 110e6, "2023Q1": 95e6}
    [restated] = [
        s for s in vendor.statements("ACMR", StatementKind.INCOME, utc(2023, 10, 1))
        if s.fiscal_period == "2023Q1"
    ]  # fmt: skip
    assert restated.reported_at == utc(2023, 9, 15, 20)


def test_a_quarters_cash_flow_is_the_difference_of_year_to_date_periods(
    vendor: SecVendor,
) -> None:
    q2, q1 = vendor.statements("ACMR", StatementKind.CASH_FLOW, utc(2023, 9, 1))

    assert (q2.items["operating_cash_flow"], q2.items["free_cash_flow"]) == (25e6, 18e6)
    assert (q1.items["operating_cash_flow"], q1.items["free_cash_flow"]) == (20e6, 15e6)


def test_a_filing_without_an_acceptance_time_counts_from_the_end_of_its_day(
    vendor: SecVendor,
) -> None:
    """The 10-K of 2023-02-20 is older than the submissions list: visible only after that
    day in New York, never earlier."""
    end_of_day = utc(2023, 2, 21, 4, 59, 59)

    with pytest.raises(NoData):
        vendor.statements("ACMR", StatementKind.BALANCE, end_of_day - timedelta(seconds=1))
    [year_end] = vendor.statements("ACMR", StatementKind.BALANCE, end_of_day)
    assert year_end.items == {"total_assets": 480e6} and year_end.fiscal_period == "2023Q4"


def test_fundamentals_are_computed_from_facts_known_then_and_the_close(vendor: SecVendor) -> None:
    found = vendor.fundamentals("ACMR", utc(2023, 6, 1))

    assert (found.name, found.sector) == ("Acme Robotics Inc.", Sector.INFORMATION_TECHNOLOGY)
    assert found.price == 60.0 and found.market_cap == 600e6
    assert found.price_to_book == 2.0 and found.latest_period == "2023Q1"


def test_insider_trades_are_dated_by_filing_and_only_open_market(vendor: SecVendor) -> None:
    accepted = utc(2023, 6, 2, 21, 15)

    with pytest.raises(NoData):
        vendor.insider("ACMR", accepted - timedelta(seconds=1), timedelta(days=30))
    [trade] = vendor.insider("ACMR", accepted, timedelta(days=30))

    assert (trade.insider, trade.role, trade.side) == ("Doe Jane", "Chief Financial Officer", "buy")
    assert (trade.shares, trade.price, trade.filed_at) == (1000, 50.25, accepted)
    assert str(trade.traded_on) == "2023-05-31"


def test_the_sec_refuses_a_client_without_a_contact_and_so_do_we(sec: FakeSec) -> None:
    with pytest.raises(NotConfigured, match=f"{EDGAR_IDENTITY_ENV} is not set"):
        SecVendor(_settings(sec, identity=None))
    with pytest.raises(NotConfigured, match="no contact"):
        SecVendor(_settings(sec, identity="quantdesk"))
    assert sec.requests == []


def test_every_request_names_the_contact(vendor: SecVendor, sec: FakeSec) -> None:
    vendor.statements("ACMR", StatementKind.INCOME, utc(2023, 9, 1))

    assert sec.requests and {agent for _path, agent in sec.requests} == {IDENTITY}


@pytest.mark.parametrize(
    ("status", "error", "said"),
    [(429, RateLimited, "10 requests a second"), (503, VendorFailure, "503"),
     (403, NotConfigured, EDGAR_IDENTITY_ENV)],
)  # fmt: skip
def test_faults_are_the_routers_kinds(
    vendor: SecVendor, sec: FakeSec, status: int, error: type[Exception], said: str
) -> None:
    sec.fail_next(status)

    with pytest.raises(error, match=said):
        vendor.statements("ACMR", StatementKind.INCOME, utc(2023, 9, 1))


def test_an_unknown_ticker_is_no_data(vendor: SecVendor) -> None:
    with pytest.raises(NoData, match="no NOPE"):
        vendor.statements("NOPE", StatementKind.INCOME, utc(2023, 9, 1))


def test_calls_of_one_process_keep_under_ten_a_second(vendor: SecVendor, sec: FakeSec) -> None:
    """Each insider read fetches its Form 4 again: fifteen in a row, none refused."""
    for minutes in range(15):
        vendor.insider("ACMR", utc(2023, 6, 3, 0, minutes), timedelta(days=30))
    assert len(sec.requests) >= 15


def test_sic_codes_map_to_sectors() -> None:
    assert sector_of("3571") is Sector.INFORMATION_TECHNOLOGY
    assert sector_of("2834") is Sector.HEALTH_CARE and sector_of("6022") is Sector.FINANCIALS
    assert sector_of(None) is None and sector_of("abc") is None


def test_through_the_router_the_sec_answers_statements_and_the_cache_keeps_them(
    sec: FakeSec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(EDGAR_IDENTITY_ENV, IDENTITY)
    settings = load_settings(
        data_dir=tmp_path,
        sec={"data_url": sec.url, "www_url": sec.url},
        data_routes={"statements": ["sec", "sim"]},
    )
    as_of = utc(2023, 9, 1)

    def read() -> str:
        router = build_router(settings)
        return router.call(
            DataKind.STATEMENTS,
            lambda v: v.statements("ACMR", StatementKind.INCOME, as_of),
            as_of=as_of,
        ).vendor

    assert read() == "sec"
    calls = len(sec.requests)
    assert read() == "sec" and len(sec.requests) == calls
    assert isinstance(build_vendor("sec", settings).reach(DataKind.UNIVERSE).fresh_for, timedelta)


def _cli_env(sec: FakeSec, tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    return {
        **clean,
        f"{ENV_PREFIX}DATA_DIR": str(tmp_path),
        f"{ENV_PREFIX}SEC__WWW_URL": sec.url,
        f"{ENV_PREFIX}SEC__DATA_URL": sec.url,
        EDGAR_IDENTITY_ENV: IDENTITY,
    }


def test_the_mirror_serves_tickers_facts_and_filings_without_the_api(
    sec: FakeSec, tmp_path: Path
) -> None:
    mirrored = run_quantdesk(_cli_env(sec, tmp_path), "data", "sec-mirror")
    assert mirrored.returncode == 0, mirrored.stderr
    assert {name for name in os.listdir(tmp_path / MIRROR_DIR)} == set(FILES)
    sec.requests.clear()

    vendor = SecVendor(_settings(sec), mirror=SecMirror(tmp_path / MIRROR_DIR))
    assert _revenue(vendor, utc(2023, 10, 1)) == {"2023Q2": 110e6, "2023Q1": 95e6}
    assert vendor.fundamentals("ACMR", utc(2023, 6, 1)).sector is Sector.INFORMATION_TECHNOLOGY
    assert sec.requests == []


def test_a_mirror_file_that_is_not_a_zip_is_refused_and_nothing_is_written(
    sec: FakeSec, tmp_path: Path
) -> None:
    broken = tmp_path / "companyfacts.zip"
    broken.write_text("<html>Request Rate Threshold Exceeded</html>")

    result = run_quantdesk(_cli_env(sec, tmp_path / "desk"), "data", "sec-mirror", str(broken))

    assert result.returncode == 1 and "is not a zip file" in result.stderr
    assert not (tmp_path / "desk" / MIRROR_DIR / "companyfacts.zip").exists()
