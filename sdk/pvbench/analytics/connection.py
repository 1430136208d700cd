"""The DuckDB connection the models run on: in memory, with this process's limits
(pvbench.analytics.resources), and without DuckDB's search for pandas at every Python call."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

import duckdb

from pvbench.analytics.resources import configure


class _PandasIsAbsent(importlib.abc.MetaPathFinder):
    """``import pandas`` fails at once, as it would after walking sys.path (see _pandas_is_absent)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _pandas_is_absent() -> None:
    """DuckDB's Python layer tries ``import pandas`` twice for every call of a Python function
    from SQL (f_pvalue, t_quantile …) and every Python value it converts. pvbench does not install
    pandas, and Python does not remember a failed import: each try walked sys.path again (~50 µs;
    a third of a 100,000-result aggregation). A finder in front answers "no pandas" at once, with
    the same ModuleNotFoundError (not a None in sys.modules, which other libraries, e.g. pyarrow,
    would take for a module)."""
    if any(isinstance(f, _PandasIsAbsent) for f in sys.meta_path):
        return
    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        sys.meta_path.insert(0, _PandasIsAbsent())


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with this process's limits. It reads a store's keys as
    ``resources.readable`` gives them (S3 set up there, at the first s3:// path)."""
    _pandas_is_absent()
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    configure(con)
    return con
