"""Sectors, indices and movers computed from real bars as of any date (the ``bars`` vendor):
from your files and the bundled series, never from a bar after ``as_of``."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from shared.config import load_settings
from shared.data.bundled import BundledVendor
from shared.data.contracts import DataKind, Sector
from shared.data.factory import build_router
from shared.errors import NoData
from shared.market.bars import Timeframe

AS_OF = datetime(2012, 6, 1, 21, tzinfo=UTC)
DAYS = [date(2012, 5, 1) + timedelta(days=i) for i in range(45)]
"""Calendar days through mid-June: the bars after ``AS_OF`` must never count."""


def _write_bars(folder: Path, symbol: str, closes: list[float], volume: int = 1000) -> None:
    rows = ["Date,Open,High,Low,Close,Volume"]
    rows += [f"{day},{c},{c},{c},{c},{volume}" for day, c in zip(DAYS, closes, strict=False)]
    (folder / f"{symbol}.csv").write_text("\n".join(rows) + "\n")


@pytest.fixture
def settings(tmp_path: Path) -> object:
    data = tmp_path / "data"
    bars = data / "ohlcv"
    bars.mkdir(parents=True)
    rising = [100 + i for i in range(len(DAYS))]
    _write_bars(bars, "XLK", rising)
    _write_bars(bars, "XLE", [100 - i * 0.5 for i in range(len(DAYS))])
    # AAA jumps on AS_OF's session; BBB falls; CCC's bars stop a week before AS_OF.
    at = DAYS.index(AS_OF.date())
    _write_bars(bars, "AAA", [50.0] * at + [55.0] + [90.0] * (len(DAYS) - at - 1), volume=5000)
    _write_bars(bars, "BBB", [20.0] * at + [19.0] + [5.0] * (len(DAYS) - at - 1))
    _write_bars(bars, "CCC", [10.0] * (at - 7))
    _write_bars(bars, "DDD", [33.0] * len(DAYS))
    (data / "universe.csv").write_text(
        "symbol,name,sector,industry,asset_type\n"
        "AAA,Aaa Corp,Energy,Oil,equity\nBBB,Bbb Inc,Utilities,Power,equity\n"
        "CCC,Ccc plc,Industrials,Rail,equity\nXLK,Tech ETF,,,etf\n"
        "DDD,Ddd Energy,Energy,Gas,equity\n"
    )
    return load_settings(
        data_dir=tmp_path,
        data_routes={
            "ohlcv": ["local", "bundled"],
            "universe": ["local"],
            "sectors": ["bars"],
            "indices": ["bars"],
            "movers": ["bars"],
            "industry": ["bars"],
        },
    )


def _read(settings: object, kind: DataKind, read: object) -> object:
    routed = build_router(settings).call(kind, read, as_of=AS_OF)  # type: ignore[arg-type]
    assert routed.vendor == "bars"
    return routed.value


def test_sector_returns_come_from_the_etfs_bars_up_to_as_of(settings: object) -> None:
    rows = {
        row.sector: row for row in _read(settings, DataKind.SECTORS, lambda v: v.sectors(AS_OF))
    }

    assert set(rows) == {Sector.INFORMATION_TECHNOLOGY, Sector.ENERGY}
    at = DAYS.index(AS_OF.date())
    assert rows[Sector.INFORMATION_TECHNOLOGY].return_1d == pytest.approx(
        (100 + at) / (99 + at) - 1
    )
    assert rows[Sector.ENERGY].return_1d < 0


def test_index_levels_are_the_bundled_indices_close_at_as_of(settings: object) -> None:
    levels = {x.symbol: x for x in _read(settings, DataKind.INDICES, lambda v: v.indices(AS_OF))}
    [spx_bar] = BundledVendor().ohlcv("^GSPC", Timeframe.D1, AS_OF, 1)

    assert levels["^GSPC"].level == spx_bar.close
    assert {"^GSPC", "^IXIC"} <= set(levels) and "^DJI" not in levels  # no bars of it here


def test_movers_are_the_universes_equities_on_the_last_session(settings: object) -> None:
    movers = _read(settings, DataKind.MOVERS, lambda v: v.movers(AS_OF, 5))

    assert [m.symbol for m in movers.gainers] == ["AAA"]
    assert movers.gainers[0].change_pct == pytest.approx(10.0)
    assert [m.symbol for m in movers.losers] == ["BBB"]
    assert "CCC" not in {m.symbol for m in movers.most_active}


def test_a_sectors_companies_come_most_traded_first_with_their_months_return(
    settings: object,
) -> None:
    energy = _read(settings, DataKind.INDUSTRY, lambda v: v.industry(Sector.ENERGY, AS_OF))

    # AAA trades 5000 shares at ~50 a day, DDD 1000 at ~33: AAA first; no market cap in bars.
    assert [(c.symbol, c.industry, c.market_cap) for c in energy] == [
        ("AAA", "Oil", None),
        ("DDD", "Gas", None),
    ]
    assert energy[0].return_21d == pytest.approx(55.0 / 50.0 - 1)
    with pytest.raises(NoData, match="no equity of Materials"):
        build_router(settings).call(  # type: ignore[arg-type]
            DataKind.INDUSTRY, lambda v: v.industry(Sector.MATERIALS, AS_OF), as_of=AS_OF
        )
