"""The versioned result document: one per benchmark cell, whatever produced it."""

from pvbench.results.schema import (
    SCHEMA_VERSION,
    CellIdentity,
    DirectionMetrics,
    Provenance,
    ResultDocument,
    WorkloadSpec,
)

__all__ = [
    "SCHEMA_VERSION",
    "CellIdentity",
    "DirectionMetrics",
    "Provenance",
    "ResultDocument",
    "WorkloadSpec",
]
