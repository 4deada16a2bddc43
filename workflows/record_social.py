"""``RecordSocial``: keep what StockTwits says now about a watchlist's names, so later runs read
the posts as of their own time (no free source serves a past day's posts).

Meant for a schedule: ``quantdesk schedule create social-core --flow record-social --cron
"*/15 13-21 * * 1-5" --input '{"watchlist": "core"}'``. The posts go to the tools worker's
data dir (the local vendor's ``social.jsonl``), which is where the tools workers read them.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, model_validator
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.social import RecordSocialRequest, SocialActivities
    from shared.data.social_record import DEFAULT_LIMIT, RecordReport
    from shared.portfolio.models import NAME_PATTERN
    from workflows.activity_calls import run_activity
    from workflows.inputs import RunInput
    from workflows.retries import durable
    from workflows.visibility import tag_run

RECORD_START_TO_CLOSE = timedelta(minutes=15)
"""A pass of a few dozen names at StockTwits' pace, each request waiting its turn."""


class RecordSocialInput(RunInput):
    """Whose posts to keep: exactly one of a watchlist or symbols."""

    watchlist: str | None = Field(None, pattern=NAME_PATTERN, description="a watchlist's name")
    symbols: list[str] | None = Field(None, min_length=1, description='e.g. ["AAPL"]')
    days: int = Field(7, ge=1, le=30, description="keep posts of the last days")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=800, description="posts read a symbol")

    @model_validator(mode="after")
    def _one_source(self) -> RecordSocialInput:
        if (self.watchlist is None) == (self.symbols is None):
            raise ValueError("give exactly one of watchlist or symbols")
        return self


@workflow.defn(name="RecordSocial")
class RecordSocialWorkflow:
    """One recording pass, its outcome in the run's details."""

    @workflow.run
    async def run(self, args: RecordSocialInput) -> RecordReport:
        """Each symbol's new posts stored; the report names those that could not be read."""
        tag_run("RecordSocial")
        report: RecordReport = await run_activity(
            SocialActivities.record_social,
            RecordSocialRequest(**args.model_dump()),
            **durable(RECORD_START_TO_CLOSE),
            summary=f"record social posts of {args.watchlist or ', '.join(args.symbols or [])}",
        )
        failed = f"; could not read {', '.join(report.failed)}" if report.failed else ""
        workflow.set_current_details(
            f"**{report.new} new post(s)** of {len(report.symbols)} symbol(s){failed}"
        )
        return report
