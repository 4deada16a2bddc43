"""quantdesk: market data, pure domain code (no Temporal imports).

- ``bars``: the ``Bar`` record, ``Timeframe``, ``validate_bars`` and frame helpers;
  pandas-free at import, so workflow code can use the contract types.
- ``bar_source``: the ``BarSource`` interface (one checked ``read``, a ``BarQuery``).
- ``sources``: ``BundledSource``, ``CsvSource``, ``YFinanceSource`` and
  ``open_source(name, **options)``.
- ``files``, ``resample``, ``series``, ``yahoo``: what the sources are built from.
- ``data/``: the bundled OHLCV files and their ``PROVENANCE.md``.
"""
