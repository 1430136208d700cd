"""The comparisons' Hodges–Lehmann shift, measured side by side (a script, not a timed test).

For two sides of n values each, prints the time and peak memory (numpy's buffers, as tracemalloc
sees them) of
  every difference   np.median of the full n × n difference matrix (what hl_shift used to be)
  window             pvbench.stats.compare.hodges_lehmann (the middle differences selected)
and whether the two give the same number, bit for bit. n = 500 is a class and workload of the
100,000-result bench_aggregate.py (100 runs × 5 repetitions); the full matrix is not made past 5,000 values a
side (20,000 × 20,000 differences would be 3.2 GB).

Usage: .venv/bin/python -m pvbench_lab.bench_hodges_lehmann
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
from rich.console import Console
from rich.table import Table

from pvbench.stats.compare import hodges_lehmann

SIZES = (500, 2_000, 5_000, 20_000)
FULL_UP_TO = 5_000


def every_difference(b: np.ndarray, c: np.ndarray) -> float:
    return float(np.median(c[:, None] - b[None, :]))


def measured(f, b: np.ndarray, c: np.ndarray) -> tuple[float, float, float]:
    """(result, seconds per call: best of a few, peak MB of one call)."""
    tracemalloc.start()
    result = f(b, c)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    calls = max(1, int(2e6 // (len(b) * len(c))))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            f(b, c)
        best = min(best, (time.perf_counter() - t0) / calls)
    return result, best, peak


def main() -> None:
    rng = np.random.default_rng(1)
    table = Table(title="Hodges–Lehmann shift of two sides of n values (2 cores; best of 3)")
    for col in ("n a side", "every difference", "window", "faster", "same number"):
        table.add_column(col, justify="right")
    for n in SIZES:
        b, c = rng.normal(60_000, 3_000, n), rng.normal(61_000, 3_500, n)
        hl, t_window, mb_window = measured(hodges_lehmann, b, c)
        if n <= FULL_UP_TO:
            full, t_full, mb_full = measured(every_difference, b, c)
            shown_full = f"{t_full * 1e3:,.2f} ms · {mb_full:,.0f} MB"
            ratio, same = f"{t_full / t_window:,.0f}×", "yes" if full == hl else "NO"
        else:
            shown_full, ratio, same = f"not made ({n * n * 8 / 1e9:.1f} GB)", "–", "–"
        table.add_row(f"{n:,}", shown_full, f"{t_window * 1e3:,.2f} ms · {mb_window:,.0f} MB", ratio, same)
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
