"""What the analytics runner asks of pvbench.stats around the SQL models.

before_models: the user's declarations (storage_class_limits, cost_model; always created,
    empty without a limits file) and SQL functions the models may call (f_pvalue).
after_models: tables that need resampling and so are computed in Python over the
    ``measurements`` table (report_comparisons), written as Parquet like the SQL tables.
"""

from __future__ import annotations

import math

PYTHON_TABLES = ("report_comparisons",)


def _f_pvalue(f: float, df1: float, df2: float) -> float | None:
    from scipy import stats

    if f is None or df1 is None or df2 is None or df1 <= 0 or df2 <= 0 or math.isnan(f):
        return None
    return float(stats.f.sf(f, df1, df2))


def register_functions(con) -> None:
    from duckdb.sqltypes import DOUBLE

    con.create_function("f_pvalue", _f_pvalue, [DOUBLE, DOUBLE, DOUBLE], DOUBLE)


def before_models(con, store=None, limits=None) -> None:
    from pvbench.analytics.runner import AnalyticsError
    from pvbench.stats.limits import LimitsError, find_declarations, install

    register_functions(con)
    try:
        install(con, find_declarations(store, limits))
    except LimitsError as exc:  # every caller of build_tables already reports AnalyticsError cleanly
        raise AnalyticsError(str(exc)) from exc


def after_models(con) -> None:
    from pvbench.stats.tables import build_report_comparisons

    build_report_comparisons(con)
