"""The moderated day-to-day variance (pvbench.stats.moderated): the prior's fit, its cap for
correlated cells, the floor, and what it changes in a verdict."""

import math

import numpy as np
import pytest

from pvbench.stats.compare import WITHHELD, WORSE, compare_many, compare_samples, prior_cell
from pvbench.stats.moderated import NO_PRIOR, Prior, Residuals, fit_moments, fit_prior, pooled_rho2


def test_the_moments_fit_recovers_a_known_prior():
    """Variances drawn from the model (σ² ~ d0·s0²/χ²(d0), s² ~ σ²·χ²(d)/d) give back d0 and s0²."""
    rng = np.random.default_rng(1)
    g, d0, s0, d = 20000, 4.0, 0.01, 2
    sigma2 = d0 * s0 / rng.chisquare(d0, g)
    s2 = sigma2 * rng.chisquare(d, g) / d
    fitted_s0, fitted_d0 = fit_moments(s2, np.full(g, float(d)))
    assert fitted_d0 == pytest.approx(d0, rel=0.2)
    assert fitted_s0 == pytest.approx(s0, rel=0.1)


def test_no_spread_beyond_sampling_means_an_infinite_prior_capped_by_the_cells():
    """Cells whose variances differ only by sampling error: limma's d0 is infinite; here it is
    capped at what the cells carry (independent cells: G · mean df)."""
    rng = np.random.default_rng(2)
    cells = [[{("c", m, i): float(v) for i, v in enumerate(rng.normal(0, 0.05, 4))}] for m in range(30)]
    prior = fit_prior(cells)
    assert prior.cells == 30
    assert prior.df <= prior.effective_cells * 3 + 1e-9
    assert prior.s2 == pytest.approx(0.05**2, rel=0.35)


def test_cells_that_move_together_count_as_one():
    """Ten metrics of one class whose occasions move exactly alike carry one cell's information:
    the prior is worth no more than one cell's degrees of freedom."""
    rng = np.random.default_rng(3)
    shared = rng.normal(0, 0.05, 5)
    cells = [[{("night", i): float(v * (1 + m / 10)) for i, v in enumerate(shared)}] for m in range(10)]
    rho2, sharing = pooled_rho2([{k: v for k, v in c[0].items()} for c in cells])
    assert sharing == 45 and rho2 == pytest.approx(1.0)
    prior = fit_prior(cells)
    assert prior.effective_cells == pytest.approx(1.0)
    assert prior.df <= 4 + 1e-9
    # the same cells on occasions of their own (no shared key): independent, worth ten
    apart = [[{(m, i): v for (_, i), v in c[0].items()}] for m, c in enumerate(cells)]
    assert fit_prior(apart).effective_cells == pytest.approx(10.0)


def test_numbered_residuals_give_the_correlation_the_cells_give():
    """The SQL model hands the residuals over as numbered rows (Residuals.of_numbered): the same
    matrix, the same pooled correlation, as from each cell's residuals by occasion."""
    rng = np.random.default_rng(4)
    day = rng.normal(0, 0.05, 12)
    cells = [{f"o{i}": float(day[i] + rng.normal(0, 0.02)) for i in range(12) if rng.random() < 0.8} for _ in range(25)]
    rows = [(c, int(o[1:]) * 7 + 3, v) for c, cell in enumerate(cells) for o, v in cell.items()]
    rng.shuffle(rows)
    numbered = Residuals.of_numbered(*(np.array(column) for column in zip(*rows)))
    assert len(numbered) == 25
    by_cells = pooled_rho2(cells)
    assert pooled_rho2(numbered) == (pytest.approx(by_cells[0], rel=1e-12), by_cells[1])
    assert 0.3 < by_cells[0] < 1  # they move together, not alike


def test_squeeze_is_the_weighted_mean_of_prior_and_cell():
    prior = Prior(s2=0.01, df=4.0, cells=10, effective_cells=5.0)
    assert prior.squeeze(0.04, 2) == pytest.approx(((4 * 0.01 + 2 * 0.04) / 6, 6))
    assert prior.squeeze(math.nan, 0) == (0.01, 4.0)  # no df of its own: the prior's alone
    assert NO_PRIOR.squeeze(0.04, 2) == (0.04, 2)


def test_a_run_with_no_history_of_its_own_is_judged_from_the_other_cells():
    """One occasion a side and no history: alone, nothing is known (withheld); in a family whose
    other metrics have histories, the prior they give judges it."""
    rng = np.random.default_rng(4)
    lone = ({"m": "lone"}, "higher", [rng.normal(1000, 10, 3)], [rng.normal(600, 10, 3)])
    [alone] = compare_many([lone])
    assert alone.verdict == WITHHELD
    others = [
        (
            {"m": m},
            "higher",
            [rng.normal(1000 * (1 + rng.normal(0, 0.03)), 10, 3) for _ in range(4)],
            [rng.normal(1000, 10, 3)],
        )
        for m in range(6)
    ]
    comps = compare_many([lone, *others])
    assert comps[0].verdict == WORSE and "prior" in comps[0].method and comps[0].df > 0


def test_the_prior_never_holds_the_candidate():
    """compare_many fits its prior on baselines and histories: the candidates' values change
    verdicts, never the prior."""
    rng = np.random.default_rng(5)
    base = [[rng.normal(1000 * (1 + rng.normal(0, 0.03)), 10, 3) for _ in range(3)] for _ in range(8)]
    first = [prior_cell(b) for b in base]
    same = fit_prior(first)
    for factor in (1.0, 0.5, 3.0):
        comps = compare_many(
            [
                ({"m": m}, "higher", b, [list(rng.normal(1000 * factor, 50, 3)), list(rng.normal(900, 50, 3))])
                for m, b in enumerate(base)
            ]
        )
        assert all(f"{same.df:.1f} df" in c.method for c in comps)


def test_the_floor_is_the_repetitions_noise():
    """Three occasions whose means happen to agree exactly still vary by their repetitions' noise:
    the interval is never narrower than sd²/n says."""
    base = [[900.0, 1000.0, 1100.0], [1100.0, 1000.0, 900.0], [1000.0, 900.0, 1100.0]]
    comp = compare_samples(base, [[950.0, 1050.0, 1000.0]], "higher")
    within = np.var(np.log([900.0, 1000.0, 1100.0]), ddof=1) / 3
    half = math.log(comp.ratio_ci_high) - math.log(comp.ratio)
    assert half > 0
    assert half >= 2.0 * math.sqrt(within * (1 / 3 + 1))  # t(0.975, 2 df) · se with the floor
