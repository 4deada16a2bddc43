"""The simulated market's companies and what shapes each sector's prices and books.

Tickers and names are invented (coined words, four letters) so no result can be
mistaken for a real company; the sector ETFs, the T-bill ETF and the indices
keep their real symbols because the Scan and Portfolio flows ask for them by
name. The list is fixed; the seed draws each company's parameters around its
sector's profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shared.data.contracts import INDEX_SYMBOLS, SECTOR_ETFS, TBILL_ETF, Listing, Sector


@dataclass(frozen=True)
class Company:
    """One fictional listed company."""

    symbol: str
    name: str
    sector: Sector
    industry: str


@dataclass(frozen=True)
class SectorProfile:
    """Typical figures of a sector, around which each company's parameters are drawn."""

    beta: float  # sensitivity to the market factor
    idio_vol: float  # daily volatility of company-specific news-free moves
    factor_vol: float  # daily volatility of the sector factor shared by its companies
    gross_margin: float  # gross profit / revenue
    operating_margin: float  # operating income / revenue
    asset_intensity: float  # total assets / annual revenue (banks and REITs hold a lot)
    equity_ratio: float  # equity / total assets
    debt_ratio: float  # debt / total assets
    cash_ratio: float  # cash / total assets
    pe: float  # price / earnings at the world's start
    growth: float  # annual revenue growth


_S = Sector
PROFILES: dict[Sector, SectorProfile] = {
    _S.INFORMATION_TECHNOLOGY: SectorProfile(1.2, 0.013, 0.006, 0.60, 0.22, 1.5, 0.50, 0.15, 0.20, 24, 0.10),
    _S.COMMUNICATION_SERVICES: SectorProfile(1.0, 0.012, 0.005, 0.55, 0.20, 2.0, 0.45, 0.25, 0.12, 20, 0.07),
    _S.CONSUMER_DISCRETIONARY: SectorProfile(1.15, 0.013, 0.005, 0.38, 0.10, 0.9, 0.35, 0.25, 0.10, 22, 0.07),
    _S.CONSUMER_STAPLES: SectorProfile(0.65, 0.008, 0.004, 0.40, 0.15, 1.0, 0.35, 0.30, 0.06, 20, 0.03),
    _S.ENERGY: SectorProfile(1.1, 0.014, 0.008, 0.30, 0.12, 1.8, 0.50, 0.25, 0.06, 15, 0.02),
    _S.FINANCIALS: SectorProfile(1.2, 0.010, 0.006, 0.90, 0.30, 8.0, 0.11, 0.10, 0.10, 12, 0.05),
    _S.HEALTH_CARE: SectorProfile(0.85, 0.012, 0.005, 0.65, 0.18, 1.6, 0.45, 0.25, 0.12, 20, 0.07),
    _S.INDUSTRIALS: SectorProfile(1.05, 0.010, 0.004, 0.30, 0.12, 1.1, 0.35, 0.28, 0.08, 18, 0.05),
    _S.MATERIALS: SectorProfile(1.1, 0.011, 0.006, 0.28, 0.13, 1.4, 0.42, 0.28, 0.07, 16, 0.04),
    _S.REAL_ESTATE: SectorProfile(0.8, 0.009, 0.005, 0.65, 0.35, 8.0, 0.45, 0.45, 0.03, 30, 0.04),
    _S.UTILITIES: SectorProfile(0.45, 0.008, 0.004, 0.45, 0.20, 3.5, 0.30, 0.40, 0.02, 17, 0.03),
}  # fmt: skip

_TABLE: dict[Sector, tuple[tuple[str, str, str], ...]] = {
    _S.INFORMATION_TECHNOLOGY: (
        ("QBTX", "Qubitrix Semiconductor", "Semiconductors"),
        ("LMNW", "Lumenweave Software", "Software"),
        ("CRSX", "Corvasix Systems", "Software"),
        ("HXGR", "Hexagrid Computing", "Technology Hardware"),
        ("NVLQ", "Novalith Devices", "Semiconductors"),
        ("PXMQ", "Pixmoq Cloud", "Software"),
        ("TRLZ", "Trellizon IT Services", "IT Services"),
        ("FNWK", "Fernwick Photonics", "Electronic Components"),
        ("WFRX", "Waferix Equipment", "Semiconductor Equipment"),
        ("ZYPH", "Zypherion Networks", "Communications Equipment"),
    ),
    _S.HEALTH_CARE: (
        ("MDLQ", "Medlarq Pharmaceuticals", "Pharmaceuticals"),
        ("GNVX", "Genovyx Biotherapeutics", "Biotechnology"),
        ("CRDQ", "Cardiquill Medical", "Medical Devices"),
        ("HLVN", "Healvane Health Plans", "Managed Health Care"),
        ("BIOQ", "Bioquorra Labs", "Life Sciences Tools"),
        ("SUTQ", "Suturion Surgical", "Medical Devices"),
        ("PLXM", "Plaxomed Pharma", "Pharmaceuticals"),
        ("VRDQ", "Viridexa Therapeutics", "Biotechnology"),
        ("CLNQ", "Clinquest Care Networks", "Health Care Providers"),
    ),
    _S.FINANCIALS: (
        ("FRTB", "Fortbridge Bancorp", "Banks"),
        ("LDGX", "Ledgerix Financial", "Capital Markets"),
        ("ANCV", "Anchorvale Insurance", "Insurance"),
        ("QRYB", "Quarrybank Holdings", "Banks"),
        ("CDMQ", "Creditmoor Finance", "Consumer Finance"),
        ("TLWD", "Tallowind Asset Management", "Capital Markets"),
        ("HRBQ", "Harborkey Bank", "Banks"),
        ("PLDQ", "Pledgewell Re", "Insurance"),
        ("SVRQ", "Silverquay Brokerage", "Capital Markets"),
    ),
    _S.CONSUMER_DISCRETIONARY: (
        ("VLMQ", "Velomotive Motors", "Automobiles"),
        ("SHPX", "Shopnexa Retail", "Internet Retail"),
        ("DWLX", "Dwellix Homes", "Homebuilding"),
        ("TRVQ", "Travoque Resorts", "Hotels & Leisure"),
        ("SNKQ", "Sneakora Apparel", "Apparel"),
        ("GRLX", "Grillux Restaurants", "Restaurants"),
        ("CRTQ", "Cartiqo Stores", "Broadline Retail"),
        ("RDVQ", "Roadvane Auto Parts", "Auto Components"),
    ),
    _S.COMMUNICATION_SERVICES: (
        ("CHRQ", "Chirpora Social", "Interactive Media"),
        ("TLWQ", "Telwave Communications", "Telecom Services"),
        ("SQST", "Streamquill Entertainment", "Entertainment"),
        ("BRDX", "Broadmix Media", "Media"),
        ("GMFQ", "Gamefloe Interactive", "Entertainment"),
        ("SGNQ", "Signaquill Wireless", "Wireless Telecom"),
        ("ADVZ", "Adverza Search", "Interactive Media"),
    ),
    _S.INDUSTRIALS: (
        ("AERQ", "Aeroquill Defense", "Aerospace & Defense"),
        ("GRDM", "Girdmont Machinery", "Machinery"),
        ("SKVQ", "Skyvantra Airlines", "Airlines"),
        ("RLWX", "Railwex Freight", "Railroads"),
        ("BLDQ", "Buildquarry Engineering", "Construction & Engineering"),
        ("VLTQ", "Voltaxis Electric", "Electrical Equipment"),
        ("PKGQ", "Parcelgo Logistics", "Air Freight & Logistics"),
        ("CNVQ", "Conveyra Industrial", "Industrial Conglomerates"),
    ),
    _S.CONSUMER_STAPLES: (
        ("GRNQ", "Granquill Foods", "Food Products"),
        ("FZBV", "Fizzbrook Beverages", "Beverages"),
        ("HRTQ", "Hearthmoss Household", "Household Products"),
        ("PNTQ", "Pantrywise Grocers", "Food Retail"),
        ("GLWQ", "Glowquill Personal Care", "Personal Products"),
        ("MLTQ", "Maltquarry Brewing", "Beverages"),
    ),
    _S.ENERGY: (
        ("PTRQ", "Petrixa Energy", "Integrated Oil & Gas"),
        ("SHLQ", "Shalequill Resources", "Oil & Gas Exploration & Production"),
        ("DRLQ", "Drillvane Services", "Oilfield Services"),
        ("RFNQ", "Refinquay Refining", "Refining & Marketing"),
        ("PPLQ", "Pipelux Midstream", "Oil & Gas Storage & Transportation"),
        ("GYSQ", "Geysera Gas", "Oil & Gas Exploration & Production"),
    ),
    _S.UTILITIES: (
        ("WTTQ", "Wattrix Power", "Electric Utilities"),
        ("GSVQ", "Gasvale Utilities", "Gas Utilities"),
        ("AQNQ", "Aquanova Water", "Water Utilities"),
        ("SOLQ", "Solquill Renewables", "Renewable Electricity"),
        ("GRDQ", "Gridlume Energy", "Multi-Utilities"),
    ),
    _S.REAL_ESTATE: (
        ("OFCQ", "Officquay Properties", "Office REITs"),
        ("RSDQ", "Residexa Living", "Residential REITs"),
        ("WRHQ", "Warehoz Logistics REIT", "Industrial REITs"),
        ("MLLQ", "Mallquist Retail REIT", "Retail REITs"),
        ("TWRQ", "Towerquill Infrastructure", "Specialized REITs"),
    ),
    _S.MATERIALS: (
        ("CHMQ", "Chemixa Chemicals", "Chemicals"),
        ("ORVQ", "Orevale Mining", "Metals & Mining"),
        ("CMTQ", "Cementquay Materials", "Construction Materials"),
        ("PKWQ", "Packwright Containers", "Containers & Packaging"),
        ("LMBQ", "Lumberquill Paper", "Paper & Forest Products"),
    ),
}

COMPANIES: tuple[Company, ...] = tuple(
    Company(symbol, name, sector, industry)
    for sector, rows in _TABLE.items()
    for symbol, name, industry in rows
)
SECTORS: tuple[Sector, ...] = tuple(Sector)
"""Sector order of every per-sector array."""

ETF_SYMBOLS: tuple[str, ...] = tuple(SECTOR_ETFS[sector] for sector in SECTORS)
INDEX_ORDER: tuple[str, ...] = tuple(INDEX_SYMBOLS)
SYMBOLS: tuple[str, ...] = (
    *(company.symbol for company in COMPANIES),
    *ETF_SYMBOLS,
    TBILL_ETF,
    *INDEX_ORDER,
)
"""Every symbol the sim serves bars for, in the column order of the price matrices."""


def listings(real_indices: frozenset[str]) -> list[Listing]:
    """The universe as records: companies, then sector ETFs, the T-bill ETF and the indices.

    An index in ``real_indices`` has only real levels, so it alone is not marked simulated.
    """
    companies = [
        Listing(symbol=c.symbol, name=c.name, sector=c.sector, industry=c.industry, simulated=True)
        for c in COMPANIES
    ]
    etfs = [
        Listing(
            symbol=SECTOR_ETFS[s], name=f"{s.value} sector ETF", asset_type="etf", simulated=True
        )
        for s in SECTORS
    ]
    tbill = Listing(symbol=TBILL_ETF, name="0-3 month T-bill ETF", asset_type="etf", simulated=True)
    indices = [
        Listing(symbol=symbol, name=name, asset_type="index", simulated=symbol not in real_indices)
        for symbol, name in INDEX_SYMBOLS.items()
    ]
    return [*companies, *etfs, tbill, *indices]


@dataclass(frozen=True)
class CompanyParams:
    """Per-company parameters drawn for one seed, each an array over ``COMPANIES``."""

    sector: np.ndarray  # index into SECTORS
    beta: np.ndarray
    idio_vol: np.ndarray
    gross_margin: np.ndarray
    operating_margin: np.ndarray
    asset_intensity: np.ndarray
    equity_ratio: np.ndarray
    debt_ratio: np.ndarray
    cash_ratio: np.ndarray
    pe: np.ndarray
    growth: np.ndarray
    revenue: np.ndarray  # annual revenue, USD, at the start of the books
    price: np.ndarray  # share price the day before the world starts
    turnover: np.ndarray  # fraction of shares traded on an ordinary day
    payout: np.ndarray  # fraction of positive earnings paid as dividends
    report_lag: np.ndarray  # days from quarter end to the earnings report


_REVENUE_MEDIAN = 8e9  # USD a year: a mid-cap
_REVENUE_SPREAD = 0.9  # log-normal sigma: from ~1bn to ~50bn
_PRICE_MEDIAN = 60.0  # USD a share
_PRICE_SPREAD = 0.6  # log-normal sigma: prices from ~15 to ~250
_MARGIN_SPREAD = 0.15  # relative spread of margins and balance-sheet ratios around the profile
_MAX_OPERATING_SHARE = 0.8  # operating income is at most this share of gross profit


def draw_params(rng: np.random.Generator) -> CompanyParams:
    """Each company's parameters: its sector's profile, perturbed by the seed."""
    profiles = [PROFILES[c.sector] for c in COMPANIES]
    n = len(COMPANIES)

    def around(field: str, spread: float = _MARGIN_SPREAD) -> np.ndarray:
        centre = np.array([getattr(p, field) for p in profiles])
        return centre * np.exp(rng.normal(0.0, spread, n))

    gross_margin = np.clip(around("gross_margin"), 0.15, 0.95)
    return CompanyParams(
        sector=np.array([SECTORS.index(c.sector) for c in COMPANIES]),
        beta=np.clip(around("beta", 0.2), 0.3, 2.0),
        idio_vol=around("idio_vol", 0.2),
        gross_margin=gross_margin,
        # Operating costs come out of gross profit, so the operating margin must stay below it.
        operating_margin=np.minimum(
            around("operating_margin"), _MAX_OPERATING_SHARE * gross_margin
        ),
        asset_intensity=around("asset_intensity"),
        equity_ratio=np.clip(around("equity_ratio"), 0.08, 0.6),
        debt_ratio=np.clip(around("debt_ratio"), 0.05, 0.5),
        cash_ratio=around("cash_ratio"),
        pe=around("pe", 0.2),
        growth=around("growth", 0.4),
        revenue=_REVENUE_MEDIAN * np.exp(rng.normal(0.0, _REVENUE_SPREAD, n)),
        price=_PRICE_MEDIAN * np.exp(rng.normal(0.0, _PRICE_SPREAD, n)),
        turnover=rng.uniform(0.003, 0.012, n),
        payout=rng.uniform(0.0, 0.6, n),
        report_lag=rng.integers(21, 41, n),
    )
