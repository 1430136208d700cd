"""Render profiles to fio job files, and read a user's own job file as a profile."""

from __future__ import annotations

import configparser
import os
import re
from pathlib import Path

from pydantic import ValidationError

from pvbench.fio.series import series_log_options
from pvbench.profiles.catalog import PROFILES
from pvbench.profiles.model import (
    STEADY_STATE_OPTIONS,
    FioTest,
    LatencySlo,
    Profile,
    ProfileError,
    SteadyState,
    Timing,
    fio_seconds,
    parse_latency_us,
    parse_seconds,
    parse_size,
)

CUSTOM_PREFIX = "file:"
# Written for ramp, runtime or size, this means "the profile's own" (as leaving it out does):
# the WorkflowTemplate's default, so that vshn or sweep from the Argo UI keep their timings.
PROFILE_DEFAULT = "profile"
# The names of fio's work files in the target: only pvbench makes files named so, and cleanup
# (fio/target.py) removes exactly these names, never anything else in the target.
FIO_FILE_FORMAT = "pvbench-fio.$jobnum.$filenum"

# pvbench's own [global] options. Latency stays on (no gtod_reduce) and percentiles are
# of total latency (lat_percentiles=1) so json+ carries lat_ns.bins to merge across jobs.
BASE_OPTIONS = {
    "ioengine": "libaio",
    "direct": "1",
    "time_based": "1",
    "lat_percentiles": "1",
    "percentile_list": "50:90:99:99.9",
    "filename_format": FIO_FILE_FORMAT,
}

# What fio's job-file parser does to an option value, so a path holding it would not reach fio
# as itself: ';' and '#' start a comment (anywhere in the line), '$' expands ${VAR} and $ncpus,
# $mb_memory, $pagesize (no escape exists), a line break ends the option (the rest would be read
# as more options, e.g. exec_prerun=...), and the value is stripped of surrounding whitespace.
# '\\' is refused so that the one escape fio has ('\\:' for a ':' inside a path) stays unambiguous.
_FIO_UNSAFE = {
    ";": "';' (fio reads the rest of the line as a comment)",
    "#": "'#' (fio reads the rest of the line as a comment)",
    "$": "'$' (fio expands ${VAR}, $ncpus, $mb_memory and $pagesize in job files)",
    "\\": "'\\' (fio's escape character)",
}


def fio_path(path: str | Path) -> str:
    """``path`` as a fio job-file value that fio reads back as exactly this one path.

    ':' separates directories in fio's ``directory=``, so each is escaped as fio's docs say
    (``\\:``); characters fio would interpret and that cannot be escaped are refused with a
    ProfileError, before anything runs.
    """
    text = str(path)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ProfileError(
            f"target path {text!r} contains a line break or control character; "
            "fio's job file cannot hold it (the rest would be read as fio options)"
        )
    if text != text.strip():
        raise ProfileError(f"target path {text!r} starts or ends with whitespace, which fio strips")
    for char, why in _FIO_UNSAFE.items():
        if char in text:
            raise ProfileError(f"target path {text!r} contains {why}; use a directory without it")
    return text.replace(":", "\\:")


def load_profile(spec: str) -> Profile:
    """A named profile (dbench, vshn, sweep, latency-slo) or ``file:PATH`` for a user's fio job file."""
    if spec.startswith(CUSTOM_PREFIX):
        return profile_from_jobfile(Path(spec[len(CUSTOM_PREFIX) :]))
    try:
        return PROFILES[spec]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ProfileError(
            f"unknown profile {spec!r}; known profiles: {known}, or file:PATH for your own fio job file"
        ) from None


def resolve_timing(
    profile: Profile, ramp: str | None = None, runtime: str | None = None, size: str | None = None
) -> Timing:
    """The profile's timing with the user's overrides applied (and checked).

    An override of None, "" or ``profile`` (PROFILE_DEFAULT) keeps the profile's own value.
    """
    ramp, runtime, size = (None if v in ("", PROFILE_DEFAULT) else v for v in (ramp, runtime, size))
    runtime_s = parse_seconds(runtime) if runtime is not None else profile.timing.runtime_s
    if runtime_s <= 0:
        raise ProfileError(f"runtime {runtime!r} must be longer than 0 (fio measures for this long)")
    return Timing(
        ramp_s=parse_seconds(ramp) if ramp is not None else profile.timing.ramp_s,
        runtime_s=runtime_s,
        size=str(parse_size(size)) if size is not None else profile.timing.size,
    )


def job_options(profile: Profile, timing: Timing, target_dir: str | Path, block: bool = False) -> dict[str, str]:
    """The [global] section of every job file pvbench runs.

    fio writes the interval logs of the cell's series (``pvbench.fio.series``) into its working
    directory, a temporary one of the run (``run_fio``), never into the target; so the target
    is given as an absolute path. ``block``: the target is a raw device (a Block volume): fio runs
    on the device itself (``filename=``), no filesystem, no files to lay out; each job gets its own
    ``size`` bytes of it (``offset_increment``), as each job gets its own file on a filesystem."""
    options = dict(BASE_OPTIONS)
    options.update(profile.global_options)
    options.update(series_log_options())
    where = (
        {"filename": fio_path(os.path.abspath(target_dir)), "offset_increment": str(timing.size_bytes)}
        if block
        else {"directory": fio_path(os.path.abspath(target_dir))}
    )
    if block:
        del options["filename_format"]
    options.update(
        {
            **where,
            "size": str(timing.size_bytes),
            "ramp_time": fio_seconds(timing.ramp_s),
            "runtime": fio_seconds(timing.runtime_s),
        }
    )
    return options


def render_jobfile(
    profile: Profile,
    tests: list[FioTest] | tuple[FioTest, ...],
    timing: Timing,
    target_dir: str | Path,
    overrides: dict[str, dict[str, str]] | None = None,
    block: bool = False,
) -> str:
    """A fio job file: pvbench's globals, then one section per test separated by stonewall.

    ``overrides`` maps a test name to options replacing the test's own (used by the
    80%-of-max search to try other depth/job counts). ``block``: ``target_dir`` is a raw device.
    """
    lines = ["; rendered by pvbench — do not edit, change the profile instead", "[global]"]
    lines += [f"{key}={value}" for key, value in job_options(profile, timing, target_dir, block).items()]
    for test in tests:
        options = test.fio_options()
        options.update((overrides or {}).get(test.name, {}))
        lines += ["", f"[{test.name}]"]
        lines += [f"{key}={value}" for key, value in options.items()]
        lines.append("stonewall")
    return "\n".join(lines) + "\n"


_CONTROLLED = {
    "directory",
    "filename",
    "filename_format",
    "offset_increment",
    "ramp_time",
    "runtime",
    "size",
    "time_based",
    "output-format",
    "output",
    *series_log_options(),
    "write_clat_log",  # fio's other log options, which would write elsewhere or change the logs' form
    "write_slat_log",
    "log_compression",
    "log_store_compressed",
    "log_max_value",
    "log_alternate_epoch",
}


def _job_label(section: str, number: int) -> str:
    """How an error names a job section: its name when it looks like one, else its number.
    (An error never echoes a profile file's content: file:PATH may point at a secret by mistake.)"""
    return f"[{section}]" if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", section) else f"section {number}"


def _parse_error(path: Path, exc: configparser.Error) -> str:
    """configparser's messages quote the offending line; say only where it is."""
    line = getattr(exc, "lineno", None)
    if line is None and isinstance(exc, configparser.ParsingError) and exc.errors:
        line = exc.errors[0][0]
    where = f" (line {line})" if line else ""
    if isinstance(exc, configparser.MissingSectionHeaderError):
        what = "it does not start with a [section] header"
    elif isinstance(exc, configparser.ParsingError):
        what = "a line is neither a [section] header nor option=value"
    else:
        what = type(exc).__name__
    return f"{path}: not a fio job file: {what}{where}"


# A job section's own latency objective (latency-bounded IOPS, cells/slo.py): pvbench's options,
# taken out of the section before fio sees it. pvbench_slo_target alone turns the search on.
SLO_KEYS = ("pvbench_slo_target", "pvbench_slo_percentile", "pvbench_slo_latency")


def _slo_of(opts: dict[str, str], path: Path, label: str) -> LatencySlo | None:
    target, percentile, latency = (opts.pop(key, None) for key in SLO_KEYS)
    if target is None:
        if percentile is not None or latency is not None:
            raise ProfileError(f"{path}: job {label}: pvbench_slo_percentile/latency need pvbench_slo_target")
        return None
    try:
        target_us = parse_latency_us(target)
    except ProfileError:
        raise ProfileError(
            f"{path}: job {label}: pvbench_slo_target is not a latency above 0 like 500us, 1ms or 10ms"
        ) from None
    try:
        pct = float(percentile) if percentile is not None else 99.0
    except ValueError:
        pct = -1.0
    if not 0 < pct < 100:
        raise ProfileError(f"{path}: job {label}: pvbench_slo_percentile must be a number above 0 and below 100")
    if (latency or "io") not in ("io", "sync"):
        raise ProfileError(f"{path}: job {label}: pvbench_slo_latency must be io or sync")
    return LatencySlo(percentile=pct, target_us=target_us, latency=latency or "io")


def _steady_state_of(opts: dict[str, str], path: Path, label: str) -> SteadyState | None:
    """A job's (or [global]'s) fio steadystate options, taken out of it, as the test's criterion."""
    found = {key: opts.pop(key) for key in STEADY_STATE_OPTIONS if key in opts}
    criterion = found.get("steadystate", found.get("ss"))
    window = found.get("steadystate_duration", found.get("ss_dur"))
    ramp = found.get("steadystate_ramp_time", found.get("ss_ramp", "0"))
    if not found:
        return None
    if criterion is None or window is None:
        raise ProfileError(
            f"{path}: job {label}: steady state needs both steadystate (e.g. iops_slope:0.3%) and steadystate_duration"
        )
    try:
        window_s, ramp_s = parse_seconds(window), parse_seconds(ramp)
    except ProfileError:
        raise ProfileError(
            f"{path}: job {label}: steadystate_duration and steadystate_ramp_time must be durations like 60s or 5m"
        ) from None
    if window_s <= 0:
        raise ProfileError(f"{path}: job {label}: steadystate_duration must be longer than 0")
    try:
        return SteadyState(criterion=criterion, window_s=window_s, ramp_s=ramp_s)
    except ValidationError as exc:
        error = exc.errors()[0].get("ctx", {}).get("error")
        raise ProfileError(f"{path}: job {label}: {error or 'steadystate is not valid'}") from None


def profile_from_jobfile(path: Path) -> Profile:
    """A user's fio job file as a profile: each job section is one test (one cell).

    Errors name the file, the section and the option, never a value or a line of the file.
    """
    if not path.is_file():
        raise ProfileError(f"fio job file {str(path)!r} does not exist")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a fio job file (not text)") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot be read: {exc.strerror or type(exc).__name__}") from None
    parser = configparser.ConfigParser(
        allow_no_value=True, strict=False, interpolation=None, inline_comment_prefixes=(";", "#")
    )
    parser.optionxform = str  # fio option names are case-sensitive
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise ProfileError(_parse_error(path, exc)) from None
    glob = (
        {k: (v if v is not None else "1") for k, v in parser["global"].items()} if parser.has_section("global") else {}
    )
    try:
        timing = Timing(
            ramp_s=parse_seconds(glob.pop("ramp_time", "2")),
            runtime_s=parse_seconds(glob.pop("runtime", "30")),
            size=glob.pop("size", "1G"),
        )
    except (ProfileError, ValidationError):
        raise ProfileError(
            f"{path}: [global] ramp_time, runtime or size is not a valid duration/size (runtime must be longer than 0)"
        ) from None
    for key in _CONTROLLED:
        glob.pop(key, None)
    # [global]'s steady state is every job's (a job's own replaces it)
    global_steady = _steady_state_of(glob, path, "[global]")
    tests = []
    numeric = {"iodepth": "1", "numjobs": "1", "fsync": "0"}
    for number, section in enumerate(parser.sections(), start=1):
        if section == "global":
            continue
        label = _job_label(section, number)
        opts = {k: (v if v is not None else "1") for k, v in parser[section].items()}
        for key in _CONTROLLED | {"stonewall", "wait_for_previous"}:
            opts.pop(key, None)
        name = re.sub(r"[^a-z0-9-]+", "-", section.lower()).strip("-") or "job"
        slo = _slo_of(opts, path, label)
        steady_state = _steady_state_of(opts, path, label) or global_steady
        values: dict[str, int | None] = {}
        for key, default in {**numeric, "rwmixread": None}.items():
            raw = opts.pop(key, default)
            try:
                values[key] = None if raw is None else int(raw)
            except ValueError:
                raise ProfileError(f"{path}: job {label}: {key} is not a whole number") from None
        try:
            tests.append(
                FioTest(
                    name=name,
                    title=section,
                    rw=opts.pop("rw", opts.pop("readwrite", "read")),
                    bs=opts.pop("bs", opts.pop("blocksize", "4k")),
                    extra=opts,
                    slo=slo,
                    steady_state=steady_state,
                    **values,
                )
            )
        except (ProfileError, ValidationError) as exc:
            # the test's own checks (e.g. a latency objective on a mixed rw) say what is wrong
            errors = exc.errors() if isinstance(exc, ValidationError) else []
            whole = [e for e in errors if not e["loc"] and isinstance(e.get("ctx", {}).get("error"), ProfileError)]
            if whole:
                raise ProfileError(f"{path}: job {label} {whole[0]['ctx']['error']}") from None
            fields = sorted({str(e["loc"][0]) for e in errors} if errors else {"bs"})
            raise ProfileError(
                f"{path}: job {label} cannot be used: {', '.join(fields)} not valid for pvbench "
                "(rw: read, write, randread, randwrite, rw, randrw, readwrite, trim or randtrim; "
                "bs a size; iodepth and numjobs at least 1; rwmixread 0-100)"
            ) from None
    if not tests:
        raise ProfileError(f"{path}: no job sections (only [global]?)")
    return Profile(
        name="custom",
        description=f"User job file {path.name}",
        source=str(path),
        timing=timing,
        tests=tuple(tests),
        global_options=glob,
    )
