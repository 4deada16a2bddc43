"""Recording social posts now, so that runs as of later times can read them as they were.

No free source answers "what was said about AAPL on 2024-03-28": StockTwits serves a symbol's
latest messages only. So the desk keeps them itself. ``record_social`` reads each symbol's
present posts from a source (``StocktwitsVendor``) and appends those not stored yet to the
local vendor's ``social.jsonl``. A post keeps its own ``posted_at`` (it was public from then),
so the local vendor shows a run as of any later time exactly the posts out by then, and none
after (``shared.data.local``). What was never recorded stays unknown: a run as of a time
before recording began reads "no data", not a guess.

Storage rules:

- a post is stored once per symbol (``(symbol, id)``; a message about two symbols is stored
  in each one's stream, as the source served it);
- the file is never half-written: the new file (the old bytes, untouched, then the new
  lines) goes to a temporary file in the same directory, replacing the old one by a rename;
  a reader sees the old file or the new one, whole;
- two recorders (an overlapping cron run) take turns: each holds an exclusive lock
  (``fcntl.flock`` on ``<store>.lock``) from reading the stored ids to the rename, so neither
  stores a post the other just stored, nor loses the other's lines;
- a symbol the source cannot read now (throttled, failing, unknown) is reported with the
  source's words and the others are still recorded.

Posts are read before the lock is taken (the network is slow; the lock is held only for the
file). A pass reads at most ``limit`` posts a symbol: when all of them are newer than the
newest stored, posts between may have been missed (``may_have_missed``): record more often,
or read more a pass.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import AwareDatetime, BaseModel, Field

from shared.data.bundled import check_as_of
from shared.data.contracts import DataVendor, SocialPost
from shared.data.local_files import jsonl_parser
from shared.errors import InvalidInput, NoData, QuantdeskError

if TYPE_CHECKING:
    from shared.config import Settings

DEFAULT_WINDOW = timedelta(days=7)
"""How far back a pass keeps posts: a first pass on a quiet symbol stores its last week."""
DEFAULT_LIMIT = 30
"""Posts read a symbol per pass: one page of StockTwits' stream, one request."""

NEW_FILE_MODE = 0o644
"""A new store's permissions (a temporary file is created owner-only); an existing one keeps
its own."""

Outcome = Literal["recorded", "no data", "failed"]


class SymbolRecord(BaseModel):
    """What one pass did for one symbol."""

    symbol: str
    outcome: Outcome = Field(
        description="recorded (even if nothing was new); no data (the source had none in the "
        "window, or does not know the symbol); failed (throttled, failing, refused)"
    )
    fetched: int = Field(0, ge=0, description="posts the source served in the window")
    new: int = Field(0, ge=0, description="of them, posts not stored before: appended")
    newest: AwareDatetime | None = Field(None, description="posted_at of the newest post served")
    may_have_missed: bool = Field(
        False,
        description="every post served was newer than the newest stored and the read was "
        "full: posts between them may never have been read",
    )
    said: str | None = Field(None, description="what the source said instead of posts")


class RecordReport(BaseModel):
    """One recording pass: where, when, and each symbol's outcome in the order given."""

    store: Path
    at: AwareDatetime
    symbols: list[SymbolRecord]

    @property
    def failed(self) -> list[str]:
        """The symbols whose posts could not be read this pass."""
        return [record.symbol for record in self.symbols if record.outcome == "failed"]

    @property
    def new(self) -> int:
        """Posts appended in all."""
        return sum(record.new for record in self.symbols)


def record_social(
    source: DataVendor,
    symbols: list[str],
    store: Path,
    now: datetime,
    *,
    window: timedelta = DEFAULT_WINDOW,
    limit: int = DEFAULT_LIMIT,
) -> RecordReport:
    """Read each symbol's posts of ``(now - window, now]`` from ``source`` and append to
    ``store`` (a ``social.jsonl``) those not stored yet; what each symbol gave."""
    at = check_as_of(now)
    if not symbols:
        raise InvalidInput("symbols", "none given", fix="Name at least one symbol.")
    order = list(dict.fromkeys(s.strip().upper() for s in symbols))
    read: dict[str, list[SocialPost]] = {}
    outcomes: dict[str, SymbolRecord] = {}
    for symbol in order:
        try:
            read[symbol] = source.social(symbol, at, window, limit)
        except NoData as error:
            outcomes[symbol] = SymbolRecord(symbol=symbol, outcome="no data", said=str(error))
        except QuantdeskError as error:
            outcomes[symbol] = SymbolRecord(symbol=symbol, outcome="failed", said=str(error))
    with _locked(store):
        stored = _stored(store)
        seen = {(post.symbol.upper(), post.id) for post in stored}
        fresh = {symbol: _fresh(posts, seen) for symbol, posts in read.items()}
        _append(store, [post for posts in fresh.values() for post in posts])
    newest_stored = _newest_by_symbol(stored)
    for symbol, posts in read.items():
        outcomes[symbol] = SymbolRecord(
            symbol=symbol,
            outcome="recorded",
            fetched=len(posts),
            new=len(fresh[symbol]),
            newest=max((p.posted_at for p in posts), default=None),
            may_have_missed=len(posts) >= limit
            and symbol in newest_stored
            and min(p.posted_at for p in posts) > newest_stored[symbol],
        )
    return RecordReport(store=store, at=at, symbols=[outcomes[s] for s in order])


def _fresh(posts: list[SocialPost], seen: set[tuple[str, str]]) -> list[SocialPost]:
    """The posts whose (symbol, id) is not ``seen``, each once, oldest first."""
    fresh: dict[tuple[str, str], SocialPost] = {}
    for post in sorted(posts, key=lambda p: (p.posted_at, p.id)):
        key = (post.symbol.upper(), post.id)
        if key not in seen:
            fresh.setdefault(key, post)
    return list(fresh.values())


def _newest_by_symbol(posts: list[SocialPost]) -> dict[str, datetime]:
    """The latest ``posted_at`` of each symbol's posts."""
    newest: dict[str, datetime] = {}
    for post in posts:
        key = post.symbol.upper()
        newest[key] = max(post.posted_at, newest.get(key, post.posted_at))
    return newest


def _stored(store: Path) -> list[SocialPost]:
    """The posts in ``store`` (none when it does not exist yet); a bad line fails the pass,
    naming the file and the line, before anything is written."""
    return jsonl_parser(SocialPost)(store) if store.exists() else []


@contextmanager
def _locked(store: Path) -> Iterator[None]:
    """Hold ``<store>.lock`` exclusively: one recorder at a time reads ids, then writes."""
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store.with_name(store.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _append(store: Path, posts: list[SocialPost]) -> None:
    """``store`` with ``posts`` appended, replaced whole by a rename; untouched when none."""
    if not posts:
        return
    old = store.read_bytes() if store.exists() else b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    lines = "".join(post.model_dump_json() + "\n" for post in posts).encode()
    handle, temporary = tempfile.mkstemp(dir=store.parent, prefix=f".{store.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(old + lines)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, store.stat().st_mode if store.exists() else NEW_FILE_MODE)
        os.replace(temporary, store)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def record_for_desk(
    settings: Settings,
    symbols: list[str],
    *,
    window: timedelta = DEFAULT_WINDOW,
    limit: int = DEFAULT_LIMIT,
) -> RecordReport:
    """One pass as the desk makes it (``quantdesk data record social``, the ``RecordSocial``
    flow): StockTwits, its requests in the desk's quota, into the local vendor's
    ``social.jsonl`` under the data dir."""
    from shared.data.factory import LOCAL_DATA_DIR, build_vendor
    from shared.data.local import SOCIAL_FILE

    return record_social(
        build_vendor("stocktwits", settings),
        symbols,
        settings.data_dir / LOCAL_DATA_DIR / SOCIAL_FILE,
        datetime.now(UTC),
        window=window,
        limit=limit,
    )
