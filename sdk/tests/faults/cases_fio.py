"""fio, targets, profiles and the local runner: nothing lost, nothing injected.

Only files pvbench made are removed from a target; a target path reaches fio as exactly that
path (or is refused); an error about a profile file never prints the file; a SIGTERM stops fio
with pvbench and keeps what was stored; repetitions have one upper bound; a run id is never
reused silently.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import yaml

from faults import PVBENCH, REPO, Case, Ctx, Outcome, clear_error

QUICK = {"ramp": "200ms", "runtime": "500ms", "size": "16M"}
SECRET = "eyJhbGciOiJSUzI1NiJ9.s3cr3t-token-value"
MATRIX = ["--campaign", "c", "--run", "r", "--occasion", "o", "--storage-classes", "local"]


def _config(ctx: Ctx, name: str = "pvbench-run.yaml", store: str = "store", **over) -> Path:
    """A one-cell local config (dbench randread-lat, quick timing) in the case's directory."""
    (ctx.tmp / "media").mkdir(exist_ok=True)
    cfg = {
        "campaign": "c",
        "store": str(ctx.tmp / store),
        "spool": str(ctx.tmp / "spool"),
        "storage_classes": {"local": str(ctx.tmp / "media")},
        "profiles": ["dbench"],
        "tests": ["randread-lat"],
        "repetitions": 1,
        **QUICK,
    }
    cfg.update(over)
    path = ctx.tmp / name
    path.write_text(yaml.safe_dump(cfg))
    return path


def _results(store: Path) -> list[Path]:
    try:  # polled while pvbench creates the store's folders: one may not be there yet
        return sorted(store.rglob("result.json"))
    except FileNotFoundError:
        return []


def _fio_leftovers(*dirs: Path) -> list[Path]:
    return [p for d in dirs if d.is_dir() for p in d.iterdir() if p.name.startswith("pvbench-fio")]


def _refused(ctx: Ctx, proc, *expect: str, extra_ok: bool = True, kept: str = "") -> Outcome:
    ok, shown = clear_error(proc, *expect)
    stored = _results(ctx.tmp / "store")
    what = kept or ("nothing ran; store untouched" if not stored else f"{len(stored)} stored")
    return Outcome(ok and extra_ok and not stored, shown, what)


# ------------------------------------------------------------------ 1. only pvbench's own files go
def user_files_in_target(ctx: Ctx) -> Outcome:
    media = ctx.tmp / "media"
    media.mkdir()
    mine = {"pvbench.notes.txt": "my notes\n", "pvbench.yaml": "campaign: mine\n", "pvbench.0.0": "not fio's\n"}
    for name, text in mine.items():
        (media / name).write_text(text)
    proc = ctx.cli("local", "run", str(_config(ctx)), "--no-aggregate")
    kept = [n for n, text in mine.items() if (media / n).is_file() and (media / n).read_text() == text]
    stored = _results(ctx.tmp / "store")
    left = _fio_leftovers(media)
    ok = proc.returncode == 0 and len(kept) == len(mine) and len(stored) == 1 and not left
    return Outcome(
        ok,
        f"exit {proc.returncode}: 1 cell measured in a directory holding the user's files",
        f"{len(kept)}/{len(mine)} user files untouched ({', '.join(mine)}); {len(stored)} stored; "
        f"fio's own files removed" + (f" — left: {[p.name for p in left]}" if left else ""),
    )


# ------------------------------------------------------------------ 2. target paths reach fio verbatim
def newline_exec_prerun(ctx: Ctx) -> Outcome:
    proc = ctx.cli(
        "local", "run", str(_config(ctx, storage_classes={"local": "media\nexec_prerun=touch PWNED"})), "--no-aggregate"
    )
    pwned = (ctx.tmp / "PWNED").exists()
    return _refused(
        ctx,
        proc,
        "line break",
        extra_ok=not pwned,
        kept="nothing ran (no exec_prerun); store untouched" if not pwned else "fio ran touch PWNED",
    )


def colon_in_path(ctx: Ctx) -> Outcome:
    """'c:d' is one directory: escaped as fio's docs say ('\\:'), measured there, nothing written to 'c'."""
    proc = ctx.cli("local", "run", str(_config(ctx, storage_classes={"local": "c:d"})), "--no-aggregate")
    stored = _results(ctx.tmp / "store")
    target = [json.loads(p.read_text())["provenance"]["target_path"] for p in stored]
    wrong = (ctx.tmp / "c").exists()
    left = _fio_leftovers(ctx.tmp / "c:d")
    ok = proc.returncode == 0 and len(stored) == 1 and target == [str(ctx.tmp / "c:d")] and not wrong and not left
    err = " ".join(proc.stderr.split())[-150:] if proc.returncode else ""
    return Outcome(
        ok,
        f"exit {proc.returncode}: measured in c:d (fio's directory= escapes ':' as '\\:') {err}",
        f"{len(stored)} stored; nothing written to a directory 'c'"
        if not wrong
        else "fio wrote into another directory 'c'",
    )


def env_var_in_path(ctx: Ctx) -> Outcome:
    home = ctx.tmp / "home"
    home.mkdir()
    proc = ctx.cli(
        "local",
        "run",
        str(_config(ctx, storage_classes={"local": "${HOME}"})),
        "--no-aggregate",
        env={"HOME": str(home)},
    )
    touched = list(home.iterdir())
    return _refused(
        ctx,
        proc,
        "'$'",
        extra_ok=not touched,
        kept="nothing ran; $HOME untouched" if not touched else f"fio wrote {touched} into $HOME",
    )


def env_var_in_step_target(ctx: Ctx) -> Outcome:
    home = ctx.tmp / "home"
    home.mkdir()
    (ctx.tmp / "${HOME}").mkdir()  # the directory exists, named so; fio would expand the name to $HOME
    proc = ctx.cli(
        "fio-step",
        "--target",
        "${HOME}",
        "--campaign",
        "c",
        "--run",
        "r",
        "--occasion",
        "o",
        "--storage-class",
        "local",
        "--profile",
        "dbench",
        "--workload",
        "randread-lat",
        "--rep",
        "1",
        "--ramp",
        QUICK["ramp"],
        "--runtime",
        QUICK["runtime"],
        "--size",
        QUICK["size"],
        "--store",
        str(ctx.tmp / "store"),
        env={"HOME": str(home)},
    )
    touched = list(home.iterdir())
    return _refused(
        ctx,
        proc,
        "'$'",
        extra_ok=not touched,
        kept="nothing ran; $HOME untouched" if not touched else f"fio wrote {touched} into $HOME",
    )


def target_is_a_file(ctx: Ctx) -> Outcome:
    (ctx.tmp / "media.img").write_text("mine\n")
    proc = ctx.cli("local", "run", str(_config(ctx, storage_classes={"local": "media.img"})), "--dry-run")
    intact = (ctx.tmp / "media.img").read_text() == "mine\n"
    return _refused(
        ctx,
        proc,
        "is a file, not a directory",
        extra_ok=intact,
        kept="nothing ran; the file untouched" if intact else "the file was changed",
    )


# ------------------------------------------------------------------ 3. profile files are never echoed
def _secret_file(ctx: Ctx, text: str) -> Path:
    path = ctx.tmp / "token"
    path.write_text(text)
    return path


def _not_echoed(ctx: Ctx, proc, *expect: str) -> Outcome:
    ok, shown = clear_error(proc, *expect)
    leaked = SECRET in proc.stderr or SECRET in proc.stdout or "s3cr3t" in proc.stderr
    return Outcome(
        ok and not leaked,
        shown.replace(str(ctx.tmp), "…"),
        "nothing ran; the file's content is not in the output" if not leaked else "the file's content was printed",
    )


def profile_token_validate(ctx: Ctx) -> Outcome:
    token = _secret_file(ctx, SECRET + "\n")
    proc = ctx.cli("validate", *MATRIX, "--profiles", f"file:{token}")
    return _not_echoed(ctx, proc, "not a fio job file")


def profile_token_local_run(ctx: Ctx) -> Outcome:
    token = _secret_file(ctx, SECRET + "\n")
    proc = ctx.cli("local", "run", str(_config(ctx, profiles=[f"file:{token}"], tests=[])), "--dry-run")
    return _not_echoed(ctx, proc, "not a fio job file")


def profile_ini_secret(ctx: Ctx) -> Outcome:
    """An INI-looking secret (a credentials file): the bad value is named, not printed."""
    token = _secret_file(ctx, f"[default]\niodepth={SECRET}\n")
    proc = ctx.cli("profiles", "show", f"file:{token}")
    return _not_echoed(ctx, proc, "iodepth")


# ------------------------------------------------------------------ 4. SIGTERM mid-cell
def _processes_under(path: Path) -> list[int]:
    """PIDs whose command line mentions ``path`` (this case's own fio, nothing else)."""
    pids = []
    for proc_dir in Path("/proc").iterdir():
        if proc_dir.name.isdigit():
            try:
                cmdline = (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(path) in cmdline:
                pids.append(int(proc_dir.name))
    return pids


def _is_fio(pid: int) -> bool:
    """fio itself (not the keeper that starts it, whose command line names the job file too)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "fio"
    except OSError:
        return False


def sigterm_mid_cell(ctx: Ctx) -> Outcome:
    tmp = ctx.tmp / "tmp"  # fio's job files (pvbench-fio-*) go here: the case sees only its own
    tmp.mkdir()
    config = _config(ctx, repetitions=3, runtime="1500ms")
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO / "sdk")}
    proc = subprocess.Popen(
        PVBENCH + ["local", "run", str(config), "--no-aggregate", "--run", "term"],
        cwd=ctx.tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    # wait for the first stored result, then for the next cell's fio to be running (laying out or
    # measuring): its process is there, however long it took to start on a busy machine
    while time.monotonic() < deadline and not _results(ctx.tmp / "store"):
        time.sleep(0.05)
    fio_before: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None and not fio_before:
        if [p for p in tmp.glob("pvbench-fio-*") if (p / "job.fio").exists()]:
            fio_before = [pid for pid in _processes_under(tmp) if _is_fio(pid)]
        if not fio_before:
            time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
    time.sleep(0.2)
    orphans = _processes_under(tmp)
    temp_left = list(tmp.glob("pvbench-fio-*"))
    files_left = _fio_leftovers(ctx.tmp / "media")
    stored = _results(ctx.tmp / "store")
    intact = all(json.loads(p.read_text())["identity"]["run"] == "term" for p in stored)
    err = " ".join(stderr.split())
    ok = (
        proc.returncode not in (0, None)
        and "Traceback" not in stderr
        and "SIGTERM" in err
        and bool(fio_before)
        and not orphans
        and not temp_left
        and not files_left
        and 1 <= len(stored) < 3
        and intact
    )
    for pid in orphans:  # never leave this case's own fio behind, even when the rule did not hold
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    line = next((ln for ln in stderr.splitlines() if "error:" in ln), err[-160:])
    return Outcome(
        ok,
        f"exit {proc.returncode}: {' '.join(line.split())[:200]}",
        f"{len(stored)} stored result(s) kept; fio stopped (orphans: {len(orphans)}), "
        f"temp dirs left: {len(temp_left)}, fio files left: {len(files_left)}",
    )


# ------------------------------------------------------------------ 5. durations and repetitions
def validate_runtime_zero(ctx: Ctx) -> Outcome:
    return _refused(ctx, ctx.cli("validate", *MATRIX, "--runtime", "0s"), "runtime")


def validate_huge_repetitions(ctx: Ctx) -> Outcome:
    t0 = time.monotonic()
    proc = ctx.cli("validate", *MATRIX, "--repetitions", "1000000000", timeout=30)
    return _refused(ctx, proc, "repetitions", "100", extra_ok=time.monotonic() - t0 < 20)


def expand_huge_repetitions(ctx: Ctx) -> Outcome:
    """What the Argo template runs first: a Workflow submitted with repetitions outside the enum."""
    proc = ctx.cli("expand", *MATRIX, "--repetitions", "1000000000", timeout=30)
    return _refused(ctx, proc, "repetitions", "100", extra_ok=not proc.stdout.strip())


def ci_check_huge_max_reps(ctx: Ctx) -> Outcome:
    """What the Argo adaptive loop asks between rounds, with a cap around the template's enum."""
    proc = ctx.cli(
        "stats",
        "ci-check",
        "--store",
        str(ctx.tmp / "store"),
        "--campaign",
        "c",
        "--max-reps",
        "1000000000",
        timeout=30,
    )
    return _refused(ctx, proc, "max_repetitions", "100")


def config_huge_repetitions(ctx: Ctx) -> Outcome:
    proc = ctx.cli("local", "run", str(_config(ctx, repetitions=1_000_000_000)), "--dry-run", timeout=30)
    return _refused(ctx, proc, "repetitions", "100")


# ------------------------------------------------------------------ 6. run ids
def same_run_twice(ctx: Ctx) -> Outcome:
    config = str(_config(ctx))
    first = ctx.cli("local", "run", config, "--run", "r1", "--no-aggregate")
    before = {p: p.read_bytes() for p in _results(ctx.tmp / "store")}
    again = ctx.cli("local", "run", config, "--run", "r1", "--no-aggregate")
    after = {p: p.read_bytes() for p in _results(ctx.tmp / "store")}
    ok, shown = clear_error(again, "already has", "r1")
    same = first.returncode == 0 and len(before) == 1 and before == after
    return Outcome(
        ok and same,
        shown,
        "the first run's result kept byte for byte"
        if same
        else f"first run: exit {first.returncode}, {len(before)} → {len(after)} results, changed",
    )


def two_runs_same_second(ctx: Ctx) -> Outcome:
    """Two runs without --run started at once (one store, their own targets): two run ids, both kept."""
    configs = [_config(ctx, name=f"run{i}.yaml", storage_classes={"local": str(ctx.tmp / f"media{i}")}) for i in (1, 2)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "sdk")}
    procs = [
        subprocess.Popen(
            PVBENCH + ["local", "run", str(c), "--no-aggregate"],
            cwd=ctx.tmp,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for c in configs
    ]
    codes = [p.wait(timeout=120) for p in procs]
    runs = sorted({json.loads(p.read_text())["identity"]["run"] for p in _results(ctx.tmp / "store")})
    stored = _results(ctx.tmp / "store")
    ok = codes == [0, 0] and len(runs) == 2 and len(stored) == 2
    return Outcome(
        ok,
        f"exit {codes}: run ids {', '.join(runs)}",
        f"{len(stored)} results under {len(runs)} run id(s)" + ("" if ok else " — one run overwrote the other"),
    )


CASES = [
    Case(
        "fio",
        "target holds the user's `pvbench.notes.txt`, `pvbench.yaml`, `pvbench.0.0`",
        user_files_in_target,
        needs=("fio",),
    ),
    Case("fio", "target path with a newline + `exec_prerun=touch …`", newline_exec_prerun, needs=("fio",)),
    Case("fio", "target path `c:d` (fio splits directory= on ':')", colon_in_path, needs=("fio",)),
    Case("fio", "target path `${HOME}` (fio expands ${VAR})", env_var_in_path, needs=("fio",)),
    Case("fio", "fio-step --target `${HOME}` (a directory named so)", env_var_in_step_target, needs=("fio",)),
    Case("fio", "target is a file, not a directory", target_is_a_file),
    Case("fio", "validate --profiles file:TOKEN (a mounted secret)", profile_token_validate),
    Case("fio", "local run with profile file:TOKEN", profile_token_local_run),
    Case("fio", "profile file:TOKEN shaped like INI, bad value", profile_ini_secret),
    Case("fio", "SIGTERM to `pvbench local run` mid-cell", sigterm_mid_cell, needs=("fio",)),
    Case("fio", "validate --runtime 0s", validate_runtime_zero),
    Case("fio", "validate --repetitions 1000000000", validate_huge_repetitions),
    Case("fio", "expand --repetitions 1000000000 (a Workflow around the template's enum)", expand_huge_repetitions),
    Case("fio", "local config repetitions: 1000000000", config_huge_repetitions),
    Case("fio", "stats ci-check --max-reps 1000000000", ci_check_huge_max_reps),
    Case("fio", "the same --run twice", same_run_twice, needs=("fio",)),
    Case("fio", "two local runs started in the same second (no --run)", two_runs_same_second, needs=("fio",)),
]
