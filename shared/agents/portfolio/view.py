"""How many candidates the Portfolio's agents read, and in what form: a bounded view.

A desk that follows a watchlist hands the Portfolio a hundred candidates or more;
listing each in full would grow the PM's prompt past a small model's window (and
dilute a large one's attention). So the ranked candidates are read in three tiers:

- **in full** (the top ``detail``): the table row with close, score, conviction,
  thesis and Pipeline decision, why it ranks so, and (for the micro summarizer)
  the Pipeline's summary: about ``DETAIL_TOKENS`` each, the cost of the micro
  summarizer's prompt, the larger of the two readers';
- **on the bench** (the next ``bench``): one line each, rank, ticker, sector, score
  and Pipeline rating, about ``BENCH_TOKENS`` each: the PM knows they exist;
- **beyond**: one sentence that counts them by rating.

The report lists every candidate with its fate (``fates``), so nothing left out of
the prompt is left out of the record.

The sizes follow the context window the provider's registry row plans prompts for
(the worker's setting may differ; the chat activity trims to that one as a last
resort): the candidates get ``CANDIDATE_SHARE`` of what the window leaves beside the
reply, the bench ``BENCH_SHARE`` of it. A window the row calls large (cloud models,
100k tokens and more) is held to the caps: ``MAX_DETAIL`` is the default book's
15 positions plus a third for names the limits or cash turn away (more in full
only dilutes the PM's attention), ``MAX_BENCH`` what a person scans in a glance.
At the llama.cpp row's 4,096 tokens that is 3 in full and 13 on the bench; at 32k
and above, 20 and 20.

Measured with ``estimated_tokens`` on a book of twelve holdings and Pipeline
summaries at their clip (tests/test_portfolio_view.py), the PM's prompt at 12 / 20 /
100 / 500 candidates: large window 2,664 / 3,160 / 4,247 / 4,315 tokens (the 100's
top twenty are all Buy-rated, with targets: longer rows); 4,096 window 2,339 / 2,460
/ 2,473 / 2,476, inside the 3,072 left beside the reply. The
prompt grows until the bench is full (40 candidates), then not at all.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shared.agents.pipeline.schemas import Rating
from shared.llm.providers import provider_spec

DETAIL_TOKENS = 450
"""A candidate in full, measured on the micro summarizer's prompt with a Pipeline summary
at its 1,500-character clip (table row, ranking reasons, decision line)."""
BENCH_TOKENS = 22
"""A bench line, measured: a table row of rank, ticker, sector, score and rating."""
REPLY_TOKENS = 1_024
"""What a planned window keeps free for the reply (the registry's default reserve)."""
CANDIDATE_SHARE = 0.4
"""Of the prompt's room: the rest is the book, holdings, risk, review, summaries and schema."""
BENCH_SHARE = 0.1
MIN_DETAIL, MAX_DETAIL = 3, 20
MIN_BENCH, MAX_BENCH = 5, 20


class ViewSize(BaseModel):
    """How many candidates are read in full, and how many more in one line each."""

    detail: int = Field(ge=1, description="the top-K read in full")
    bench: int = Field(ge=0, description="the next ones, one line each")

    @classmethod
    def for_window(cls, tokens: int | None) -> ViewSize:
        """The view for a context window of ``tokens`` (None: large, the caps)."""
        if tokens is None:
            return cls(detail=MAX_DETAIL, bench=MAX_BENCH)
        room = max(tokens - REPLY_TOKENS, 0)
        detail = int(room * CANDIDATE_SHARE / DETAIL_TOKENS)
        bench = int(room * BENCH_SHARE / BENCH_TOKENS)
        return cls(
            detail=min(max(detail, MIN_DETAIL), MAX_DETAIL),
            bench=min(max(bench, MIN_BENCH), MAX_BENCH),
        )

    @classmethod
    def for_provider(cls, provider: str) -> ViewSize:
        """The view for the window ``provider``'s registry row plans prompts for."""
        return cls.for_window(provider_spec(provider).capabilities.context_tokens)


class BenchLine(BaseModel):
    """A candidate below the cut, in one line."""

    rank: int = Field(ge=1)
    ticker: str
    sector: str = Field(description="its sector, '-' when none is known")
    score: float
    rating: Rating | None = Field(description="its Pipeline rating; None: no decision")


class Beyond(BaseModel):
    """The candidates below the bench, counted by Pipeline rating."""

    first_rank: int = Field(ge=1)
    count: int = Field(ge=1)
    by_rating: dict[str, int] = Field(description="rating (or 'no decision') → how many")
