"""Runs the DuckDB SQL models of analytics/ over stored results: a leaf that runs the models with
what it is given (pvbench.pipeline wires in the statistics' tables and functions)."""

from pvbench.analytics.models import discover_models
from pvbench.analytics.outputs import write_parquet
from pvbench.analytics.runner import build_tables
from pvbench.analytics.tables import AnalyticsError

__all__ = ["AnalyticsError", "build_tables", "discover_models", "write_parquet"]
