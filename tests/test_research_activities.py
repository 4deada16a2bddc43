"""Resolving the analysis time when a run names none."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from temporalio.exceptions import ApplicationError

from activities.research import ResearchActivities, ResolveAsOfRequest
from shared.config import Settings, load_settings


@pytest.fixture
def research(tmp_path: object) -> ResearchActivities:
    settings: Settings = load_settings(data_dir=tmp_path)
    return ResearchActivities(settings)


@pytest.mark.parametrize(
    ("symbol", "latest"),
    [("GOOG", datetime(2013, 3, 1, tzinfo=UTC)), ("QBTX", datetime(2018, 12, 31, tzinfo=UTC))],
)
def test_no_as_of_means_the_last_bar_of_data_that_ended_in_the_past(
    research: ResearchActivities, symbol: str, latest: datetime
) -> None:
    assert research.resolve_as_of(ResolveAsOfRequest(symbol=symbol)).as_of == latest


def test_an_unknown_symbol_fails_once_naming_it(research: ResearchActivities) -> None:
    with pytest.raises(ApplicationError) as caught:
        research.resolve_as_of(ResolveAsOfRequest(symbol="NOPE"))

    assert caught.value.non_retryable and "`symbol`" in caught.value.message


@pytest.mark.parametrize(
    ("symbol", "not_after", "latest"),
    [
        ("GOOG", datetime(2010, 6, 2, 19, 30, tzinfo=UTC), datetime(2010, 6, 2, tzinfo=UTC)),
        ("GOOG", datetime(2010, 6, 5, 12, 0, tzinfo=UTC), datetime(2010, 6, 4, tzinfo=UTC)),
        ("QBTX", datetime(2012, 6, 2, tzinfo=UTC), datetime(2012, 6, 1, tzinfo=UTC)),
        ("GOOG", datetime(2030, 1, 1, tzinfo=UTC), datetime(2013, 3, 1, tzinfo=UTC)),
    ],
)
def test_a_scheduled_time_bounds_the_latest_bar(
    research: ResearchActivities, symbol: str, not_after: datetime, latest: datetime
) -> None:
    resolved = research.resolve_as_of(ResolveAsOfRequest(symbol=symbol, not_after=not_after))

    assert resolved.as_of == latest
