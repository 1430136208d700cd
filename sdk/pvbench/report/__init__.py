"""The Evidence.dev report: build it from the analytics layer's report_* Parquet tables, serve it.

    from pvbench.report import build_report, serve_report
    site = build_report(Path("analytics-out"), Path("site"), title="My campaign")
    serve_report(site, port=8765)

The Evidence project is the repository's ``reports/`` (override: ``$PVBENCH_REPORTS_DIR``),
installed by ``ci/install-report.sh``. Builds work air-gapped.
"""

from pvbench.report.build import (
    ReportError,
    build_report,
    check_installed,
    report_tables,
    reports_dir,
    stage_data,
)
from pvbench.report.fetch import fetch_report
from pvbench.report.serve import make_server, make_store_server, serve_report, start_server

__all__ = [
    "report_tables",
    "ReportError",
    "build_report",
    "check_installed",
    "fetch_report",
    "make_server",
    "make_store_server",
    "reports_dir",
    "serve_report",
    "stage_data",
    "start_server",
]
