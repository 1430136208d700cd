"""The orchestration above the analytics leaf: which tables are built, with what.

pvbench.analytics runs the SQL models over a store's compacts with what it is given; this layer
gives it the statistics' SQL functions, the user's limits and prices, and the tables computed in
Python (report_comparisons, the history's change points), and says where the results go
(aggregate). Comparisons of two selections of stored results (``pvbench compare``) and a class's
history across the campaigns' stored tables (``pvbench history``) live here too: they read
tables, then judge.
"""

from pvbench.pipeline.compare import compare_sides
from pvbench.pipeline.tables import PYTHON_TABLES, aggregate, build_tables, table_schemas

__all__ = ["PYTHON_TABLES", "aggregate", "build_tables", "compare_sides", "table_schemas"]
