"""quantdesk: statistics that match the claim an evaluation or a backtest makes.

- ``results``: the pydantic records of every figure below (light: the workflows import it);
- ``direction``: direction calls: the Pesaran–Timmermann test, binomial tests against 50%
  and the always-long rate, the effective number of windows and the windows needed to
  detect 55% at 80% power (scipy, statsmodels);
- ``returns``: return series: the leaderboard columns, a block-bootstrap interval for the
  Sharpe ratio, the probabilistic and deflated Sharpe ratios, Hansen's SPA (arch, scipy);
- ``ledger``: the trials ledger in SQL, every configuration ever run, counted once.

The bootstraps and tests are the libraries'; this package only feeds them and names
what they say.
"""
