"""An offline mirror of SEC EDGAR: the SEC's nightly bulk files in the data directory, so a
backtest over a thousand names reads files, not the API (and spends none of its quota).

The SEC publishes ``companyfacts.zip`` (one ``CIK##########.json`` per filer, as the
``companyfacts`` API answers it) and ``submissions.zip`` (the same for ``submissions``) under
``Archives/edgar/daily-index/``; ``files/company_tickers.json`` is the ticker list. `quantdesk
data sec-mirror` downloads the three into ``<data dir>/sec/``, each streamed to a temporary
file and renamed when whole, so a mirror is never half-written. The vendor then reads a
company's documents from the zips by name (no extraction: the facts unpack to tens of
gigabytes) and asks the API only for what the mirror lacks, such as a company listed after
it was made, and the Form 4 documents, which the bulk files do not hold.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from shared.config import SecSettings
from shared.errors import InvalidInput, NotConfigured, VendorFailure

MIRROR_DIR = "sec"
FILES: dict[str, str] = {
    "company_tickers.json": "files/company_tickers.json",
    "companyfacts.zip": "Archives/edgar/daily-index/xbrl/companyfacts.zip",
    "submissions.zip": "Archives/edgar/daily-index/bulkdata/submissions.zip",
}
"""Mirror file → its path under the SEC's www root."""
CHUNK = 1 << 20


class SecMirror:
    """The mirror's files in ``folder``, read by document name; absent files read as None."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._zips: dict[str, zipfile.ZipFile] = {}

    def tickers(self) -> Any | None:
        """The ticker list, as the SEC serves it."""
        path = self.folder / "company_tickers.json"
        return json.loads(path.read_text()) if path.exists() else None

    def facts(self, cik: int) -> Any | None:
        """A filer's company facts."""
        return self._member("companyfacts.zip", f"CIK{cik:010d}.json")

    def submissions(self, cik: int) -> Any | None:
        """A filer's submissions."""
        return self._member("submissions.zip", f"CIK{cik:010d}.json")

    def _member(self, archive: str, name: str) -> Any | None:
        opened = self._zips.get(archive)
        if opened is None:
            path = self.folder / archive
            if not path.exists():
                return None
            opened = self._zips[archive] = zipfile.ZipFile(path)
        try:
            return json.loads(opened.read(name))
        except KeyError:
            return None


def download_mirror(
    settings: SecSettings, folder: Path, say: Callable[[str], None] = lambda line: None
) -> dict[str, int]:
    """The SEC's bulk files into ``folder``: name → bytes. Each is whole or not there."""
    if not settings.identity or "@" not in settings.identity:
        raise NotConfigured(
            "the SEC refuses downloads that name no contact", fix="Set EDGAR_IDENTITY first."
        )
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {}
    headers = {"User-Agent": settings.identity}
    with httpx.Client(headers=headers, timeout=settings.timeout_seconds) as http:
        for name, path in FILES.items():
            url = f"{settings.www_url.rstrip('/')}/{path}"
            say(f"downloading {url}")
            sizes[name] = _stream(http, url, folder / name, zipped=name.endswith(".zip"))
            say(f"{name}: {sizes[name]:,} bytes")
    return sizes


def copy_into_mirror(files: list[Path], folder: Path) -> dict[str, int]:
    """Bulk files the user downloaded already, copied in under their own names."""
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for given in files:
        if given.name not in FILES:
            raise InvalidInput(
                "files",
                f"{given.name} is not one of the mirror's files",
                fix=f"Give {', '.join(FILES)}.",
            )
        if given.name.endswith(".zip") and not zipfile.is_zipfile(given):
            raise InvalidInput("files", f"{given} is not a zip file", fix="Download it again.")
        sizes[given.name] = _write_whole(folder / given.name, partial(_copy, given), zipped=False)
    return sizes


def _stream(http: httpx.Client, url: str, target: Path, *, zipped: bool) -> int:
    try:
        with http.stream("GET", url) as response:
            if response.status_code != 200:
                raise VendorFailure(f"the SEC answered {response.status_code} for {url}")
            return _write_whole(
                target,
                lambda out: sum(out.write(chunk) for chunk in response.iter_bytes(CHUNK)),
                zipped=zipped,
            )
    except httpx.HTTPError as error:
        raise VendorFailure(f"the SEC's {url} could not be read ({type(error).__name__})") from None


def _copy(source: Path, out: Any) -> int:
    with source.open("rb") as given:
        return sum(out.write(chunk) for chunk in iter(lambda: given.read(CHUNK), b""))


def _write_whole(target: Path, write: Callable[[Any], int], *, zipped: bool) -> int:
    """``write`` into a temporary file beside ``target``, renamed onto it once complete (and,
    when ``zipped``, once it reads as a zip: a truncated download never replaces a mirror)."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            size = write(out)
        if zipped and not zipfile.is_zipfile(temporary):
            raise VendorFailure(f"{target.name} did not arrive whole (not a readable zip)")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return size
