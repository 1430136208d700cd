"""Statistical functions the SQL models call (f_pvalue, t_quantile, warmup_pvalue, variance_prior), registered
on a DuckDB connection by register_functions (pvbench.pipeline does, before the models run)."""

from __future__ import annotations

import math
from functools import lru_cache


# scipy.special's ufuncs, not scipy.stats' distributions: the same functions (stats.f.sf is
# special.fdtrc, stats.t.ppf is special.stdtrit), without the ~1 ms of argument checking per call
# that made f_pvalue most of a small campaign's aggregation.
def _f_pvalue(f: float, df1: float, df2: float) -> float | None:
    from scipy import special

    if f is None or df1 is None or df2 is None or df1 <= 0 or df2 <= 0 or math.isnan(f):
        return None
    return float(special.fdtrc(df1, df2, f))


@lru_cache(maxsize=4096)
def _t_quantile_cached(p: float, df: float) -> float:
    from scipy import special

    return float(special.stdtrit(df, p))


def _t_quantile(p: float, df: float) -> float | None:
    """Quantile of Student's t (the outlier rule's Bonferroni cut-off)."""
    if p is None or df is None or not 0 < p < 1 or df <= 0:
        return None
    return _t_quantile_cached(float(p), float(df))


@lru_cache(maxsize=65536)
def first_rank_pvalue(rank_sum: int, sizes: tuple[int, ...]) -> float:
    """Exact P(S <= rank_sum) for S = sum of independent uniforms on 1..r over the occasions.

    Under exchangeable repetitions the rank of the first one among the r of its occasion
    (1 = slowest) is uniform on 1..r whatever the occasion's level, and occasions are
    independent: the distribution of the sum is the convolution of those uniforms.
    """
    k = rank_sum - len(sizes)
    if k < 0:
        return 0.0
    return float(min(1.0, _rank_sum_distribution(sizes)[: k + 1].sum()))


@lru_cache(maxsize=1024)
def _rank_sum_distribution(sizes: tuple[int, ...]):
    """dist[k] = P(S = k + len(sizes)): the same for every cell whose occasions have these sizes
    (a campaign's cells mostly share them), so made once, not once per rank sum (a convolution per
    occasion: ~0.1 s of adding a run to a 100-occasion campaign)."""
    import numpy as np

    dist = np.array([1.0])
    for r in sizes:
        dist = np.convolve(dist, np.full(r, 1.0 / r))
    dist.flags.writeable = False  # shared by every caller
    return dist


def _warmup_pvalue(rank_sum: int, sizes: list[int]) -> float | None:
    if rank_sum is None or not sizes or any(r is None or r < 1 for r in sizes):
        return None
    return first_rank_pvalue(int(rank_sum), tuple(sorted(int(r) for r in sizes)))


def _variance_prior(
    s2: list[float], dfs: list[float], cells: list[int], occasions: list[int], resids: list[float]
) -> dict:
    """The moderated variance's prior over a campaign's cells (pvbench.stats.moderated): from each
    cell's variance of log occasion means and its df, and the occasion residuals of a sample of
    the cells (the correlation's; the SQL takes up to correlation_sample() of them), each with its
    cell's and its occasion's number."""
    import numpy as np

    from pvbench.stats.moderated import Residuals, fit_variances

    residuals = Residuals.of_numbered(cells or [], occasions or [], resids or [])
    prior = fit_variances(np.asarray(s2 or [], dtype=float), np.asarray(dfs or [], dtype=float), residuals)
    known = prior.known
    return {
        "s2": prior.s2 if known else None,
        "df": prior.df if known else 0.0,
        "cells": prior.cells,
        "effective_cells": prior.effective_cells,
    }


def register_functions(con) -> None:
    import duckdb
    from duckdb.sqltypes import BIGINT, DOUBLE, INTEGER

    con.create_function("f_pvalue", _f_pvalue, [DOUBLE, DOUBLE, DOUBLE], DOUBLE)
    con.create_function("t_quantile", _t_quantile, [DOUBLE, DOUBLE], DOUBLE)
    con.create_function("warmup_pvalue", _warmup_pvalue, [BIGINT, duckdb.list_type(INTEGER)], DOUBLE)
    from pvbench.stats.moderated import CORRELATION_SAMPLE

    con.execute(f"CREATE OR REPLACE MACRO correlation_sample() AS {CORRELATION_SAMPLE}")
    con.create_function(
        "variance_prior",
        _variance_prior,
        [duckdb.list_type(DOUBLE), duckdb.list_type(DOUBLE)]
        + [duckdb.list_type(BIGINT)] * 2
        + [duckdb.list_type(DOUBLE)],
        duckdb.struct_type({"s2": DOUBLE, "df": DOUBLE, "cells": INTEGER, "effective_cells": DOUBLE}),
    )
