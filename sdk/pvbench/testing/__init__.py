"""What the tests (sdk/tests) and pvbench's own benchmarks (pvbench_lab) share.

minio.py     — a real MinIO server on loopback, the tools of .tools/bin, a free port
documents.py — synthetic result documents, written to a store
cluster.py   — the real Kubernetes node of ci/cluster/up.sh: the chart, Argo, its MinIO
tables.py    — Parquet tables compared row for row; the occasions' rows against their observations

Not used by pvbench itself: it runs from a checkout of the repository (REPO).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# The thesis's published per-run values, kept in the repository (examples/README.md says where from).
THESIS_CSV = REPO / "examples" / "thesis-azure-runs.csv"
