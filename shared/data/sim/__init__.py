"""A seeded, deterministic simulated market: fictional companies on the real S&P 500's days.

``SimVendor(seed)`` serves every data kind from one generated world (see
``world``): prices driven by the real market factor plus sector, company and
event moves; earnings, statements, news, social posts, insider filings and
macro series, each visible only from the moment it became public.
"""

from shared.data.sim.vendor import SimVendor

__all__ = ["SimVendor"]
