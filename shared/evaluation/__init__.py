"""quantdesk: scoring QuantAgent on benchmark windows, pure domain code (no Temporal imports).

QuantAgent's benchmark protocol: each window of bars is split into what the agent
sees (all but the last ``HELD_OUT`` bars) and the held-out bars, which only the
scorer reads; a LONG call is right when the close ``HELD_OUT`` bars later is above
the last close the agent saw.

- ``windows``: the ``Window`` record, the split and the truth;
- ``sources``: where windows come from: a directory in QuantAgent's benchmark
  layout, or windows cut from any bar source with a seed;
- ``baselines``: the rules the agent has to beat, fed the visible bars only;
- ``scoring``: accuracy, the Wilson interval and the per-asset table;
- ``paired``: McNemar's exact test of the agent against each baseline;
- ``report``, ``plot``: the table as Markdown, CSV, JSON and a PNG.
"""
