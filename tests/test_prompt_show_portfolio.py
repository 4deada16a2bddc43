"""``quantdesk prompt show`` for the Portfolio's agents: the prompt printed is the one the
workflow's request carries for the inputs its run would build as of T (AutoRun's feed: the
offline Scan's shortlist with offline Pipeline decisions), for a fresh book or a book read
read-only from the project's database.

Data: the default routes over a local folder (bundled prices, the sim vendor for the rest),
as of 2012-06-01, no network, no Temporal server.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from client.prompt_preview import PromptRequest, preview
from shared.agents.portfolio.inputs import MacroInputs, PmInputs, ReviewInputs
from shared.agents.rehearsed import Rehearsed, render_rehearsed
from shared.config import Settings, load_settings
from shared.data.factory import build_router
from shared.errors import InvalidInput
from shared.llm.contracts import LlmChoice
from shared.portfolio.models import Side, TradeRequest
from shared.portfolio.store import PortfolioStore
from shared.tools.registry import ToolServices
from workflows.autorun import DEFAULT_CASH
from workflows.llm_calls import agent_request

AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
BOOK = "held"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return load_settings(data_dir=tmp_path_factory.mktemp("prompt-data"))


@pytest.fixture(scope="module")
def services(settings: Settings) -> ToolServices:
    return ToolServices(router=build_router(settings))


@pytest.fixture(scope="module")
def database(settings: Settings) -> Path:
    """The project's database with one book holding 10 SGOV (the sim T-bill ETF) and 5 XLK."""
    store = PortfolioStore.from_settings(settings)
    store.create(BOOK, Decimal(50_000))
    for index, symbol in enumerate(("XLK", "SGOV")):
        store.execute_trade(
            BOOK,
            TradeRequest(
                key=f"seed-{index}",
                symbol=symbol,
                side=Side.BUY,
                shares=5,
                price=Decimal("30"),
                fees=Decimal(0),
                executed_at=datetime(2012, 5, 1, tzinfo=UTC),
            ),
        )
    store.close()
    return Path(settings.resolved_database_url.removeprefix("sqlite:///"))


def _shown(
    agent: str, settings: Settings, services: ToolServices, book: str | None = None
) -> tuple[Rehearsed, str]:
    rehearsed = preview(PromptRequest(agent=agent, as_of=AS_OF, book=book), settings, services)
    return rehearsed, render_rehearsed(rehearsed)


def _assert_printed_as_requested(rehearsed: Rehearsed, shown: str) -> None:
    request = agent_request(rehearsed.spec, rehearsed.inputs, LlmChoice(), "preview.raw.txt")
    assert request.messages == rehearsed.messages()
    for message in request.messages:
        assert message.content in shown


@pytest.mark.parametrize("agent", ["macro_summarizer", "micro_summarizer", "book_manager"])
def test_a_fresh_books_prompt_is_the_request_over_autoruns_feed(
    agent: str, services: ToolServices, settings: Settings
) -> None:
    rehearsed, shown = _shown(agent, settings, services)

    _assert_printed_as_requested(rehearsed, shown)


def test_the_book_manager_weighs_a_fresh_book_and_the_offline_candidates(
    services: ToolServices, settings: Settings
) -> None:
    rehearsed, _ = _shown("book_manager", settings, services)
    macro, _ = _shown("macro_summarizer", settings, services)

    pm = rehearsed.inputs
    assert isinstance(pm, PmInputs) and isinstance(macro.inputs, MacroInputs)
    assert pm.book.cash == DEFAULT_CASH and pm.holdings == []
    assert macro.inputs.scan is not None
    decided = [c.candidate.ticker for c in pm.candidates if c.decision is not None]
    assert decided and all(c.decision.as_of == AS_OF for c in pm.candidates if c.decision)
    assert rehearsed.offline_upstream == ("macro_summarizer", "micro_summarizer")


def test_the_reviewer_reads_a_stored_book_without_writing_to_it(
    database: Path, services: ToolServices, settings: Settings
) -> None:
    before = hashlib.sha256(database.read_bytes()).hexdigest()

    rehearsed, shown = _shown("holdings_reviewer", settings, services, BOOK)

    _assert_printed_as_requested(rehearsed, shown)
    inputs = rehearsed.inputs
    assert isinstance(inputs, ReviewInputs)
    assert sorted(h.position.symbol for h in inputs.holdings) == ["SGOV", "XLK"]
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_a_fresh_book_has_no_review_to_show(services: ToolServices, settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="holds no positions"):
        _shown("holdings_reviewer", settings, services)
