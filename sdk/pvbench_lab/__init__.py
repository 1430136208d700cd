"""pvbench's own benchmarks and calibration harnesses: not CI, not shipped to users' runs.

Each module with a ``main`` runs as ``.venv/bin/python -m pvbench_lab.<name> [ARGS]``:

bench_*           timings of pvbench's own code paths, side by side (scripts, not timed tests);
                  bench_aggregate also holds what the others share: one real fio result copied
                  into synthetic runs of 1,000 results, a MinIO store on loopback, the timers
stats_calibration what the statistics promise, measured in one run (docs/statistics.md's table)
adaptive_resample the adaptive-repetition rule replayed on the thesis's runs
calibration       the calibration itself: coverage, false verdicts and power of the shipped code
calibration_flags false warm-up and outlier flags of the shipped SQL models on null data
occasions         the between/within-occasion split in plain Python (the SQL model's reference)
changepoint_calibration  false and found change points and drifts of stats.changepoints on simulated histories

They run from a checkout of the repository (the examples, the analytics models, .tools/bin);
what they share with the tests is pvbench.testing.
"""
