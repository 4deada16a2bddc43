"""`quantdesk watchlist ...`: the commands' cores with a recording console over a SQLite
database and the sim data (the commands themselves leave through ``os._exit``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import cli.watchlist as cli_watchlist
from cli.watchlist import (
    add_to_watchlist,
    create_watchlist,
    delete_watchlist,
    given_symbols,
    list_watchlists,
    remove_from_watchlist,
    show_watchlist,
)
from shared.config import Settings, load_settings
from shared.errors import InvalidInput
from shared.watchlists.store import WatchlistStore
from tests.screens import recording_console


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'q.db'}")


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> Console:
    return recording_console(monkeypatch, cli_watchlist)


def test_a_watchlist_from_a_csv_is_created_shown_changed_listed_and_deleted(
    settings: Settings, shown: Console, tmp_path: Path
) -> None:
    names = tmp_path / "names.csv"
    names.write_text("symbol,name\nQBTX,Quantum\nLMNW,Lumen\n")

    create_watchlist(settings, "tech", given_symbols(["crsx"], names))
    add_to_watchlist(settings, "tech", given_symbols(["HXGR,NVLQ"], None))
    remove_from_watchlist(settings, "tech", ["LMNW"])
    show_watchlist(settings, "tech")
    list_watchlists(settings)
    delete_watchlist(settings, "tech")

    text = shown.export_text()
    assert "created watchlist tech with 3 symbol(s)" in text
    assert "tech now follows 5 symbol(s)" in text and "tech now follows 4 symbol(s)" in text
    assert "CRSX, QBTX, HXGR, NVLQ" in text  # the list's order, as `list` shows it
    assert "deleted watchlist tech" in text
    assert WatchlistStore.from_settings(settings).watchlists() == []


def test_unknown_symbols_are_refused_each_named_before_anything_is_written(
    settings: Settings, shown: Console
) -> None:
    with pytest.raises(InvalidInput, match="`symbols`: unknown symbols: NOPEQ, ZZZQ"):
        create_watchlist(settings, "tech", ["QBTX", "nopeq", "ZZZQ"])
    create_watchlist(settings, "tech", ["QBTX"])
    with pytest.raises(InvalidInput, match="`symbols`: unknown symbol: ZZZQ"):
        add_to_watchlist(settings, "tech", ["LMNW", "ZZZQ"])

    assert WatchlistStore.from_settings(settings).get("tech").symbols == ["QBTX"]


def test_bad_lists_get_their_own_messages(settings: Settings, shown: Console) -> None:
    with pytest.raises(InvalidInput, match="`symbols`: none given"):
        given_symbols(None, None)
    with pytest.raises(InvalidInput, match="`symbols`: the list is empty"):
        create_watchlist(settings, "tech", [])
    with pytest.raises(InvalidInput, match="`symbols`: listed more than once: QBTX"):
        create_watchlist(settings, "tech", ["QBTX", "LMNW", "qbtx"])
    with pytest.raises(InvalidInput, match="`watchlist`: no watchlist called 'tech'"):
        add_to_watchlist(settings, "tech", ["QBTX"])
