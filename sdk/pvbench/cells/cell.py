"""One cell of the benchmark matrix, and the checks every cell passes before fio starts."""

from __future__ import annotations

import re

from pydantic import ConfigDict, Field, field_validator, model_validator

from pvbench.results.schema import CellIdentity

# The fields of an Argo fan-out item (`pvbench expand`, ci-check's next.json); they become
# benchmark-cell's input parameters (storage_class -> storage-class). Argo names each
# fan-out node after its whole item, so an item holds only what tells cells apart; the
# rest of a cell (campaign, run, occasion, profile, seed) is the run's.
FAN_OUT_ITEM_KEYS = ("storage_class", "volume_mode", "access_mode", "workload", "rep", "order")

# The most repetitions of a cell one run may ask for — defined here once, checked by
# `pvbench expand`/`validate` (so also for Workflows submitted around the template's enum, which
# Argo does not enforce), by local mode's `repetitions` and `adaptive.max_repetitions`. The Argo
# template's choices (repetitions 1-10, adaptive-max-repetitions 10-30) all lie below it.
MAX_REPETITIONS = 100


def check_repetitions(value: int, what: str = "repetitions") -> int:
    if value < 1:
        raise ValueError(f"{what} must be at least 1, not {value}")
    if value > MAX_REPETITIONS:
        raise ValueError(
            f"{what} {value} is more than pvbench runs ({MAX_REPETITIONS} per cell and run); "
            "split the work into several runs or occasions"
        )
    return value


# Kubernetes object names (StorageClass included) are DNS-1123 subdomains.
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Campaign/run/occasion labels end up in store keys and Kubernetes labels: keep them tame.
_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")


def check_storage_class_name(name: str) -> str:
    if len(name) > 253 or not _DNS1123.match(name):
        raise ValueError(
            f"storage class {name!r} is not a valid Kubernetes name (DNS-1123: lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit)"
        )
    return name


def check_label(kind: str, value: str) -> str:
    if not _LABEL.match(value):
        raise ValueError(
            f"{kind} {value!r} must be 1-63 characters of letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )
    return value


class Cell(CellIdentity):
    """A planned cell: its identity (the fields a result records and is stored under, defined once
    in pvbench.results.schema.CellIdentity), checked as Kubernetes and store keys need, and the
    two things its run needs besides: the job file of a custom profile and the run's seed."""

    model_config = ConfigDict(frozen=True)

    order: int = Field(default=0, ge=0, description="Position in the run's randomized order")
    profile_file: str | None = Field(default=None, description="A custom profile's job file (profile custom)")
    seed: int | None = Field(default=None, description="Seed of the randomized order (recorded in the result)")

    @model_validator(mode="before")
    @classmethod
    def _custom_profile(cls, data):
        # a profile given as file:PATH is stored as `custom` (its results say so), its file kept aside
        if isinstance(data, dict) and str(data.get("profile", "")).startswith("file:"):
            data = {**data, "profile": "custom", "profile_file": data["profile"].removeprefix("file:")}
        return data

    @field_validator("storage_class")
    @classmethod
    def _sc(cls, value: str) -> str:
        return check_storage_class_name(value)

    @field_validator("campaign", "run", "occasion")
    @classmethod
    def _labels(cls, value: str, info) -> str:
        return check_label(info.field_name, value)

    @property
    def profile_spec(self) -> str:
        """The profile as load_profile takes it: a catalog name, or file:PATH."""
        return f"file:{self.profile_file}" if self.profile_file else self.profile

    def identity(self, labels: dict[str, str] | None = None) -> CellIdentity:
        """The identity this cell's result records (and is stored under), with the run's labels."""
        fields = self.model_dump(exclude={"profile_file", "seed", "labels"})
        return CellIdentity(**fields, labels=dict(labels if labels is not None else self.labels))

    def fan_out_item(self) -> dict:
        """This cell as an Argo fan-out item (FAN_OUT_ITEM_KEYS)."""
        return {key: getattr(self, key) for key in FAN_OUT_ITEM_KEYS}

    def describe(self) -> str:
        return f"{self.storage_label()} · {self.profile}/{self.workload} · {self.occasion} rep {self.rep}"
