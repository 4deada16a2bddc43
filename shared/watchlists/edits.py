"""The watchlist commands' rules, one place for `quantdesk watchlist` and the console's page.

Symbols are checked against the data before anything is written (every unknown one named
at once, by ``universe.known_symbols``); the store then refuses a taken name, a symbol
already on the list, removing one that is not there, or leaving a list empty. Removing
takes any symbol, known to the data or not: a delisted name must still be able to go.
The database and the data router are opened on first use and kept (the console keeps one ``WatchlistEdits``).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import Any

from shared.config import Settings
from shared.data.router import DataRouter
from shared.watchlists.store import Watchlist, WatchlistStore
from shared.watchlists.symbols import symbol_list
from shared.watchlists.universe import known_symbols


class WatchlistEdits:
    """Create, change, read and delete watchlists, with every rule the CLI applies."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def store(self) -> WatchlistStore:
        """The watchlists' tables (opened when first needed)."""
        return WatchlistStore.from_settings(self.settings)

    @cached_property
    def router(self) -> DataRouter:
        """The data layer that knows which symbols exist (built when first needed)."""
        from shared.data.factory import build_router

        return build_router(self.settings)

    def checked(self, symbols: Iterable[str], field: str = "symbols") -> list[str]:
        """The symbols normalized, each known to the data; every unknown one named (as a
        problem of ``field``)."""
        return known_symbols(self.router, symbols, field)

    def create(self, name: str, symbols: Iterable[str]) -> Watchlist:
        """A new watchlist of known symbols."""
        return self.store.create(name, self.checked(symbols))

    def add(self, name: str, symbols: Iterable[str]) -> Watchlist:
        """Known symbols appended to the watchlist (an unknown watchlist is named before the
        data are read)."""
        self.store.get(name)
        return self.store.add(name, self.checked(symbols))

    def remove(self, name: str, symbols: Iterable[str]) -> Watchlist:
        """The watchlist without ``symbols``."""
        return self.store.remove(name, symbol_list(symbols))

    def check_autorun_names(self, payload: dict[str, Any]) -> None:
        """Refuse an AutoRun input's unknown watchlist, or unknown symbols (each named),
        before the run starts; the run checks again (the data or the list may change
        before a schedule fires)."""
        if payload.get("watchlist") is not None:
            self.checked(self.store.get(payload["watchlist"]).symbols, "watchlist")
        elif payload.get("symbols") is not None:
            self.checked(payload["symbols"])
