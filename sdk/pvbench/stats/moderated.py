"""The moderated day-to-day variance: borrow strength across cells that share the design.

A verdict stands on occasion means, so its uncertainty is the day-to-day (between-occasion)
variance of one cell (a storage class × workload × direction × metric). With 2–4 occasions a
cell's own estimate of it is very rough (1–3 degrees of freedom), and a t test on it has almost
no power. Genomics has the same problem (thousands of genes, three replicates each) and solved
it with an empirical-Bayes prior for the variances (Smyth 2004, "Linear models and empirical
Bayes methods for assessing differential expression in microarray experiments", limma's
``fitFDist`` and ``squeezeVar``):

* each cell's true variance σ²_g is drawn from a scaled inverse-χ² distribution with d0 degrees
  of freedom around s0²: ``d0 · s0² / σ²_g ~ χ²(d0)``;
* d0 and s0² are fitted by moments on the log of the cells' own variances s²_g (each on d_g
  degrees of freedom), correcting for the log-χ² mean and variance (digamma, trigamma);
* each cell's variance is then the posterior ``s̃²_g = (d0 · s0² + d_g · s²_g) / (d0 + d_g)``, and
  its t statistic has ``d0 + d_g`` degrees of freedom (the moderated t): exact under the model,
  at any d_g — even 0, where the cell's variance is the prior's alone.

Two things differ from microarrays, and are handled here:

* **correlated cells.** The metrics of one class share their occasions (a slow evening slows
  all of them), so their variances are not independent draws: ten metrics of one class carry
  far less than ten cells' worth of information about s0². The prior's own precision is
  therefore capped at what the cells can give: ``d0 ≤ G_eff · mean(d_g)``, with the effective
  number of cells ``G_eff = G² / Σ_ij ρ²_ij`` (Σ over all pairs, ρ_ii = 1), where ρ_ij is the
  correlation of two cells' occasion residuals over the occasions they share, pooled over the
  pairs that share enough of them (small-sample bias removed) — 1 where nothing tells;
* **a floor.** An occasion mean varies at least by its repetitions' noise (sd²/n): whatever the
  prior says, the day-to-day variance is never taken below that (``floor`` in compare).

Everything here is on the log scale of occasion means (relative changes), as compare uses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping, Sequence

import numpy as np

# A cell's occasion means, in groups that each have a mean of their own (a side, the history):
# each group maps an occasion's key (run, occasion) to its log mean.
Groups = Sequence[Mapping[Hashable, float]]

# Pairs of cells sharing fewer occasions than this tell nothing of their correlation (with 2, the
# residuals of a group are ±e: always perfectly correlated).
MIN_SHARED = 3


@dataclass(frozen=True)
class Prior:
    """The prior for the cells' day-to-day variances: s0² (``s2``) on ``df`` (d0) degrees of
    freedom, fitted across ``cells`` cells worth ``effective_cells`` independent ones."""

    s2: float = math.nan
    df: float = 0.0
    cells: int = 0
    effective_cells: float = 0.0
    rho2: float = math.nan
    """The pooled squared correlation of cells sharing occasions (nan: not estimable)."""

    @property
    def known(self) -> bool:
        return self.df > 0 and math.isfinite(self.s2) and self.s2 > 0

    def squeeze(self, s2: float, df: float) -> tuple[float, float]:
        """The cell's moderated variance and its degrees of freedom: (d0·s0² + d·s²)/(d0 + d)."""
        if not self.known:
            return s2, df
        if df <= 0:
            return self.s2, self.df
        return (self.df * self.s2 + df * s2) / (self.df + df), self.df + df

    def describe(self) -> str:
        if not self.known:
            return "no prior"
        return f"prior of {self.df:.1f} df from {self.cells} cells (~{self.effective_cells:.1f} independent)"


NO_PRIOR = Prior()


def residuals(groups: Groups) -> tuple[dict[Hashable, float], int]:
    """Each occasion's deviation from its group's mean, and the degrees of freedom (Σ (k − 1))."""
    out: dict[Hashable, float] = {}
    df = 0
    for group in groups:
        if len(group) < 2:
            continue
        mean = sum(group.values()) / len(group)
        out.update((key, value - mean) for key, value in group.items())
        df += len(group) - 1
    return out, df


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (limma's trigammaInverse: Newton's method on 1/trigamma)."""
    from scipy import special

    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(special.polygamma(1, y))
        dif = tri * (1 - tri / x) / float(special.polygamma(2, y))
        y += dif
        if -dif / y < 1e-8:
            break
    return y


def fit_moments(s2: np.ndarray, df: np.ndarray) -> tuple[float, float]:
    """limma's fitFDist: (s0², d0) by moments of log s² (cells with s² > 0 and df > 0; d0 = inf
    when the variances vary no more than their own sampling error says)."""
    from scipy import special

    z = np.log(s2)
    e = z - special.digamma(df / 2) + np.log(df / 2)
    emean = float(e.mean())
    evar = float(((e - emean) ** 2).sum() / (len(e) - 1) - special.polygamma(1, df / 2).mean())
    if evar > 0:
        d0 = 2 * _trigamma_inverse(evar)
        return math.exp(emean + float(special.digamma(d0 / 2)) - math.log(d0 / 2)), d0
    return math.exp(emean), math.inf


# Cells the correlation is measured on at most (a sample, the same every time, beyond it): a
# campaign can have thousands of cells, and the pairs grow with their square.
CORRELATION_SAMPLE = 600


@dataclass(frozen=True)
class Residuals:
    """Cells' occasion residuals as a cells × occasions matrix ``e`` (0 where a cell has not run
    that occasion) and ``present`` (1 where it has): what pooled_rho2 multiplies."""

    e: np.ndarray
    present: np.ndarray

    @classmethod
    def of_cells(cls, cells: Sequence[dict[Hashable, float]]) -> Residuals:
        """From each cell's residuals by occasion."""
        keys = sorted({k for cell in cells for k in cell}, key=repr)
        index = {k: i for i, k in enumerate(keys)}
        e = np.zeros((len(cells), len(keys)))
        present = np.zeros((len(cells), len(keys)))
        for row, cell in enumerate(cells):
            for key, value in cell.items():
                e[row, index[key]] = value
                present[row, index[key]] = 1.0
        return cls(e, present)

    @classmethod
    def of_numbered(cls, cells: np.ndarray, occasions: np.ndarray, values: np.ndarray) -> Residuals:
        """From parallel arrays, each residual's cell and occasion a number (each pair once): the
        SQL model's rows, placed with NumPy, not a Python loop over each (60,000 at 100,000 results)."""
        cell_numbers, rows = np.unique(np.asarray(cells, dtype=np.int64), return_inverse=True)
        occasion_numbers, columns = np.unique(np.asarray(occasions, dtype=np.int64), return_inverse=True)
        e = np.zeros((len(cell_numbers), len(occasion_numbers)))
        present = np.zeros_like(e)
        e[rows, columns] = np.asarray(values, dtype=float)
        present[rows, columns] = 1.0
        return cls(e, present)

    def __len__(self) -> int:
        return self.e.shape[0]

    def rows(self, picked: np.ndarray) -> Residuals:
        return Residuals(self.e[picked], self.present[picked])


def pooled_rho2(cells: Sequence[dict[Hashable, float]] | Residuals, of_cells: int | None = None) -> tuple[float, float]:
    """The mean squared correlation of two cells' residuals over the occasions they share, over
    the pairs of cells that share at least MIN_SHARED (each r² less its small-sample bias 1/d:
    (d·r² − 1)/(d − 1), d = shared − 1), clipped to [0, 1]; and how many pairs share any occasion.
    nan when no pair shares enough. ``cells`` may be a sample of ``of_cells`` cells: the count of
    sharing pairs is then scaled to them (beyond CORRELATION_SAMPLE cells, an evenly spaced sample
    is taken here)."""
    of_cells = of_cells or len(cells)
    if len(cells) > CORRELATION_SAMPLE:
        picked = np.linspace(0, len(cells) - 1, CORRELATION_SAMPLE).round().astype(int)
        sample = cells.rows(picked) if isinstance(cells, Residuals) else [cells[i] for i in picked]
        return pooled_rho2(sample, of_cells)
    matrix = cells if isinstance(cells, Residuals) else Residuals.of_cells(cells)
    e, present = matrix.e, matrix.present
    if not e.shape[1] or len(cells) < 2:
        return math.nan, 0
    shared = present @ present.T
    cross = e @ e.T
    sq = (e * e) @ present.T  # sq[i, j]: Σ e_i² over the occasions j has too
    upper = np.triu(np.ones_like(shared, dtype=bool), 1)
    sharing = int((upper & (shared > 0)).sum()) * (of_cells * (of_cells - 1)) / (len(cells) * (len(cells) - 1))
    usable = upper & (shared >= MIN_SHARED) & (sq > 0) & (sq.T > 0)
    if not usable.any():
        return math.nan, sharing
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = cross**2 / (sq * sq.T)
    d = shared[usable] - 1
    adjusted = (d * r2[usable] - 1) / (d - 1)
    return float(min(1.0, max(0.0, adjusted.mean()))), sharing


def fit_prior(cells: Iterable[Groups]) -> Prior:
    """The prior for the day-to-day variance of cells like these: each cell its groups of log
    occasion means (never a comparison's candidate: only what is known before it). Cells with no
    degrees of freedom, or no variation at all, tell nothing and are left out."""
    resid, s2, dfs = [], [], []
    for groups in cells:
        r, df = residuals(groups)
        if df <= 0:
            continue
        ss = sum(v * v for v in r.values())
        if ss <= 0:
            continue
        resid.append(r)
        s2.append(ss / df)
        dfs.append(df)
    return fit_variances(np.asarray(s2), np.asarray(dfs, dtype=float), resid)


def fit_variances(s2: np.ndarray, dfs: np.ndarray, resid: Sequence[dict[Hashable, float]] | Residuals) -> Prior:
    """fit_prior from the cells' variances (each > 0) on their degrees of freedom (each > 0), and
    their occasion residuals — of every cell, or of a sample of them (the correlation's)."""
    g = len(s2)
    if g < 2:
        return NO_PRIOR
    s0, d0 = fit_moments(s2, dfs)
    rho2, sharing = pooled_rho2(resid, g)
    if sharing and math.isnan(rho2):
        rho2 = 1.0  # cells share occasions, but too few to say how alike they move: assume fully
    g_eff = g * g / (g + 2 * sharing * (rho2 if sharing else 0.0))
    d0 = min(d0, g_eff * float(np.mean(dfs)))
    return Prior(s2=s0, df=d0, cells=g, effective_cells=g_eff, rho2=rho2)


def prior_of_rows(cells: Sequence[str], occasions: Sequence[str], log_means: Sequence[float]) -> Prior:
    """fit_prior over rows (cell, occasion, log occasion mean): each cell's occasions one group."""
    groups: dict[str, dict[str, float]] = {}
    for cell, occasion, value in zip(cells, occasions, log_means):
        if value is not None and math.isfinite(value):
            groups.setdefault(cell, {})[occasion] = value
    return fit_prior([group] for group in groups.values())
