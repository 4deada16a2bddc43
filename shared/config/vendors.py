"""The data vendors' settings (SEC EDGAR, FRED, Finnhub, Massive, ccxt, StockTwits) and the
request quotas the desk keeps to with each metered one."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field, SecretStr, model_validator

from shared.config.variables import from_vendor_variables

FRED_KEY_ENV = "FRED_API_KEY"
FRED_URL = "https://api.stlouisfed.org/fred"
FINNHUB_KEY_ENV = "FINNHUB_API_KEY"
MASSIVE_KEY_ENV = "MASSIVE_API_KEY"


class _KeyedVendor(BaseModel):
    """A keyed HTTP data vendor: where its API is, how long one call may take, and the key,
    read from the vendor's own variable (``KEY_VARIABLE``, as its clients read it) when not
    given."""

    KEY_VARIABLE: ClassVar[str]

    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")
    api_key: SecretStr | None = Field(
        None, description="default: the vendor's variable (FRED_API_KEY, FINNHUB_API_KEY...)"
    )

    @model_validator(mode="before")
    @classmethod
    def _key_from_the_vendors_variable(cls, data: object) -> object:
        return from_vendor_variables(data, {"api_key": cls.KEY_VARIABLE})


class FredSettings(_KeyedVendor):
    """FRED / ALFRED, the St. Louis Fed's macro series with their vintages (a free key;
    120 requests a minute)."""

    KEY_VARIABLE = FRED_KEY_ENV
    base_url: str = Field(FRED_URL, description="the API root; a stand-in or a proxy may take it")


class FinnhubSettings(_KeyedVendor):
    """Finnhub: company news, insider transactions and financials as reported (a free key;
    60 requests a minute and 30 a second)."""

    KEY_VARIABLE = FINNHUB_KEY_ENV
    base_url: str = Field("https://finnhub.io/api/v1", description="the API root")
    news_history_days: int | None = Field(
        365,
        ge=1,
        description="how far back your plan serves company news (the free tier: about a "
        "year); None: no limit",
    )


class MassiveSettings(_KeyedVendor):
    """Massive (formerly Polygon): raw daily bars with their splits and dividends, the grouped
    daily file, the ticker list as of a date, news (a free key; 5 requests a minute)."""

    KEY_VARIABLE = MASSIVE_KEY_ENV
    base_url: str = Field("https://api.massive.com", description="the API root")


class CcxtSettings(BaseModel):
    """ccxt: public crypto market data from one exchange (no key)."""

    exchange: Literal["binance", "kraken", "coinbase"] = Field(
        "binance", description="the exchange whose public candles are read"
    )
    base_url: str | None = Field(
        None, description="the exchange's public API root instead of its own (a stand-in, a proxy)"
    )
    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")


class StocktwitsSettings(BaseModel):
    """StockTwits' public streams: what is said about a symbol now (no key; about 200
    requests an hour). Only ``quantdesk data record social`` reads it, to keep posts for later
    runs."""

    base_url: str = Field(
        "https://api.stocktwits.com/api/2",
        description="the API root; a stand-in or a proxy may take it",
    )
    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")


class VendorQuota(BaseModel):
    """At most ``requests`` in any ``seconds``, for the whole desk (``shared.data.quota``)."""

    requests: int = Field(ge=1)
    seconds: float = Field(gt=0)


DEFAULT_QUOTAS: dict[str, VendorQuota] = {
    "sec": VendorQuota(requests=8, seconds=1),
    "fred": VendorQuota(requests=110, seconds=60),
    "finnhub": VendorQuota(requests=55, seconds=60),
    "finnhub/burst": VendorQuota(requests=25, seconds=1),
    "massive": VendorQuota(requests=5, seconds=60),
    "stocktwits": VendorQuota(requests=180, seconds=3600),
}
"""What the desk asks of each metered data vendor: under what its documentation allows (the
SEC 10 a second, FRED 120 a minute), since a request reaches the vendor a little after its
turn (a busy worker's thread may be late), and the vendor counts arrivals."""

EDGAR_IDENTITY_ENV = "EDGAR_IDENTITY"


class SecSettings(BaseModel):
    """SEC EDGAR's JSON APIs and filings (no key; the SEC asks every client to name a contact
    in its User-Agent, and allows 10 requests a second)."""

    identity: str | None = Field(
        None,
        description=f"who calls, as the SEC asks: 'Name email@example.com' (default: "
        f"${EDGAR_IDENTITY_ENV})",
    )
    data_url: str = Field("https://data.sec.gov", description="companyfacts and submissions")
    www_url: str = Field("https://www.sec.gov", description="the ticker list and the filings")
    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")

    @model_validator(mode="before")
    @classmethod
    def _identity_from_edgars_variable(cls, data: object) -> object:
        """``EDGAR_IDENTITY``, as edgartools reads it, when no identity is given."""
        return from_vendor_variables(data, {"identity": EDGAR_IDENTITY_ENV})
