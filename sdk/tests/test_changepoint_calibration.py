"""The bars of pvbench.stats.changepoints, asserted on pvbench_lab.changepoint_calibration's quick
mode (seeded: the same figures every run; about 7 s of CPU, no wall-time assertion):

(a) at most 1 false change point per 100 occasions on flat series;
(b) a −15% step with 5 + 5 or 10 + 10 occasions found within ±1 occasion ≥ 90% of the time;
(c) a −10% drift over 30 occasions reported as a drift with no clear step ≥ 80% of the time;

each with normal day-to-day noise (log sd 4%) and two kinds of bad days.
"""

import pytest

from pvbench_lab.changepoint_calibration import NOISES, QUICK_TRIALS, calibration_rows


@pytest.fixture(scope="module")
def rows():
    return calibration_rows(QUICK_TRIALS)


def _bar(rows, bar):
    found = [r for r in rows if r["bar"] == bar]
    assert found, bar
    return found


def test_flat_series_have_at_most_one_false_change_point_per_100_occasions(rows):
    checked = _bar(rows, "(a)")
    assert len(checked) == len(NOISES)
    for r in checked:
        assert r["value"] <= 1.0, r


def test_a_15_percent_step_is_found_within_one_occasion(rows):
    checked = _bar(rows, "(b)")
    assert len(checked) == 2 * len(NOISES)
    for r in checked:
        assert r["value"] >= 0.90, r


def test_a_slow_drift_is_reported_as_a_drift(rows):
    checked = _bar(rows, "(c)")
    assert len(checked) == len(NOISES)
    for r in checked:
        assert r["value"] >= 0.80, r


def test_the_script_prints_every_row(capsys, monkeypatch):
    from pvbench_lab import changepoint_calibration

    monkeypatch.setattr("sys.argv", ["changepoint_calibration", "--quick"])
    monkeypatch.setattr(changepoint_calibration, "calibration_rows", lambda trials, sd, seed: rows_stub())
    assert changepoint_calibration.main() == 0
    out = capsys.readouterr().out
    assert "| (a) | flat" in out and "per 100 occasions" in out


def rows_stub():
    return [
        {
            "bar": "(a)",
            "case": "flat",
            "measure": "false change points per 100 occasions",
            "value": 0.1,
            "bound": "≤ 1",
            "trials": 1,
        }
    ]
