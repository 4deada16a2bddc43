"""Tests of direction calls: does the accuracy beat what the calls' own bias would give?

Accuracy against 50% is the wrong bar in a rising market: always-long scores the share
of windows that rose. Three figures answer the honest question:

- binomial tests of the accuracy against 50% and against the always-long rate (scipy);
- the Pesaran–Timmermann test (1992): the accuracy against P* = Py·Px + (1−Py)(1−Px),
  what calls with the same long share Px would score if they were independent of the
  outcome (Py the share that rose); the statistic is (P − P*) / √(V(P) − V(P*)), standard
  normal under independence, and tested one-sided;
- the effective number of windows: windows whose held-out bars overlap in time (the
  same asset's overlapping windows, or different assets judged on the same dates) share
  their outcome's luck. They are grouped into clusters, the intraclass correlation of
  being right is estimated by one-way ANOVA, and n_eff = n / (1 + (m̄ − 1)·ρ) with m̄ the
  size-weighted mean cluster size (Kish's design effect). One cluster holding every
  window counts as one window.

The windows needed to detect 55% at 80% power (one-sided α = 5%) come from statsmodels'
normal power solver on Cohen's h.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from scipy.stats import binomtest, norm
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from shared.stats.results import ALPHA, POWER, TARGET_ACCURACY, DirectionTests

Span = tuple[datetime, datetime]
"""A window's held-out span: from the last bar the caller saw to the bar it is judged at."""


def pesaran_timmermann(
    predicted: Sequence[bool], actual: Sequence[bool]
) -> tuple[float, float] | None:
    """(statistic, one-sided p) of calls ``predicted`` (True: up) against outcomes ``actual``;
    None when the test is undefined (every call alike or every outcome alike)."""
    n = len(predicted)
    if n != len(actual):
        raise ValueError(f"{n} calls for {len(actual)} outcomes")
    if n < 2:
        return None
    p = sum(x == y for x, y in zip(predicted, actual, strict=True)) / n
    px, py = sum(predicted) / n, sum(actual) / n
    p_star = py * px + (1 - py) * (1 - px)
    v_p = p_star * (1 - p_star) / n
    v_star = (
        (2 * py - 1) ** 2 * px * (1 - px) / n
        + (2 * px - 1) ** 2 * py * (1 - py) / n
        + 4 * py * px * (1 - py) * (1 - px) / n**2
    )
    spread = v_p - v_star
    if spread <= 0:
        return None
    statistic = (p - p_star) / math.sqrt(spread)
    return statistic, float(norm.sf(statistic))


def clusters_of(spans: Sequence[Span]) -> list[int]:
    """A cluster number per span: spans that overlap (directly or through others) share one."""
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    labels = [0] * len(spans)
    cluster, reach = -1, None
    for i in order:
        start, end = spans[i]
        if reach is None or start >= reach:
            cluster += 1
            reach = end
        else:
            reach = max(reach, end)
        labels[i] = cluster
    return labels


def intraclass_correlation(values: Sequence[float], labels: Sequence[int]) -> float:
    """One-way ANOVA estimate of the intraclass correlation, clipped to [0, 1]; one cluster
    of everything is taken as fully correlated, no variation as uncorrelated."""
    groups: dict[int, list[float]] = {}
    for value, label in zip(values, labels, strict=True):
        groups.setdefault(label, []).append(value)
    n, k = len(values), len(groups)
    if k == 1:
        return 1.0 if n > 1 else 0.0
    if k == n:
        return 0.0
    mean = sum(values) / n
    between = sum(len(g) * (sum(g) / len(g) - mean) ** 2 for g in groups.values()) / (k - 1)
    within = sum(sum((v - sum(g) / len(g)) ** 2 for v in g) for g in groups.values()) / (n - k)
    m0 = (n - sum(len(g) ** 2 for g in groups.values()) / n) / (k - 1)
    denominator = between + (m0 - 1) * within
    if denominator <= 0:
        return 0.0
    return min(1.0, max(0.0, (between - within) / denominator))


def effective_windows(right: Sequence[bool], spans: Sequence[Span]) -> tuple[float, int]:
    """(n_eff, clusters) of windows judged ``right`` over ``spans`` (module docstring)."""
    n = len(right)
    if n == 0:
        return 0.0, 0
    labels = clusters_of(spans)
    sizes: dict[int, int] = {}
    for label in labels:
        sizes[label] = sizes.get(label, 0) + 1
    rho = intraclass_correlation([float(r) for r in right], labels)
    weighted_size = sum(m * m for m in sizes.values()) / n
    return n / (1 + (weighted_size - 1) * rho), len(sizes)


def windows_needed(target: float, baseline: float) -> int | None:
    """Windows to detect accuracy ``target`` against ``baseline`` at 80% power, one-sided 5%;
    None when the target does not beat the baseline."""
    if target <= baseline:
        return None
    effect = proportion_effectsize(target, baseline)
    n = NormalIndPower().solve_power(
        effect_size=effect, alpha=ALPHA, power=POWER, ratio=0, alternative="larger"
    )
    return math.ceil(float(n))


def _binomial_p(accuracy: float, n_effective: float, baseline: float) -> float | None:
    """One-sided binomial p of ``accuracy`` on ``n_effective`` windows against ``baseline``."""
    n = round(n_effective)
    if n < 1 or not 0 < baseline < 1:
        return None
    return float(binomtest(round(accuracy * n), n, baseline, alternative="greater").pvalue)


def direction_tests(
    calls_long: Sequence[bool], rose: Sequence[bool], spans: Sequence[Span], *, trials: int = 1
) -> DirectionTests:
    """Every direction figure of calls (True: LONG) against what happened (True: rose)."""
    n = len(calls_long)
    needed_vs_half = windows_needed(TARGET_ACCURACY, 0.5)
    if n == 0:
        return DirectionTests(n=0, trials=trials, needed_vs_half=needed_vs_half)
    right = [c == r for c, r in zip(calls_long, rose, strict=True)]
    accuracy, up_rate = sum(right) / n, sum(rose) / n
    n_effective, clusters = effective_windows(right, spans)
    pt = pesaran_timmermann(calls_long, rose)
    return DirectionTests(
        n=n,
        n_effective=n_effective,
        clusters=clusters,
        up_rate=up_rate,
        long_share=sum(calls_long) / n,
        p_vs_half=_binomial_p(accuracy, n_effective, 0.5),
        p_vs_always_long=_binomial_p(accuracy, n_effective, up_rate),
        pt_statistic=pt[0] if pt else None,
        pt_p=pt[1] if pt else None,
        trials=trials,
        pt_p_deflated=1 - (1 - pt[1]) ** trials if pt else None,
        needed_vs_half=needed_vs_half,
        needed_vs_always_long=windows_needed(TARGET_ACCURACY, up_rate),
    )
