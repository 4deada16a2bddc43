"""Watchlists in SQL, on SQLite and PostgreSQL: the order symbols were added in, and each
way a list could become ambiguous refused with its own message."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.errors import InvalidInput
from shared.watchlists.csv_file import read_symbols
from shared.watchlists.store import WatchlistStore


@pytest.fixture
def lists(database_url: str) -> WatchlistStore:
    store = WatchlistStore(database_url)
    store.create("tech", ["qbtx", " LMNW ", "CRSX"])
    return store


def test_a_watchlist_keeps_its_symbols_upper_case_in_the_order_added(
    lists: WatchlistStore,
) -> None:
    lists.add("tech", ["HXGR"])
    lists.remove("tech", ["LMNW"])
    lists.add("tech", ["LMNW"])

    assert lists.get("tech").symbols == ["QBTX", "CRSX", "HXGR", "LMNW"]
    assert [w.name for w in lists.watchlists()] == ["tech"]


def test_a_taken_name_an_unknown_one_and_a_bad_one_are_refused(lists: WatchlistStore) -> None:
    with pytest.raises(InvalidInput, match="`name`: a watchlist called 'tech' exists"):
        lists.create("tech", ["QBTX"])
    with pytest.raises(
        InvalidInput, match=r"`watchlist`: no watchlist called 'nope' \(there are: tech\)"
    ):
        lists.get("nope")
    with pytest.raises(InvalidInput, match="`name`: 'no spaces' is not a watchlist name"):
        lists.create("no spaces", ["QBTX"])
    assert [w.name for w in lists.watchlists()] == ["tech"]


def test_empty_lists_and_duplicates_get_their_own_messages(lists: WatchlistStore) -> None:
    with pytest.raises(InvalidInput, match="`symbols`: the list is empty"):
        lists.create("none", [])
    with pytest.raises(InvalidInput, match="`symbols`: listed more than once: QBTX"):
        lists.create("twice", ["QBTX", "qbtx"])
    with pytest.raises(InvalidInput, match="`symbols`: already on tech: CRSX"):
        lists.add("tech", ["HXGR", "CRSX"])
    with pytest.raises(InvalidInput, match="`symbols`: not on tech: HXGR"):
        lists.remove("tech", ["HXGR"])
    with pytest.raises(InvalidInput, match="would leave tech empty"):
        lists.remove("tech", ["QBTX", "LMNW", "CRSX"])
    assert lists.get("tech").symbols == ["QBTX", "LMNW", "CRSX"]  # nothing half-done


def test_a_deleted_watchlist_is_gone_and_its_name_free_again(lists: WatchlistStore) -> None:
    lists.delete("tech")

    assert lists.watchlists() == []
    assert lists.create("tech", ["QBTX"]).symbols == ["QBTX"]


def test_a_csv_gives_its_symbol_column_or_one_symbol_per_line(tmp_path: Path) -> None:
    table = tmp_path / "table.csv"
    table.write_text("name,Symbol\nQuantum,QBTX\n\nLumen,LMNW\n")
    lines = tmp_path / "lines.csv"
    lines.write_text("qbtx\nLMNW\n\n")

    assert read_symbols(table) == ["QBTX", "LMNW"]
    assert read_symbols(lines) == ["qbtx", "LMNW"]
    with pytest.raises(InvalidInput, match="`csv`: cannot read"):
        read_symbols(tmp_path / "missing.csv")
