"""fio's own interval logs → the cell second by second (``CellSeries``).

Every cell's job file asks fio for its interval logs (``series_log_options``): per job and
per interval of ``SERIES_INTERVAL_MS``, the IOPS, the bandwidth (KiB/s), the mean total latency
(``write_lat_log``'s ``_lat`` log, ns) — all three ``log_avg_msec`` averages — and, per
``log_hist_msec`` window, fio's latency histogram (``write_hist_log``). pvbench never samples
anything itself; it only adds fio's numbers up:

- IOPS and MiB/s are summed over fio's jobs (numjobs>1 writes one log per job) and, in a
  multi-client cell, over the clients; the mean latency is weighted by each job's IOPS;
- p50/p99/p99.9 come from the jobs' (and clients') histograms of the interval merged, with
  fio's own bin values (``plat_idx_to_val``, stat.c) and threshold rule
  (``pvbench.fio.parse.percentile_from_bins``): never averaged.

**Which latency.** The histogram log is of *completion* latency (clat: submission to
completion, without the submission latency slat): fio fills it from ``add_clat_sample`` whatever
``lat_percentiles`` says. The series' mean (``lat_mean_us``) is of *total* latency (lat), as is the
cell's own mean; the percentiles of the series are clat ones, slightly below total-latency ones.

**Ramp.** fio 3.33 writes no log entry during ``ramp_time``: it takes samples only once the ramp
is over (it then restarts the job's clock, ``td->epoch``). So the series starts at the measurement;
an entry that would still fall before a job's first interval is dropped all the same.

**Alignment.** Times are Unix ms (``log_unix_epoch``). Within one fio run, a job's first
interval starts one interval before its first IOPS entry; a job that started later (``startdelay``)
is placed by that start, in whole intervals, relative to the run's earliest job. fio schedules the
average logs on a fixed grid, so a job's entries map to intervals by rounding; a histogram entry is
written by the completion that closes its window, slightly late and later with each window, so it
counts for the interval it closes (rounding down). A multi-client cell's runs (one per client) are
aligned by interval index: the clients are released together behind a barrier, so interval i of
each is the same second, give or take the start skew the result reports.

**The end.** fio logs a job's last, cut-short interval or not, depending on where its end falls:
the cell's last interval is kept only if every job (and client) that logged the one before logged
it too, so it is never a partial sum. fio writes no histogram for the last window, so the last
interval's percentiles are usually null; so are those of an interval without a completion.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from pvbench.fio.parse import NS_PER_US, percentile_from_bins
from pvbench.results.schema import CellSeries, SecondSeries

# The one interval of every series: fio's log_avg_msec and log_hist_msec.
SERIES_INTERVAL_MS = 1000
# fio names its logs <prefix>_<kind>.<job number>.log, in its working directory.
LOG_PREFIX = "pvbench"
LOG_SUFFIX = ".log"
# fio's histogram (stat.h): FIO_IO_U_PLAT_GROUP_NR groups of 2**FIO_IO_U_PLAT_BITS bins
FIO_IO_U_PLAT_BITS = 6
FIO_IO_U_PLAT_VAL = 1 << FIO_IO_U_PLAT_BITS
FIO_IO_U_PLAT_NR = 29 * FIO_IO_U_PLAT_VAL
# fio's data direction column: 0 read, 1 write (2, trim, has no series)
_DIRECTIONS = {0: "read", 1: "write"}
# A histogram entry is written just after its window ends; this much earlier still counts as that window.
_HIST_SLACK = 0.02
_LOG_NAME = re.compile(rf"^{LOG_PREFIX}_(bw|iops|lat|clat_hist)\.(\d+){re.escape(LOG_SUFFIX)}$")
_PERCENTILES = {"lat_p50_us": 50.0, "lat_p99_us": 99.0, "lat_p999_us": 99.9}


def series_log_options() -> dict[str, str]:
    """The options that make fio write the logs a series is made of (in its working directory)."""
    interval = str(SERIES_INTERVAL_MS)
    return {
        "write_bw_log": LOG_PREFIX,
        "write_iops_log": LOG_PREFIX,
        "write_lat_log": LOG_PREFIX,
        "write_hist_log": LOG_PREFIX,
        "log_avg_msec": interval,
        "log_hist_msec": interval,
        "log_hist_coarseness": "0",  # every bin: percentiles as fine as fio's own
        "log_unix_epoch": "1",  # one clock for every job of the run (startdelay)
        "per_job_logs": "1",  # one log per job: its own entries, never interleaved
        "log_offset": "0",
    }


def is_series_log(name: str) -> bool:
    """A file fio wrote because of ``series_log_options`` (its slat and clat average logs too)."""
    return name.startswith(LOG_PREFIX + "_") and name.endswith(LOG_SUFFIX)


def plat_idx_to_val(idx: int) -> int:
    """The latency (ns) fio gives histogram bin ``idx``: fio's stat.c ``plat_idx_to_val``, the
    middle of the bin (fio's tools/hist/fiologparser_hist.py uses the same rule). json+'s ``bins``
    are keyed by exactly this value."""
    if not 0 <= idx < FIO_IO_U_PLAT_NR:
        raise ValueError(f"histogram bin {idx} is outside fio's {FIO_IO_U_PLAT_NR} bins")
    if idx < (FIO_IO_U_PLAT_VAL << 1):  # the first two groups are exact
        return idx
    error_bits = (idx >> FIO_IO_U_PLAT_BITS) - 1
    base = 1 << (error_bits + FIO_IO_U_PLAT_BITS)
    k = idx % FIO_IO_U_PLAT_VAL
    # base + (k + 0.5) * 2**error_bits, an integer since error_bits >= 1 here (as fio's unsigned long long)
    return base + (((2 * k + 1) << error_bits) >> 1)


@dataclass
class LogEntry:
    t_ms: int
    direction: str
    value: float


@dataclass
class HistEntry:
    t_ms: int
    direction: str
    bins: dict[int, int]  # latency (ns, plat_idx_to_val) -> count in the window


def read_avg_log(text: str) -> list[LogEntry]:
    """A ``log_avg_msec`` log (bw, iops or lat): ``time, value, direction, bs, …`` per line."""
    entries = []
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 3:
            continue
        direction = _DIRECTIONS.get(int(fields[2]))
        if direction is not None:
            entries.append(LogEntry(int(fields[0]), direction, float(fields[1])))
    return entries


def read_hist_log(text: str) -> list[HistEntry]:
    """A ``log_hist_msec`` log: ``time, direction, bs, bin 0, …, bin 1855`` per line; each line
    holds the window's own counts (fio writes the difference to the previous window)."""
    entries = []
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 3:
            continue
        counts = [int(v) for v in fields[3:]]
        if len(counts) != FIO_IO_U_PLAT_NR:
            raise ValueError(
                f"a histogram log line has {len(counts)} bins, not fio's {FIO_IO_U_PLAT_NR} "
                "(log_hist_coarseness must be 0)"
            )
        direction = _DIRECTIONS.get(int(fields[1]))
        if direction is not None:
            bins = {plat_idx_to_val(i): c for i, c in enumerate(counts) if c}
            entries.append(HistEntry(int(fields[0]), direction, bins))
    return entries


@dataclass
class _Interval:
    """One direction's interval, summed over jobs (and runs)."""

    jobs: int = 0  # jobs whose IOPS log has the interval: an interval is one of the IOPS log's
    iops: float = 0.0
    bw_kib_s: float = 0.0
    lat_weighted_ns: float = 0.0  # sum of mean latency × weight
    lat_weight: float = 0.0
    bins: dict[int, int] = field(default_factory=lambda: defaultdict(int))


def _job_logs(logs: dict[str, bytes]) -> dict[int, dict[str, str]]:
    """{job number: {kind: text}} of one fio run's log files (names without folders)."""
    jobs: dict[int, dict[str, str]] = defaultdict(dict)
    for name, data in logs.items():
        match = _LOG_NAME.match(PurePosixPath(name).name)
        if match:
            jobs[int(match.group(2))][match.group(1)] = data.decode(errors="replace")
    return jobs


def _interval_index(t_ms: int, start_ms: int, interval_ms: int, closes: bool = False) -> int:
    """Which interval of its job (from 1) a log entry is: an average log's by rounding (fio's grid,
    give or take 1 ms); a histogram's (``closes``) is the one its late entry closes."""
    position = (t_ms - start_ms) / interval_ms
    return int(position + _HIST_SLACK) if closes else round(position)


def _add_run(intervals: dict[tuple[str, int], _Interval], logs: dict[str, bytes], interval_ms: int) -> None:
    """Add one fio run's jobs to ``intervals``, keyed (direction, interval index from 1)."""
    jobs = {n: kinds for n, kinds in _job_logs(logs).items() if kinds.get("iops")}
    avg = {n: {k: read_avg_log(kinds.get(k, "")) for k in ("iops", "bw", "lat")} for n, kinds in jobs.items()}
    starts = {n: min(e.t_ms for e in a["iops"]) - interval_ms for n, a in avg.items() if a["iops"]}
    if not starts:
        return
    earliest = min(starts.values())
    for number, kinds in avg.items():
        if number not in starts:
            continue
        start = starts[number]
        offset = round((start - earliest) / interval_ms)  # a later job's place in the run

        # kind -> (direction, interval) -> values; two entries in one interval (fio's 1 ms slack
        # around a boundary) are averaged, so a rate stays a rate
        values: dict[str, dict[tuple[str, int], list[float]]] = {k: defaultdict(list) for k in kinds}
        for kind, entries in kinds.items():
            for entry in entries:
                i = _interval_index(entry.t_ms, start, interval_ms)
                if i >= 1:  # before the job's first interval: ramp (fio 3.33 logs none there)
                    values[kind][(entry.direction, offset + i)].append(entry.value)
        for key in values["iops"].keys() | values["bw"].keys() | values["lat"].keys():
            slot = intervals.setdefault(key, _Interval())
            iops = _mean(values["iops"].get(key))
            slot.jobs += iops is not None
            slot.iops += iops or 0.0
            slot.bw_kib_s += _mean(values["bw"].get(key)) or 0.0
            lat = _mean(values["lat"].get(key))
            if lat is not None:
                weight = iops or 1.0  # the job's share of the interval's I/Os
                slot.lat_weighted_ns += lat * weight
                slot.lat_weight += weight
        for entry in read_hist_log(jobs[number].get("clat_hist", "")):
            i = _interval_index(entry.t_ms, start, interval_ms, closes=True)
            if i < 1:
                continue
            slot = intervals.setdefault((entry.direction, offset + i), _Interval())
            for value, count in entry.bins.items():
                slot.bins[value] += count


def cell_series(runs: list[dict[str, bytes]], interval_ms: int = SERIES_INTERVAL_MS) -> CellSeries | None:
    """The cell's series from its fio runs' log files (one run; or one per client, aligned by
    interval index). ``runs``: each run's files, {file name: content}. None if fio logged nothing."""
    intervals: dict[tuple[str, int], _Interval] = {}
    for logs in runs:
        _add_run(intervals, logs, interval_ms)
    directions = []
    for direction in ("read", "write"):
        # the intervals fio's IOPS logs have (a latency or histogram entry alone does not make one)
        ordered = sorted(i for (d, i), slot in intervals.items() if d == direction and slot.jobs)
        # fio may or may not log a job's last, cut-short interval: the last interval counts only if
        # every job of the one before logged it too (else it is a partial sum)
        while len(ordered) > 1 and intervals[(direction, ordered[-1])].jobs < intervals[(direction, ordered[-2])].jobs:
            ordered.pop()
        if not ordered:
            continue
        slots = [intervals[(direction, i)] for i in ordered]
        percentiles = {
            name: [_us(percentile_from_bins(s.bins, pct)) if s.bins else None for s in slots]
            for name, pct in _PERCENTILES.items()
        }
        directions.append(
            SecondSeries(
                direction=direction,
                t_s=[i * interval_ms / 1000 for i in ordered],
                iops=[s.iops for s in slots],
                bw_mib_s=[s.bw_kib_s / 1024 for s in slots],
                lat_mean_us=[s.lat_weighted_ns / s.lat_weight / NS_PER_US if s.lat_weight else None for s in slots],
                **percentiles,
            )
        )
    return CellSeries(interval_ms=interval_ms, directions=directions) if directions else None


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / NS_PER_US


def logs_archive(runs: list[dict[str, bytes]]) -> bytes | None:
    """The raw logs as one gzipped tar (stored beside fio.json): one run's files at its top level,
    several runs' (a multi-client cell's) under ``client-<n>/``. None if there are none."""
    members = []
    for number, logs in enumerate(runs, start=1):
        folder = f"client-{number}/" if len(runs) > 1 else ""
        members += [(folder + name, data) for name, data in sorted(logs.items())]
    if not members:
        return None
    buffer = io.BytesIO()
    # mtime 0 and sorted members: the same logs make the same bytes
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def read_logs_archive(data: bytes) -> list[dict[str, bytes]]:
    """``logs_archive``'s runs back: [{file name: content}], client 1 first."""
    runs: dict[str, dict[str, bytes]] = defaultdict(dict)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            path = PurePosixPath(member.name)
            folder = path.parent.name if len(path.parts) > 1 else ""
            runs[folder][path.name] = tar.extractfile(member).read()

    def order(folder: str) -> int:
        return int(folder.removeprefix("client-")) if folder.startswith("client-") else 0

    return [runs[f] for f in sorted(runs, key=order)]
