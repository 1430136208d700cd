"""Statistics over stored results: comparisons and verdicts, occasions, anomalies, adaptive repetitions.

compare.py  — occasion-level t on log occasion means, Holm, direction-aware verdicts (or withheld)
sides.py    — select two sides (runs, classes, roles, campaigns) from the store and match metrics
tables.py   — report_comparisons, computed when the analytics run (hooks.py is the runner's entry)
limits.py   — the user's declared storage class limits and prices (anomaly flags, cost model)
occasions.py — between- vs within-occasion variance (reference implementation of the SQL model)
adaptive.py — repeat a cell until its 95% CI is narrow enough (local mode, ci-check)
calibration.py — what the statistics promise, measured on the shipped code (ci/stats_calibration.py)
cli.py      — `pvbench stats …` and `pvbench compare`
"""
