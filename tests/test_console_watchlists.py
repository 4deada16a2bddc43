"""The console's Watchlists pages over HTTP: a real SQLite book and the sim data, the same
rules and messages as `quantdesk watchlist`, and an AutoRun's names checked on the Start
form before anything starts (so no Temporal is needed: a refused form never reaches it).
The browser round trip, a CSV uploaded and an AutoRun started on it, is in test_console.py.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest_asyncio

from console.app import create_app
from shared.config import load_settings
from shared.watchlists.store import WatchlistStore

CSV = b"\xef\xbb\xbfsymbol,name\nQBTX,Quantum\n\nLMNW,Lumen\n"


@pytest_asyncio.fixture
async def console(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = load_settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'q.db'}")
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as http:
        yield http


def said(answer: httpx.Response) -> str:
    """The message a redirected page shows."""
    found = re.search(r'id="said">([^<]*)<', html.unescape(answer.text))
    return found.group(1) if found else ""


def problem(answer: httpx.Response, field: str) -> str:
    """The problem shown next to ``field`` (a 422: nothing was written)."""
    assert answer.status_code == 422, answer.text[-2000:]
    found = re.search(rf'id="problem-{field}">([^<]*)<', html.unescape(answer.text))
    assert found, f"no problem next to {field}: {html.unescape(answer.text)[-2000:]}"
    return found.group(1)


def symbols_on(page: httpx.Response) -> list[str]:
    table = html.unescape(page.text).split('id="symbols"')[1].split("</table>")[0]
    return re.findall(r'name="symbols" value="([^"]+)"', table)


async def test_a_watchlist_is_created_from_typed_names_and_a_csv_changed_and_deleted(
    console: httpx.AsyncClient,
) -> None:
    created = await console.post(
        "/watchlists",
        data={"name": "tech", "symbols": "crsx"},
        files={"csv": ("names.csv", CSV, "text/csv")},
        follow_redirects=True,
    )
    assert str(created.url).startswith("http://console/watchlists/tech?")
    assert said(created) == "created watchlist tech with 3 symbol(s)"
    assert symbols_on(created) == ["CRSX", "QBTX", "LMNW"]
    assert 'href="/start/autorun?watchlist=tech"' in created.text

    added = await console.post(
        "/watchlists/tech/add", data={"symbols": "HXGR,\nNVLQ"}, follow_redirects=True
    )
    removed = await console.post(
        "/watchlists/tech/remove", data={"symbols": ["LMNW", "CRSX"]}, follow_redirects=True
    )
    listed = html.unescape((await console.get("/watchlists")).text)

    assert said(added) == "added: tech now follows 5 symbol(s)"
    assert said(removed) == "removed: tech now follows 3 symbol(s)"
    assert symbols_on(removed) == ["QBTX", "HXGR", "NVLQ"]
    assert '<a href="/watchlists/tech">tech</a></td><td class="num">3</td>' in listed
    deleted = await console.post("/watchlists/tech/delete", follow_redirects=True)
    assert said(deleted) == "deleted watchlist tech" and 'id="no-watchlists"' in deleted.text
    gone = await console.get("/watchlists/tech")
    assert gone.status_code == 404 and "no watchlist called 'tech'" in html.unescape(gone.text)


async def test_each_bad_input_gets_its_message_next_to_its_field(
    console: httpx.AsyncClient, tmp_path: Path
) -> None:
    async def create(symbols: str, name: str = "tech", csv: bytes | None = None) -> httpx.Response:
        files = {"csv": ("names.csv", csv, "text/csv")} if csv is not None else None
        return await console.post(
            "/watchlists", data={"name": name, "symbols": symbols}, files=files
        )

    unknown = await create("QBTX nopeq, ZZZQ")
    assert "`symbols`: unknown symbols: NOPEQ, ZZZQ" in problem(unknown, "symbols")
    assert "QBTX nopeq, ZZZQ" in unknown.text  # what was typed stays in the box
    assert "`symbols`: none given" in problem(await create(""), "symbols")
    assert "`symbols`: the list is empty" in problem(await create("", csv=b"symbol\n"), "symbols")
    twice = problem(await create("QBTX LMNW qbtx"), "symbols")
    assert "`symbols`: listed more than once: QBTX" in twice
    assert "names.csv holds no symbols" in problem(await create("", csv=b"\n\n"), "csv")
    assert "names.csv is not UTF-8" in problem(await create("", csv=b"\xff\xfe\x00Q"), "csv")
    huge = await create("", csv=b"QBTX\n" * 250_000)
    assert "names.csv is larger than 1,000,000 bytes" in problem(huge, "csv")
    assert "is not a watchlist name" in problem(await create("QBTX", name="tech desk"), "name")
    await create("QBTX LMNW")
    assert "a watchlist called 'tech' exists" in problem(await create("CRSX"), "name")

    again = await console.post("/watchlists/tech/add", data={"symbols": "CRSX qbtx ZZZQ"})
    assert "unknown symbol: ZZZQ" in problem(again, "symbols")
    held = await console.post("/watchlists/tech/add", data={"symbols": "CRSX qbtx"})
    assert "already on tech: QBTX" in problem(held, "symbols")
    missing = await console.post("/watchlists/tech/remove", data={"symbols": "CRSX"})
    assert "not on tech: CRSX" in problem(missing, "remove")
    emptied = await console.post("/watchlists/tech/remove", data={"symbols": ["QBTX", "LMNW"]})
    assert "removing every symbol would leave tech empty" in problem(emptied, "remove")
    nowhere = await console.post("/watchlists/nowhere/add", data={"symbols": "QBTX"})
    assert nowhere.status_code == 404 and "there are: tech" in html.unescape(nowhere.text)

    store = WatchlistStore.from_settings(
        load_settings(database_url=f"sqlite:///{tmp_path / 'q.db'}")
    )
    assert [(w.name, w.symbols) for w in store.watchlists()] == [("tech", ["QBTX", "LMNW"])]


async def test_an_autorun_is_started_on_a_watchlist_whose_names_are_checked_first(
    console: httpx.AsyncClient,
) -> None:
    await console.post("/watchlists", data={"name": "tech", "symbols": "QBTX LMNW"})
    await console.post("/watchlists", data={"name": "energy", "symbols": "CRSX"})

    form = html.unescape((await console.get("/start/autorun?watchlist=tech")).text)
    menu = form.split('<select id="f-watchlist" name="watchlist">')[1].split("</select>")[0]
    assert re.findall(r"<option[^>]*>(\w+)</option>", menu) == ["energy", "tech"]
    assert "<option selected>tech</option>" in menu
    assert 'id="f-symbols" type="text" name="symbols"' in form  # a list of words: one box

    unknown = await console.post("/start/autorun", data={"symbols": "QBTX, nopeq ZZZQ"})
    assert "`symbols`: unknown symbols: NOPEQ, ZZZQ" in problem(unknown, "symbols")
    gone = await console.post("/start/autorun", data={"watchlist": "nowhere"})
    assert "no watchlist called 'nowhere' (there are: energy, tech)" in problem(gone, "watchlist")
