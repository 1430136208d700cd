"""Render profiles to fio job files, and read a user's own job file as a profile."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from pvbench.profiles.catalog import PROFILES
from pvbench.profiles.model import FioTest, Profile, ProfileError, Timing, fio_seconds, parse_seconds, parse_size

CUSTOM_PREFIX = "file:"
# Written for ramp, runtime or size, this means "the profile's own" (as leaving it out does):
# the WorkflowTemplate's default, so that vshn or sweep from the Argo UI keep their timings.
PROFILE_DEFAULT = "profile"

# pvbench's own [global] options. Latency stays on (no gtod_reduce) and percentiles are
# of total latency (lat_percentiles=1) so json+ carries lat_ns.bins to merge across jobs.
BASE_OPTIONS = {
    "ioengine": "libaio",
    "direct": "1",
    "time_based": "1",
    "lat_percentiles": "1",
    "percentile_list": "50:90:99:99.9",
    "filename_format": "pvbench.$jobnum.$filenum",
}


def load_profile(spec: str) -> Profile:
    """A named profile (dbench, vshn, sweep) or ``file:PATH`` for a user's fio job file."""
    if spec.startswith(CUSTOM_PREFIX):
        return profile_from_jobfile(Path(spec[len(CUSTOM_PREFIX) :]))
    try:
        return PROFILES[spec]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ProfileError(
            f"unknown profile {spec!r}; known profiles: {known}, or file:PATH for your own fio job file"
        ) from None


def resolve_timing(profile: Profile, ramp: str | None = None, runtime: str | None = None,
                   size: str | None = None) -> Timing:
    """The profile's timing with the user's overrides applied (and checked).

    An override of None, "" or ``profile`` (PROFILE_DEFAULT) keeps the profile's own value.
    """
    ramp, runtime, size = (None if v in ("", PROFILE_DEFAULT) else v for v in (ramp, runtime, size))
    return Timing(
        ramp_s=parse_seconds(ramp) if ramp is not None else profile.timing.ramp_s,
        runtime_s=parse_seconds(runtime) if runtime is not None else profile.timing.runtime_s,
        size=str(parse_size(size)) if size is not None else profile.timing.size,
    )


def job_options(profile: Profile, timing: Timing, target_dir: str | Path) -> dict[str, str]:
    """The [global] section of every job file pvbench runs."""
    options = dict(BASE_OPTIONS)
    options.update(profile.global_options)
    options.update(
        {
            "directory": str(target_dir),
            "size": str(timing.size_bytes),
            "ramp_time": fio_seconds(timing.ramp_s),
            "runtime": fio_seconds(timing.runtime_s),
        }
    )
    return options


def render_jobfile(profile: Profile, tests: list[FioTest] | tuple[FioTest, ...], timing: Timing,
                   target_dir: str | Path, overrides: dict[str, dict[str, str]] | None = None) -> str:
    """A fio job file: pvbench's globals, then one section per test separated by stonewall.

    ``overrides`` maps a test name to options replacing the test's own (used by the
    80%-of-max search to try other depth/job counts).
    """
    lines = ["; rendered by pvbench — do not edit, change the profile instead", "[global]"]
    lines += [f"{key}={value}" for key, value in job_options(profile, timing, target_dir).items()]
    for test in tests:
        options = test.fio_options()
        options.update((overrides or {}).get(test.name, {}))
        lines += ["", f"[{test.name}]"]
        lines += [f"{key}={value}" for key, value in options.items()]
        lines.append("stonewall")
    return "\n".join(lines) + "\n"


_CONTROLLED = {"directory", "filename", "filename_format", "ramp_time", "runtime", "size", "time_based",
               "output-format", "output"}


def profile_from_jobfile(path: Path) -> Profile:
    """A user's fio job file as a profile: each job section is one test (one cell)."""
    if not path.is_file():
        raise ProfileError(f"fio job file {str(path)!r} does not exist")
    parser = configparser.ConfigParser(allow_no_value=True, strict=False, interpolation=None,
                                       inline_comment_prefixes=(";", "#"))
    parser.optionxform = str  # fio option names are case-sensitive
    try:
        parser.read_string(path.read_text())
    except configparser.Error as exc:
        raise ProfileError(f"{path}: not a fio job file: {exc}") from exc
    glob = {k: (v if v is not None else "1") for k, v in parser["global"].items()} if parser.has_section("global") else {}
    timing = Timing(
        ramp_s=parse_seconds(glob.pop("ramp_time", "2")),
        runtime_s=parse_seconds(glob.pop("runtime", "30")),
        size=glob.pop("size", "1G"),
    )
    for key in _CONTROLLED:
        glob.pop(key, None)
    tests = []
    for section in parser.sections():
        if section == "global":
            continue
        opts = {k: (v if v is not None else "1") for k, v in parser[section].items()}
        for key in _CONTROLLED | {"stonewall", "wait_for_previous"}:
            opts.pop(key, None)
        name = re.sub(r"[^a-z0-9-]+", "-", section.lower()).strip("-") or "job"
        try:
            tests.append(
                FioTest(
                    name=name,
                    title=section,
                    rw=opts.pop("rw", opts.pop("readwrite", "read")),
                    bs=opts.pop("bs", opts.pop("blocksize", "4k")),
                    iodepth=int(opts.pop("iodepth", "1")),
                    numjobs=int(opts.pop("numjobs", "1")),
                    rwmixread=int(opts.pop("rwmixread")) if "rwmixread" in opts else None,
                    fsync=int(opts.pop("fsync", "0")),
                    extra=opts,
                )
            )
        except (ValueError, TypeError) as exc:
            raise ProfileError(f"{path}: job [{section}] cannot be used: {exc}") from exc
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
