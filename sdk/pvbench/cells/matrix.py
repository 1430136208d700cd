"""Expand storage classes × profile tests × repetitions into cells, in a seeded random order.

Within each repetition round, the cells of all storage classes are shuffled together
(randomized interleaving): slow drift of the machine or the network over the run then
spreads over every class instead of masquerading as a difference between them. The
same seed gives the same order, so a run can be repeated exactly.
"""

from __future__ import annotations

import random

from pvbench.cells.cell import FAN_OUT_ITEM_KEYS, Cell, check_repetitions, check_storage_class_name
from pvbench.cells.volume import check_access_mode, check_test_fits_shape, parse_volume_modes
from pvbench.profiles import ProfileError, load_profile
from pvbench.results.volume import BLOCK, DEFAULT_ACCESS_MODE, DEFAULT_VOLUME_MODE

Shape = tuple[str, str]  # (volume mode, access mode): pvbench.results.volume
DEFAULT_SHAPE: Shape = (DEFAULT_VOLUME_MODE, DEFAULT_ACCESS_MODE)


def every_shape(storage_classes: list[str], volume_modes: list[str], access_modes: list[str]) -> dict[str, list[Shape]]:
    """Each class in every volume mode × access mode (the Argo run's axes), checked."""
    modes = parse_volume_modes(" ".join(volume_modes))
    if not access_modes or len(set(access_modes)) != len(access_modes):
        raise ProfileError(f"access modes: give each once, at least one ({access_modes})")
    accesses = [check_access_mode(a) for a in access_modes]
    return {sc: [(vm, am) for vm in modes for am in accesses] for sc in storage_classes}


def expand(
    *,
    campaign: str,
    run: str,
    occasion: str,
    storage_classes: list[str],
    profiles: list[str],
    repetitions: int,
    seed: int,
    tests: list[str] | None = None,
    first_rep: int = 1,
    shapes: dict[str, list[Shape]] | None = None,
    shared_clients: bool = False,
) -> list[Cell]:
    """``shapes``: each class's volume shapes (default: Filesystem, ReadWriteOnce); every test runs
    in each. ``shared_clients``: multi-client tests put all their clients on one volume."""
    try:
        check_repetitions(repetitions)
        check_repetitions(first_rep + repetitions - 1, "the last repetition number")
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    if not storage_classes:
        raise ProfileError("at least one storage class is needed")
    if len(set(storage_classes)) != len(storage_classes):
        raise ProfileError(f"storage classes are listed twice: {storage_classes}")
    for name in storage_classes:
        check_storage_class_name(name)
    if len(set(profiles)) != len(profiles):  # each cell of it would be planned twice, under one key
        raise ProfileError(f"profiles are listed twice: {profiles}")
    loaded = [load_profile(spec) for spec in profiles]
    if not loaded:
        raise ProfileError("at least one profile is needed")
    if tests:
        for test in tests:
            if not any(test in {t.name for t in p.tests} for p in loaded):
                raise ProfileError(f"no profile among {profiles} has a test {test!r}")
    shapes = shapes or {}
    round_cells = [
        (sc, shape, spec, test.name)
        for sc in storage_classes
        for shape in shapes.get(sc) or [DEFAULT_SHAPE]
        for spec, profile in zip(profiles, loaded)
        for test in profile.tests
        if not tests or test.name in tests
    ]
    for sc, (volume_mode, access_mode), spec, name in round_cells:
        test = loaded[profiles.index(spec)].test(name)
        try:
            check_test_fits_shape(test, volume_mode, access_mode, shared_clients and test.clients > 1)
        except ProfileError as exc:
            raise ProfileError(f"storage class {sc} ({volume_mode}, {access_mode}): {exc}") from None
    rng = random.Random(seed)
    cells: list[Cell] = []
    for rep in range(first_rep, first_rep + repetitions):
        shuffled = list(round_cells)
        rng.shuffle(shuffled)
        for sc, (volume_mode, access_mode), spec, test in shuffled:
            cells.append(
                Cell(
                    campaign=campaign,
                    run=run,
                    occasion=occasion,
                    storage_class=sc,
                    volume_mode=volume_mode,
                    access_mode=access_mode,
                    profile=spec,
                    workload=test,
                    rep=rep,
                    order=len(cells),
                    seed=seed,
                )
            )
    return cells


CELLS_FAN_OUT = "cells"  # cells that run as one pod
BLOCK_CELLS_FAN_OUT = "block-cells"  # one-pod cells on a raw Block volume (fio on the device)
CELL_PODS_FAN_OUT = "cell-pods"  # cells-per-pod > 1: several one-pod cells per pod, a fresh volume each
CLIENT_CELLS_FAN_OUT = "client-cells"  # N client pods, each with its own volume, a barrier, a merge step
SHARED_CLIENT_CELLS_FAN_OUT = "shared-client-cells"  # N client pods on one ReadWriteMany volume
FAN_OUTS = (CELLS_FAN_OUT, BLOCK_CELLS_FAN_OUT, CELL_PODS_FAN_OUT, CLIENT_CELLS_FAN_OUT, SHARED_CLIENT_CELLS_FAN_OUT)
# The adaptive check's output parameter (and file, + .json) for each fan-out's next round
NEXT_ROUND = {
    CELLS_FAN_OUT: "next",
    BLOCK_CELLS_FAN_OUT: "next-block",
    CELL_PODS_FAN_OUT: "next-pods",
    CLIENT_CELLS_FAN_OUT: "next-clients",
    SHARED_CLIENT_CELLS_FAN_OUT: "next-shared-clients",
}
# How many one-pod cells one pod may run, one after another, each on its own fresh volume
# (docs/kubernetes.md, "Cells per pod"): the pod's volumes all exist while it runs.
MAX_CELLS_PER_POD = 16
# A pod's cells as one fan-out item: {"cells": "class:Filesystem:ReadWriteOnce:workload:rep:order class:…"}
# (FAN_OUT_ITEM_KEYS, ':'-joined). Plain text,
# not JSON: Argo names the pod's node after it, and its template splits it in an expression
# (the classes of the pod's volumes). Class names (DNS-1123) and test names (a-z0-9-) hold no
# ':' or ' '.
POD_CELLS_KEY = "cells"


def pod_cells_text(items: list[dict]) -> str:
    """Fan-out items (FAN_OUT_ITEM_KEYS) as a pod's ``cells`` text, in their order."""
    return " ".join(":".join(str(item[key]) for key in FAN_OUT_ITEM_KEYS) for item in items)


def parse_pod_cells(text: str) -> list[dict]:
    """A pod's ``cells`` text back into fan-out items; ValueError names what is wrong."""
    items = []
    for part in text.split():
        fields = part.split(":")
        if len(fields) != len(FAN_OUT_ITEM_KEYS):
            raise ValueError(f"a pod's cell {part!r} is not {':'.join(FAN_OUT_ITEM_KEYS)}")
        item = dict(zip(FAN_OUT_ITEM_KEYS, fields))
        try:
            item["rep"], item["order"] = int(item["rep"]), int(item["order"])
        except ValueError:
            raise ValueError(f"a pod's cell {part!r}: rep and order are whole numbers") from None
        items.append(item)
    if not items:
        raise ValueError("a pod needs at least one cell")
    return items


# How a multi-client cell's client pods get their volumes: own = a fresh PVC each (ReadWriteOnce);
# shared = one fresh ReadWriteMany PVC of the class for all N, each client in its own directory.
CLIENT_VOLUMES = ("own", "shared")


def argo_fan_outs(
    items: list[tuple[str, str, dict]], client_volumes: str = "own", cells_per_pod: int = 1
) -> dict[str, list[dict]]:
    """A run's fan-out items (``(profile, workload, item)``, in the run's order) as the benchmark
    template's fan-outs (FAN_OUTS), each keeping that order; the multi-client ones' items also
    say ``clients`` (how many client pods), and ``client_volumes`` picks which of the two they go to.
    With ``cells_per_pod`` > 1 the one-pod cells go to CELL_PODS_FAN_OUT instead, consecutive
    cells of the order grouped that many to a pod (the last pod may have fewer).

    A profile with a multi-client test runs *all* its cells as client pods, N = 1 too: then x1 and
    xN are measured by the same kind of pods (volume, barrier, merge), and a run of that profile
    is one fan-out in one random order, never "all single cells first".
    """
    if client_volumes not in CLIENT_VOLUMES:
        raise ProfileError(f"client volumes {client_volumes!r}: choose one of {', '.join(CLIENT_VOLUMES)}")
    check_cells_per_pod(cells_per_pod)
    clients_fan_out = CLIENT_CELLS_FAN_OUT if client_volumes == "own" else SHARED_CLIENT_CELLS_FAN_OUT
    fan_outs: dict[str, list[dict]] = {name: [] for name in FAN_OUTS}
    loaded = {}
    for spec, workload, item in items:
        profile = loaded[spec] if spec in loaded else loaded.setdefault(spec, load_profile(spec))
        if any(test.clients > 1 for test in profile.tests):
            fan_outs[clients_fan_out].append({**item, "clients": profile.test(workload).clients})
        elif item.get("volume_mode") == BLOCK:  # never grouped into pods: their volumes are devices
            fan_outs[BLOCK_CELLS_FAN_OUT].append(item)
        else:
            fan_outs[CELLS_FAN_OUT].append(item)
    if cells_per_pod > 1:
        cells, fan_outs[CELLS_FAN_OUT] = fan_outs[CELLS_FAN_OUT], []
        fan_outs[CELL_PODS_FAN_OUT] = [
            {POD_CELLS_KEY: pod_cells_text(cells[i : i + cells_per_pod])} for i in range(0, len(cells), cells_per_pod)
        ]
    return fan_outs


def check_cells_per_pod(value: int) -> int:
    if not 1 <= value <= MAX_CELLS_PER_POD:
        raise ProfileError(f"cells per pod {value}: choose 1 to {MAX_CELLS_PER_POD}")
    return value
