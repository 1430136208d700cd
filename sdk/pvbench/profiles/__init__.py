"""Workload profiles: declared once (catalog.py), rendered to fio job files (jobfile.py)."""

from pvbench.profiles.catalog import DEFAULT_PROFILE_NAME, PROFILES
from pvbench.profiles.jobfile import PROFILE_DEFAULT, load_profile, render_jobfile, resolve_timing
from pvbench.profiles.model import (
    FioTest,
    LatencySlo,
    Profile,
    ProfileError,
    SteadyState,
    Timing,
    parse_latency_us,
    parse_seconds,
    parse_size,
)

__all__ = [
    "DEFAULT_PROFILE_NAME",
    "PROFILES",
    "PROFILE_DEFAULT",
    "FioTest",
    "LatencySlo",
    "Profile",
    "ProfileError",
    "SteadyState",
    "Timing",
    "load_profile",
    "parse_latency_us",
    "parse_seconds",
    "parse_size",
    "render_jobfile",
    "resolve_timing",
]
