"""Expand storage classes × profile tests × repetitions into cells, in a seeded random order.

Within each repetition round, the cells of all storage classes are shuffled together
(randomized interleaving): slow drift of the machine or the network over the run then
spreads over every class instead of masquerading as a difference between them. The
same seed gives the same order, so a run can be repeated exactly.
"""

from __future__ import annotations

import random

from pvbench.cells.cell import Cell, check_repetitions, check_storage_class_name
from pvbench.profiles import ProfileError, load_profile


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
) -> list[Cell]:
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
    rng = random.Random(seed)
    cells: list[Cell] = []
    for rep in range(first_rep, first_rep + repetitions):
        round_cells = [
            (sc, spec, profile, test.name)
            for sc in storage_classes
            for spec, profile in zip(profiles, loaded)
            for test in profile.tests
            if not tests or test.name in tests
        ]
        rng.shuffle(round_cells)
        for sc, spec, _profile, test in round_cells:
            cells.append(
                Cell(
                    campaign=campaign,
                    run=run,
                    occasion=occasion,
                    storage_class=sc,
                    profile=spec,
                    workload=test,
                    rep=rep,
                    order=len(cells),
                    seed=seed,
                )
            )
    return cells


CELLS_FAN_OUT = "cells"  # cells that run as one pod
CLIENT_CELLS_FAN_OUT = "client-cells"  # N client pods, each with its own volume, a barrier, a merge step
SHARED_CLIENT_CELLS_FAN_OUT = "shared-client-cells"  # N client pods on one ReadWriteMany volume
FAN_OUTS = (CELLS_FAN_OUT, CLIENT_CELLS_FAN_OUT, SHARED_CLIENT_CELLS_FAN_OUT)
# The adaptive check's output parameter (and file, + .json) for each fan-out's next round
NEXT_ROUND = {
    CELLS_FAN_OUT: "next",
    CLIENT_CELLS_FAN_OUT: "next-clients",
    SHARED_CLIENT_CELLS_FAN_OUT: "next-shared-clients",
}
# How a multi-client cell's client pods get their volumes: own = a fresh PVC each (ReadWriteOnce);
# shared = one fresh ReadWriteMany PVC of the class for all N, each client in its own directory.
CLIENT_VOLUMES = ("own", "shared")


def argo_fan_outs(items: list[tuple[str, str, dict]], client_volumes: str = "own") -> dict[str, list[dict]]:
    """A run's fan-out items (``(profile, workload, item)``, in the run's order) as the benchmark
    template's fan-outs (FAN_OUTS), each keeping that order; the multi-client ones' items also
    say ``clients`` (how many client pods), and ``client_volumes`` picks which of the two they go to.

    A profile with a multi-client test runs *all* its cells as client pods, N = 1 too: then x1 and
    xN are measured by the same kind of pods (volume, barrier, merge), and a run of that profile
    is one fan-out in one random order, never "all single cells first".
    """
    if client_volumes not in CLIENT_VOLUMES:
        raise ProfileError(f"client volumes {client_volumes!r}: choose one of {', '.join(CLIENT_VOLUMES)}")
    clients_fan_out = CLIENT_CELLS_FAN_OUT if client_volumes == "own" else SHARED_CLIENT_CELLS_FAN_OUT
    fan_outs: dict[str, list[dict]] = {name: [] for name in FAN_OUTS}
    loaded = {}
    for spec, workload, item in items:
        profile = loaded[spec] if spec in loaded else loaded.setdefault(spec, load_profile(spec))
        if any(test.clients > 1 for test in profile.tests):
            fan_outs[clients_fan_out].append({**item, "clients": profile.test(workload).clients})
        else:
            fan_outs[CELLS_FAN_OUT].append(item)
    return fan_outs
