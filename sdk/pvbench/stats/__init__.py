"""Statistics over stored results: comparisons and verdicts, occasions, anomalies, adaptive repetitions.

compare.py  — occasion-level t on log occasion means, Holm, direction-aware verdicts (or withheld)
sides.py    — select two sides (runs, classes, roles, campaigns) from the store and match metrics
tables.py   — report_comparisons, computed when the analytics run (hooks.py is the runner's entry)
limits.py   — the user's declared storage class limits and prices (anomaly flags, cost model)
adaptive.py — repeat a cell until its 95% CI is narrow enough (local mode, ci-check)
changepoints.py — steps and drift over a class's history of occasion means, tied to events (PELT as ruptures runs it)
history.py  — report_change_points, report_history: every headline series judged, its events attributed
(the commands, `pvbench stats …` and `pvbench compare`, are pvbench/cli/stats.py)

What the statistics promise, measured on this code, and the plain-Python reference of the
occasion split are pvbench's own harnesses: pvbench_lab.calibration, pvbench_lab.occasions.
"""
