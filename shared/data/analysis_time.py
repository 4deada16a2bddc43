"""A run's analysis time: the time given (checked against the data), or the latest daily bar's.

The Pipeline resolves it once, in its first step, and ``quantdesk prompt show`` the
same way, so a prompt shown is the prompt a run as of that time sends. An unknown
symbol fails naming ``symbol``; a known one with no bars by the given time fails
naming ``as_of``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from shared.data.contracts import DataKind
from shared.data.router import DataRouter
from shared.errors import InvalidInput, NoData, NotConfigured, QuantdeskError
from shared.market.bars import Timeframe


@dataclass(frozen=True)
class AnalysisTime:
    """The analysis time and the daily bar it stands on."""

    as_of: datetime
    latest_bar: datetime


def latest_bar(router: DataRouter, symbol: str, as_of: datetime) -> datetime | None:
    """The last daily bar at or shortly before ``as_of`` in the routed vendors, if any.

    A vendor that does not know the symbol at all (the sim market) raises
    ``InvalidInput`` naming ``symbol``, which propagates from here.
    """
    try:
        routed = router.call(
            DataKind.OHLCV, lambda vendor: vendor.ohlcv(symbol, Timeframe.D1, as_of, 1), as_of=as_of
        )
    except (NoData, NotConfigured):
        return None
    return routed.value[-1].time if routed.value else None


def _bar_if_known(router: DataRouter, symbol: str, as_of: datetime) -> datetime | None:
    """``latest_bar``, with a symbol some vendor does not know as no bar: the callers then
    look elsewhere (the fixed data) or name the symbol themselves."""
    try:
        return latest_bar(router, symbol, as_of)
    except InvalidInput as error:
        if error.field != "symbol":
            raise
        return None


def _last_bar_of_fixed_data(router: DataRouter, symbol: str, bound: datetime) -> datetime | None:
    """The last bar up to ``bound`` of the data that ends in the past (bundled files,
    the sim world), which "now" finds stale: the latest analysis time those data allow."""
    from shared.data.sim.world import DEFAULT_END
    from shared.market.sources import BundledSource

    try:
        return BundledSource().read(symbol, Timeframe.D1, as_of=bound, lookback=1)[-1].time
    except QuantdeskError:
        pass
    sim_end = datetime.combine(DEFAULT_END, datetime.max.time(), tzinfo=UTC)
    try:
        return latest_bar(router, symbol, min(sim_end, bound))
    except QuantdeskError:
        return None


def latest_time(router: DataRouter, symbol: str, not_after: datetime | None = None) -> datetime:
    """The time of the symbol's latest daily bar anywhere we read (up to ``not_after``)."""
    bound = not_after or datetime.now(UTC)
    latest = _bar_if_known(router, symbol, bound) or _last_bar_of_fixed_data(router, symbol, bound)
    if latest is None:
        raise InvalidInput(
            "symbol",
            f"no daily bars for {symbol!r} in any routed vendor",
            fix="Use a symbol of the bundled data, your local data or the sim universe.",
        )
    return latest


def analysis_time(
    router: DataRouter, symbol: str, as_of: datetime | None, not_after: datetime | None = None
) -> AnalysisTime:
    """``as_of`` if the data has a daily bar at or shortly before it; without one, the
    latest bar's time (up to ``not_after``). Times must be timezone-aware."""
    if as_of is None:
        latest = latest_time(router, symbol, not_after)
        return AnalysisTime(as_of=latest, latest_bar=latest)
    bar = _bar_if_known(router, symbol, as_of)
    if bar is None:
        latest = latest_time(router, symbol)  # raises naming `symbol` if it is unknown
        raise InvalidInput(
            "as_of",
            f"no daily bars for {symbol} at or shortly before {as_of.isoformat()}",
            fix=f"Use a time the data covers (its latest bar is {latest.isoformat()}).",
        )
    return AnalysisTime(as_of=as_of, latest_bar=bar)
