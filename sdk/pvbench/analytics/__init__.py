"""Runs the DuckDB SQL models of analytics/ over stored results."""

from pvbench.analytics.runner import AnalyticsError, aggregate, build_tables, discover_models

__all__ = ["AnalyticsError", "aggregate", "build_tables", "discover_models"]
