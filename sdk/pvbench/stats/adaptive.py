"""Adaptive repetitions: repeat a cell until its mean is known precisely enough, or a cap is hit.

The rule, per cell and occasion (storage class × workload in one occasion, each headline metric
and direction; repetitions counted within that occasion):

    keep repeating while  n < min_repetitions
                     or  (t(0.975, n−1) · s / √n) / |mean| > target_half_width   and n < max_repetitions

i.e. stop when the 95% confidence interval of the mean is within ± target (5% by default) of
the mean. A quiet cell stops after ``min_repetitions``; a noisy one gets more runs, up to the cap.
``pvbench_lab.adaptive_resample`` replays the rule as shipped on the thesis's raw runs: against its
fixed 5 runs per occasion it saves none, it only adds runs to noisy occasions (docs/statistics.md).

Used by local mode (``adaptive:`` in the config: extra rounds of the imprecise cells only) and by
``pvbench stats ci-check`` (what an Argo loop asks between rounds).
"""

from __future__ import annotations

import functools
import math
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pvbench.cells.cell import MAX_REPETITIONS


class AdaptiveSettings(BaseModel):
    """``adaptive:`` of a local-mode config, and the options of ``pvbench stats ci-check``."""

    model_config = ConfigDict(extra="forbid")

    target_half_width: float = Field(
        default=0.05, gt=0, lt=1, description="Stop when the CI half-width is below this share of the mean"
    )
    min_repetitions: int = Field(
        default=5,
        ge=2,
        description="Always run at least this many (fewer makes early stops too optimistic: pvbench_lab.adaptive_resample)",
    )
    max_repetitions: int = Field(
        default=20,
        ge=2,
        le=MAX_REPETITIONS,
        description="Never run more than this many (the same bound as repetitions)",
    )
    confidence: float = Field(default=0.95, gt=0, lt=1)

    @model_validator(mode="after")
    def _order(self) -> "AdaptiveSettings":
        if self.max_repetitions < self.min_repetitions:
            raise ValueError(
                f"max_repetitions ({self.max_repetitions}) is below min_repetitions ({self.min_repetitions})"
            )
        return self


@functools.lru_cache(maxsize=None)
def _t_quantile(confidence: float, df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, df))


def relative_half_width(values: list[float], confidence: float = 0.95) -> float:
    """Half-width of the t confidence interval of the mean, as a share of |mean| (inf if unknown)."""
    n = len(values)
    if n < 2:
        return math.inf
    mean = sum(values) / n
    if mean == 0:
        return math.inf
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return _t_quantile(confidence, n - 1) * sd / math.sqrt(n) / abs(mean)


def needs_more(values: list[float], settings: AdaptiveSettings) -> bool:
    n = len(values)
    if n >= settings.max_repetitions:
        return False
    if n < settings.min_repetitions:
        return True
    return relative_half_width(values, settings.confidence) > settings.target_half_width


@dataclass
class Precision:
    """One cell × direction × metric: how precise its mean is now."""

    cell: tuple
    direction: str
    metric: str
    n: int
    mean: float
    half_width: float
    needs_more: bool


def assess(rows: Iterable[tuple[tuple, str, str, float]], settings: AdaptiveSettings) -> list[Precision]:
    """rows: (cell key, direction, metric, value). One Precision per cell × direction × metric."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for cell, direction, metric, value in rows:
        groups[(cell, direction, metric)].append(float(value))
    out = []
    for (cell, direction, metric), values in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        out.append(
            Precision(
                cell,
                direction,
                metric,
                len(values),
                sum(values) / len(values),
                relative_half_width(values, settings.confidence),
                needs_more(values, settings),
            )
        )
    return out


# ------------------------------------------------------------------ local mode


def shuffle_round(items: list, seed: int, round_: int) -> None:
    """The seeded random order of one adaptive round's cells, the same in local mode and on Argo."""
    random.Random(seed * 1000 + round_).shuffle(items)
