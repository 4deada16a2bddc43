"""The social recorder's step: one pass of ``record_for_desk`` on a tools worker, for the
``RecordSocial`` flow (which a schedule runs every few minutes)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.services import Services
from shared.data.social_record import DEFAULT_LIMIT, RecordReport, record_for_desk
from shared.queues import TOOLS_QUEUE
from shared.watchlists.symbols import symbol_list


class RecordSocialRequest(BaseModel):
    """Whose posts to keep: a watchlist's names, or the symbols themselves."""

    watchlist: str | None = None
    symbols: list[str] | None = None
    days: int = Field(7, ge=1, le=30, description="keep posts of the last days")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=800, description="posts read a symbol")


class SocialActivities(Services):
    """Recording what sources of the present serve, for runs as of later times."""

    @activity_on(TOOLS_QUEUE, "record_social")
    def record_social(self, request: RecordSocialRequest) -> RecordReport:
        """Store each symbol's new posts in the tools host's data dir; a symbol that could not
        be read is reported in the answer, not raised (the others are kept), and the next
        pass asks again. Safe to retry: a post is stored once."""
        with as_temporal_failures():
            if request.watchlist is not None:
                symbols = self.watchlists.get(request.watchlist).symbols
            else:
                symbols = symbol_list(request.symbols or [], "symbols")
            return record_for_desk(
                self.settings,
                symbols,
                window=timedelta(days=request.days),
                limit=request.limit,
            )
