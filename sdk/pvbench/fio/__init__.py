"""Running fio and reading what it reported."""

from pvbench.fio.parse import direction_metrics, percentile_from_bins
from pvbench.fio.runner import FioError, FioRun, fio_version, run_fio

__all__ = ["FioError", "FioRun", "direction_metrics", "fio_version", "percentile_from_bins", "run_fio"]
