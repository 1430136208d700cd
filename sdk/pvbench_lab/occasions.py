"""Between- vs within-occasion variation: how much of the spread is the time of day or week?

The analytics compute this in SQL (analytics/models/3_summaries/occasion_components.sql); this
module is the same estimator in plain Python, as the reference the SQL is tested against and for
callers that have values in hand. One-way random-effects ANOVA (method of moments, unbalanced):

    MS_b = Σ n_i (ȳ_i − ȳ)² / (k − 1)          MS_w = Σ_i Σ_j (y_ij − ȳ_i)² / (N − k)
    n0   = (N − Σ n_i² / N) / (k − 1)
    σ²_between = max(0, (MS_b − MS_w) / n0)     σ²_within = MS_w
    share_between = σ²_between / (σ²_between + σ²_within)     F = MS_b / MS_w on (k − 1, N − k) df
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass(frozen=True)
class OccasionSplit:
    n_occasions: int
    n: int
    mean: float
    var_between: float
    var_within: float
    share_between: float
    f_stat: float
    df_between: int
    df_within: int
    p_value: float

    @property
    def sd_between(self) -> float:
        return math.sqrt(self.var_between)

    @property
    def sd_within(self) -> float:
        return math.sqrt(self.var_within)


def split_variance(groups: Mapping[str, Sequence[float]] | Sequence[Sequence[float]]) -> OccasionSplit:
    """Variance components of values grouped by occasion (a mapping or a list of lists)."""
    from scipy import stats

    samples = [list(map(float, g)) for g in (groups.values() if isinstance(groups, Mapping) else groups) if len(g)]
    k = len(samples)
    n = sum(len(g) for g in samples)
    if k < 2 or n <= k:
        raise ValueError(f"need at least 2 occasions and more values than occasions (got {k} and {n})")
    means = [sum(g) / len(g) for g in samples]
    grand = sum(len(g) * m for g, m in zip(samples, means)) / n
    ss_b = sum(len(g) * (m - grand) ** 2 for g, m in zip(samples, means))
    ss_w = sum((v - m) ** 2 for g, m in zip(samples, means) for v in g)
    ms_b, ms_w = ss_b / (k - 1), ss_w / (n - k)
    n0 = (n - sum(len(g) ** 2 for g in samples) / n) / (k - 1)
    var_b = max(0.0, (ms_b - ms_w) / n0)
    total = var_b + ms_w
    f = ms_b / ms_w if ms_w > 0 else math.inf
    p = float(stats.f.sf(f, k - 1, n - k)) if ms_w > 0 else 0.0
    return OccasionSplit(k, n, grand, var_b, ms_w, var_b / total if total > 0 else float("nan"), f, k - 1, n - k, p)
