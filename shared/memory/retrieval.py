"""BM25 over past situations, with scores that can be compared to a threshold.

Raw BM25 grows with the query's length and the corpus's statistics, so a bare
number says nothing about whether a memory is relevant. Scores are normalised
like a cosine: BM25(query, memory) / sqrt(self(query) * self(memory)), where
self(x) is the BM25 that x earns against a document identical to itself under
the same corpus statistics. An identical situation scores 1.0 (larger values,
possible when term-frequency saturation favours a short memory, are clipped);
a memory sharing one common word earns that word's small share of both sides.
Query terms the corpus has never seen weigh in at the highest idf: a situation
unlike anything remembered must not look like a match for the one term it shares.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

# Normalised scores below this are noise. Calibrated on short market situations: the
# situation sharing the salient terms scores 0.4-0.6, one sharing a single common word
# ("market", "earnings") 0.04-0.10 in a multi-word query, and about 0.16 only when that
# word is the whole query.
MIN_RELEVANCE = 0.15
# Okapi defaults (Robertson; also rank_bm25's): term-frequency saturation, length normalisation.
BM25_K1 = 1.5
BM25_B = 0.75

# Words, numbers and dotted tickers: "brk.b", "3.5", "rsi", "2024".
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[a-z0-9]+)*")
# English function words: they match everywhere and say nothing about a market. Direction,
# comparison, negation and timing words (up, below, not, more, after...) are kept on purpose.
STOP_WORDS = frozenset(
    """
    a about all am an and any are as at be because been being both but by can could did do does
    doing each for from had has have having he her here hers herself him himself his how i if in
    into is it its itself just me my myself now of on once only or other our ours ourselves own
    same she should so some such than that the their theirs them themselves then there these
    they this those through to too very was we were what when where which while who whom why
    will with would you your yours yourself yourselves also may might must shall us via per
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def tokenise(text: str) -> list[str]:
    """Lower-case alphanumeric tokens, stop-words dropped, numbers and tickers kept."""
    return [token for token in _TOKEN.findall(text.lower()) if token not in STOP_WORDS]


class _LuceneIdfBM25(BM25Okapi):
    """Okapi BM25 with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)).

    rank_bm25's Okapi idf turns negative for a term in more than half of the
    documents, and its epsilon floor stays negative when every idf is (a corpus
    of one or two memories): the first lessons would score below zero and never
    be recalled. Lucene's idf is positive for every corpus size.
    """

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {term: self.term_idf(count) for term, count in nd.items()}

    def term_idf(self, document_frequency: int) -> float:
        """The idf of a term in ``document_frequency`` documents; 0 gives an unseen term's."""
        n = document_frequency
        return math.log(1.0 + (self.corpus_size - n + 0.5) / (n + 0.5))


class SituationIndex:
    """The BM25 index of one role's candidate situations, already tokenised."""

    def __init__(self, documents: Sequence[Sequence[str]]) -> None:
        if not documents or not all(documents):
            raise ValueError("index needs at least one document and no empty ones")
        self._bm25 = _LuceneIdfBM25([list(d) for d in documents], k1=BM25_K1, b=BM25_B)
        self._own_scores = [self._self_similarity(document) for document in documents]

    def scores(self, query: Sequence[str]) -> list[float]:
        """One score in [0, 1] per document, in the order given; all 0 for an empty query."""
        if not query:
            return [0.0] * len(self._own_scores)
        raw = self._bm25.get_scores(list(dict.fromkeys(query)))
        own = self._self_similarity(query)
        return [
            min(1.0, float(score) / math.sqrt(own * document))
            for score, document in zip(raw, self._own_scores, strict=True)
        ]

    def _self_similarity(self, tokens: Sequence[str]) -> float:
        """BM25 of the distinct ``tokens`` against a document made of them, in this corpus."""
        bm25 = self._bm25
        length_norm = 1.0 - bm25.b + bm25.b * len(tokens) / bm25.avgdl
        total = 0.0
        for term, tf in Counter(tokens).items():
            idf = bm25.idf.get(term, bm25.term_idf(0))
            total += idf * tf * (bm25.k1 + 1.0) / (tf + bm25.k1 * length_norm)
        return total
