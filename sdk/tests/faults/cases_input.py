"""Bad input that already gets a clear error before anything runs (the baseline of the suite)."""

from __future__ import annotations

import yaml

from faults import Case, Ctx, Outcome, clear_error


def _config(ctx: Ctx, **over) -> str:
    (ctx.tmp / "media").mkdir(exist_ok=True)
    cfg = {
        "campaign": "c",
        "store": str(ctx.tmp / "store"),
        "storage_classes": {"local": str(ctx.tmp / "media")},
        "profiles": ["dbench"],
        "repetitions": 1,
    }
    cfg.update(over)
    path = ctx.tmp / "pvbench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _local_run_refused(name: str, *expect: str, **over) -> Case:
    def run(ctx: Ctx) -> Outcome:
        proc = ctx.cli("local", "run", _config(ctx, **over), "--dry-run")
        ok, shown = clear_error(proc, *expect)
        stored = list((ctx.tmp / "store").rglob("result.json")) if (ctx.tmp / "store").exists() else []
        return Outcome(
            ok and not stored, shown, "nothing ran; store untouched" if not stored else f"{len(stored)} stored"
        )

    return Case("input", name, run)


def _config_with_a_class_twice(ctx: Ctx) -> Outcome:
    """A storage class line copied and not renamed: YAML keeps the last value, one class fewer."""
    (ctx.tmp / "media").mkdir(exist_ok=True)
    path = ctx.tmp / "pvbench.yaml"
    path.write_text(
        f"campaign: c\nstore: {ctx.tmp / 'store'}\nprofiles: [dbench]\nrepetitions: 1\n"
        f"storage_classes:\n  fast: {ctx.tmp / 'media'}\n  fast: {ctx.tmp / 'media'}/other\n"
    )
    proc = ctx.cli("local", "run", str(path), "--dry-run")
    ok, shown = clear_error(proc, "line 7: key 'fast' again (first at line 6)")
    return Outcome(ok and not (ctx.tmp / "store").exists(), shown, "nothing ran; store untouched")


def _store_inside_a_class(ctx: Ctx) -> Outcome:
    """The store's path copied from a class line: results would be written onto the storage under test."""
    media = ctx.tmp / "media"
    proc = ctx.cli("local", "run", _config(ctx, store=str(media / "results")), "--dry-run")
    ok, shown = clear_error(proc, "is inside storage class 'local'")
    return Outcome(ok and not (media / "results").exists(), shown, "nothing ran; store untouched")


def _unmarked_device_written(ctx: Ctx) -> Outcome:
    """A raw device named as a Block class without `scratch: true`, and tests that write."""
    from pvbench.testing.volumes import LoopDevice

    mark = b"the user's data" * 64
    with LoopDevice(ctx.tmp / "disk.img", 64 * 2**20) as device:
        with open(device, "r+b") as f:
            f.write(mark)
        raw = {"raw": {"path": str(device), "volume_mode": "Block"}}
        proc = ctx.cli("local", "run", _config(ctx, storage_classes=raw, tests=["randwrite-iops"], size="8M"))
        ok, shown = clear_error(proc, "is not marked scratch and the test writes to it")
        with open(device, "rb") as f:
            kept = f.read(len(mark)) == mark
    return Outcome(ok and kept, shown.replace(str(device), "/dev/loopN"), "the device's bytes unchanged; nothing ran")


CASES = [
    Case("input", "a storage class twice in the config (YAML would keep the last)", _config_with_a_class_twice),
    _local_run_refused("storage class `Bad_Name` (not DNS-1123)", "Bad_Name", storage_classes={"Bad_Name": "/tmp"}),
    _local_run_refused("unknown profile `nosuch`", "nosuch", profiles=["nosuch"]),
    _local_run_refused("repetitions: -1", "repetitions", repetitions=-1),
    _local_run_refused("size: -1G", "size", size="-1G"),
    Case("input", "the store inside a storage class's directory", _store_inside_a_class),
    Case("input", "a Block class on a device not marked scratch, tests that write", _unmarked_device_written),
    _local_run_refused(
        "a ReadWriteMany class on a local filesystem",
        "access mode ReadWriteMany needs a directory on a shared filesystem",
        storage_classes={"shared": {"path": "media", "access_mode": "ReadWriteMany"}},
    ),
    _local_run_refused(
        "a Block class whose path is a directory",
        "is not a block device (a directory)",
        storage_classes={"raw": {"path": "media", "volume_mode": "Block", "scratch": True}},
    ),
]
