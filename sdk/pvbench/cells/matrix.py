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
