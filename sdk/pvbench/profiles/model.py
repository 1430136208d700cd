"""What a workload profile is: named fio tests plus timing defaults."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pvbench.results.metrics import METRICS

RW = Literal["read", "write", "randread", "randwrite", "rw", "randrw", "readwrite", "trim", "randtrim"]

_SIZE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)
# The most fio clients one multi-client cell may run at once (local processes, or pods).
MAX_CLIENTS = 64

_TIME = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_LATENCY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)\s*$", re.IGNORECASE)


class ProfileError(ValueError):
    """A profile, test or override that cannot be run; raised before fio starts."""


def parse_size(text: str | int) -> int:
    """fio-style size → bytes. fio's k/m/g are powers of 1024 (kb_base=1024)."""
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(str(text))
        if not match:
            raise ProfileError(f"size {text!r} is not a size like 4k, 256M or 2G")
        number, unit, _ = match.groups()
        power = "kmgtp".index(unit.lower()) + 1 if unit else 0
        value = int(float(number) * 1024**power)
    if value <= 0:
        raise ProfileError(f"size {text!r} must be positive")
    return value


def parse_seconds(text: str | float | int) -> float:
    """fio-style duration (500ms, 2s, 1m, or plain seconds) → seconds."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = _TIME.match(str(text))
        if not match:
            raise ProfileError(f"duration {text!r} is not a duration like 500ms, 15s or 2m")
        number, unit = match.groups()
        value = float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[unit and unit.lower()]
    if value < 0:
        raise ProfileError(f"duration {text!r} must not be negative")
    return value


def parse_latency_us(text: str | float | int) -> float:
    """A latency target (250us, 1ms, 10ms; a bare number is microseconds) → microseconds, > 0."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        raw = str(text).strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", raw):
            value = float(raw)
        else:
            match = _LATENCY.match(raw)
            if not match:
                raise ProfileError(f"latency target {text!r} is not a latency like 500us, 1ms or 10ms")
            number, unit = match.groups()
            value = float(number) * {"ns": 0.001, "us": 1, "µs": 1, "ms": 1000, "s": 1_000_000}[unit.lower()]
    if not value > 0 or value != value or value == float("inf"):
        raise ProfileError(f"latency target {text!r} must be a finite latency above 0")
    return value


# The rw modes a latency SLO search can rate-limit: one direction, so one rate and one percentile.
SLO_RW = ("read", "write", "randread", "randwrite")
# fio's steady-state options and their short names: set through FioTest.steady_state only.
STEADY_STATE_OPTIONS = ("steadystate", "ss", "steadystate_duration", "ss_dur", "steadystate_ramp_time", "ss_ramp")
# fio options the SLO search sets itself (a test's own would fight the search).
SLO_CONTROLLED = ("rate", "rate_iops", "rate_min", "rate_iops_min", "latency_target", "latency_window")


class LatencySlo(BaseModel):
    """A latency objective: the chosen percentile of a latency must stay at or under the target.

    ``latency`` is what is timed: ``io`` the test's I/Os (total latency, submission to completion,
    as the rest of pvbench reports it) or ``sync`` the fsync/fdatasync calls (fio's ``sync`` block),
    e.g. etcd's "p99 of WAL fdatasync ≤ 10 ms".
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    percentile: float = Field(gt=0, lt=100, description="e.g. 99 for p99, 99.9 for p99.9")
    target_us: float = Field(gt=0, allow_inf_nan=False, description="The latency it must not exceed, µs")
    latency: Literal["io", "sync"] = "io"

    @property
    def label(self) -> str:
        """p99 ≤ 1 ms (of fsync)"""
        target = f"{self.target_us / 1000:g} ms" if self.target_us >= 1000 else f"{self.target_us:g} µs"
        of = " (fsync)" if self.latency == "sync" else ""
        return f"p{self.percentile:g}{of} ≤ {target}"


def fio_seconds(seconds: float) -> str:
    """Seconds → a fio time value (whole ms, so sub-second test timings work)."""
    return f"{int(round(seconds * 1000))}ms"


# fio's steadystate criteria: iops or bw, its deviation from the window's mean or (_slope) its
# least-squares slope, below a limit that is absolute or a percentage of the mean (e.g. iops_slope:0.3%)
_STEADY_CRITERION = re.compile(r"^(iops|bw)(_slope)?:(\d+(?:\.\d+)?)(%?)$")


class SteadyState(BaseModel):
    """fio's steady-state termination (``steadystate``, ``steadystate_duration``,
    ``steadystate_ramp_time``): fio judges the criterion over a rolling window of per-second
    samples, from ``ramp_s`` after the measurement began, and ends the job as soon as it holds.
    The test's runtime is the ceiling: a job never steady runs it whole."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str = Field(description="fio's steadystate value, e.g. iops_slope:0.3% or bw:5%")
    window_s: float = Field(gt=0, allow_inf_nan=False, description="steadystate_duration: the rolling window")
    ramp_s: float = Field(default=0, ge=0, allow_inf_nan=False, description="steadystate_ramp_time")

    @field_validator("criterion")
    @classmethod
    def _criterion_is_fios(cls, value: str) -> str:
        match = _STEADY_CRITERION.match(value.strip())
        if not match:
            raise ProfileError(
                f"steadystate {value!r} is not fio's form: iops, iops_slope, bw or bw_slope, ':' and a limit "
                "(a number, or a percentage of the mean), e.g. iops_slope:0.3%"
            )
        if float(match.group(3)) <= 0:
            raise ProfileError(f"steadystate {value!r}: the limit must be above 0 (nothing would ever be steady)")
        return value.strip()

    def fio_options(self) -> dict[str, str]:
        return {
            "steadystate": self.criterion,
            "steadystate_duration": fio_seconds(self.window_s),
            "steadystate_ramp_time": fio_seconds(self.ramp_s),
        }


class FioTest(BaseModel):
    """One fio job = one cell's workload."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
    title: str
    rw: RW
    bs: str
    iodepth: int = Field(ge=1)
    numjobs: int = Field(default=1, ge=1)
    rwmixread: int | None = Field(default=None, ge=0, le=100)
    fsync: int = Field(default=0, ge=0, description="fio fsync=N: fsync after every N writes; 0 = never")
    group: str | None = None
    load: str | None = None
    # For the sweep's "80% of max": search depth/jobs until IOPS reach this share of the QD32 maximum.
    load_target: float | None = Field(default=None, gt=0, le=1)
    # For latency-slo: search the highest IOPS at which this latency objective holds (cells/slo.py).
    slo: LatencySlo | None = None
    # Stop once fio sees steady state (its steadystate criterion); the runtime is then the most it runs.
    steady_state: SteadyState | None = None
    extra: dict[str, str] = Field(default_factory=dict, description="More fio options, verbatim")
    # The figure a report shows first for this test (the thesis's tables use one per test).
    # Any metric of the catalog (pvbench.results.metrics).
    headline: str | None = None
    # Multi-client cells: this many fio clients (each its own directory or volume) released together
    # behind a barrier; the cell's result is their total (pvbench.fio.clients, pvbench.fio.merge).
    clients: int = Field(default=1, ge=1, le=MAX_CLIENTS)

    @model_validator(mode="after")
    def _clients_alone(self) -> "FioTest":
        if self.clients > 1 and self.load_target:
            raise ProfileError(
                f"test {self.name}: clients={self.clients} and load_target cannot be combined "
                "(the 80%-of-max search measures one client)"
            )
        return self

    @model_validator(mode="after")
    def _steady_state_alone(self) -> "FioTest":
        if self.steady_state is None:
            return self
        # the searches' probes are short runs of this very test; stopping them early would fool them
        why = (
            "load_target (the 80%-of-max search)" if self.load_target else ("a latency objective" if self.slo else None)
        )
        if why:
            raise ProfileError(f"cannot have a steady-state criterion: it already searches with {why}")
        if controlled := sorted(set(self.extra) & set(STEADY_STATE_OPTIONS)):
            raise ProfileError(f"sets {', '.join(controlled)} in extra; use steady_state instead")
        return self

    @model_validator(mode="after")
    def _slo_is_searchable(self) -> "FioTest":
        if self.slo is None:
            if self.headline == "slo_iops":
                raise ProfileError("has headline slo_iops but no latency objective (slo)")
            return self
        why = None
        if self.rw not in SLO_RW:
            why = f"rw={self.rw} mixes directions; a latency objective needs one of {', '.join(SLO_RW)}"
        elif self.load_target:
            why = "it already searches a load level (load_target); a test does one search"
        elif self.clients > 1:
            why = f"clients={self.clients}: the search rates one client"
        elif controlled := sorted(set(self.extra) & set(SLO_CONTROLLED)):
            why = f"the search sets {', '.join(controlled)} itself; remove it from the test"
        elif self.slo.latency == "sync" and not (
            self.fsync or any(self.extra.get(k, "0") not in ("", "0") for k in ("fsync", "fdatasync"))
        ):
            why = "its objective is on fsync latency but it never syncs (set fsync or fdatasync)"
        if why:
            # pydantic wraps this in a ValidationError; its message is kept (jobfile.py shows it)
            raise ProfileError(f"cannot have a latency objective: {why}")
        return self

    @property
    def headline_metric(self) -> str:
        if self.headline:
            return self.headline
        if self.slo:
            return "slo_iops"
        return {"bw": "bw_mib_s", "sequential": "bw_mib_s", "latency": "lat_mean_us"}.get(self.group or "", "iops")

    @field_validator("headline")
    @classmethod
    def _headline_is_a_metric(cls, value: str | None) -> str | None:
        if value is not None and value not in METRICS:
            raise ValueError(f"headline {value!r} is not a metric; known: {', '.join(METRICS)}")
        return value

    @field_validator("bs")
    @classmethod
    def _bs_is_size(cls, value: str) -> str:
        parse_size(value)
        return value

    @property
    def bs_bytes(self) -> int:
        return parse_size(self.bs)

    def fio_options(self) -> dict[str, str]:
        """This test's own fio options (the job section)."""
        options: dict[str, str] = {
            "rw": self.rw,
            "bs": self.bs,
            "iodepth": str(self.iodepth),
            "numjobs": str(self.numjobs),
        }
        if self.rwmixread is not None:
            options["rwmixread"] = str(self.rwmixread)
        if self.fsync:
            options["fsync"] = str(self.fsync)
        options.update(self.extra)
        if self.steady_state is not None:
            options.update(self.steady_state.fio_options())
        return options


class Timing(BaseModel):
    """Ramp, measured runtime and file size of every test in a profile (overridable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ramp_s: float = Field(ge=0)
    runtime_s: float = Field(gt=0)
    size: str = "1G"

    @field_validator("size")
    @classmethod
    def _size_ok(cls, value: str) -> str:
        parse_size(value)
        return value

    @property
    def size_bytes(self) -> int:
        return parse_size(self.size)


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    source: str = Field(description="Where the workload comes from (study, tool)")
    timing: Timing
    tests: tuple[FioTest, ...]
    # Options every test of the profile shares ([global] section), beyond pvbench's own.
    global_options: dict[str, str] = Field(default_factory=dict)

    def test(self, name: str) -> FioTest:
        for test in self.tests:
            if test.name == name:
                return test
        known = ", ".join(t.name for t in self.tests)
        raise ProfileError(f"profile {self.name!r} has no test {name!r}; its tests are: {known}")
