"""The local-mode config file (YAML): storage classes → directories, and the matrix."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pvbench.cells.cell import check_label, check_repetitions, check_storage_class_name
from pvbench.cells.guards import GUARDS
from pvbench.profiles import DEFAULT_PROFILE_NAME
from pvbench.results.volume import BLOCK, DEFAULT_ACCESS_MODE, DEFAULT_VOLUME_MODE, AccessMode, VolumeMode
from pvbench.stats.adaptive import AdaptiveSettings
from pvbench.yaml_input import load_yaml


class ConfigError(ValueError):
    pass


class ClassVolume(BaseModel):
    """A local class's volume shape (pvbench.cells.volume), from its long form in the config:

    storage_classes:
      nvme: /mnt/nvme/pvbench                 # a directory: Filesystem, ReadWriteOnce
      nvme-raw: {path: /dev/nvme1n1, volume_mode: Block, scratch: true}
      nfs: {path: /mnt/nfs/pvbench, access_mode: ReadWriteMany}
    """

    model_config = ConfigDict(extra="forbid")

    volume_mode: VolumeMode = DEFAULT_VOLUME_MODE
    access_mode: AccessMode = DEFAULT_ACCESS_MODE
    scratch: bool = Field(default=False, description="A Block device whose contents tests may destroy")


class LocalConfig(BaseModel):
    # `runtime: 5` is a YAML number: read as the text "5", as --runtime 5 and the Argo parameter
    # give it (fio-style: seconds, a size in bytes), not refused as "Input should be a valid string"
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    campaign: str = Field(description="Campaign label of every result")
    store: str = Field(default="./pvbench-data", description="Directory or s3://bucket/prefix")
    storage_classes: dict[str, Path] = Field(
        description="Storage class name → directory on that medium, or {path, volume_mode, access_mode, scratch}"
    )
    class_volumes: dict[str, ClassVolume] = Field(
        default_factory=dict, description="Each class's volume shape (the long form of storage_classes)"
    )
    profiles: list[str] = Field(default_factory=lambda: [DEFAULT_PROFILE_NAME])
    tests: list[str] = Field(default_factory=list, description="Only these tests (default: all)")
    repetitions: int = Field(default=3, ge=1)
    occasions: list[str] = Field(default_factory=lambda: ["default"])
    seed: int = 1
    ramp: str | None = None
    runtime: str | None = None
    size: str | None = None
    spool: Path = Field(default=Path("./pvbench-spool"), description="Where results wait if the store is down")
    adaptive: AdaptiveSettings | None = Field(
        default=None,
        description="Repeat each cell until the 95% CI half-width of its mean is below the target "
        "(or max_repetitions); starts with min_repetitions, which then replaces 'repetitions'",
    )

    keep_flagged: list[str] = Field(
        default_factory=list,
        description="Guard rules whose flagged results stay in the statistics (pvbench aggregate --keep-flagged)",
    )

    @field_validator("keep_flagged")
    @classmethod
    def _guard_rules(cls, value: list[str]) -> list[str]:
        unknown = [rule for rule in value if rule not in GUARDS]
        if unknown:
            raise ValueError(
                f"unknown guard rule(s) {', '.join(map(repr, unknown))}: the guards are {', '.join(GUARDS)}"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _long_forms(cls, data):
        # a class as {path, volume_mode, access_mode, scratch}: its path stays in storage_classes
        # (what every check and the runner read), its shape goes to class_volumes
        if isinstance(data, dict) and isinstance(data.get("storage_classes"), dict):
            paths, volumes = {}, dict(data.get("class_volumes") or {})
            for name, value in data["storage_classes"].items():
                if isinstance(value, dict):
                    if "path" not in value:
                        raise ValueError(f"storage class {name!r}: give its path (a directory, or a device for Block)")
                    paths[name] = value["path"]
                    volumes[name] = {k: v for k, v in value.items() if k != "path"}
                else:
                    paths[name] = value
            data = {**data, "storage_classes": paths, "class_volumes": volumes}
        return data

    def volume(self, name: str) -> ClassVolume:
        """The class's volume shape (the default: a Filesystem directory, ReadWriteOnce)."""
        return self.class_volumes.get(name) or ClassVolume()

    def shapes(self) -> dict[str, list[tuple[str, str]]]:
        """Each class's one shape, as ``pvbench.cells.matrix.expand`` takes them."""
        return {name: [(self.volume(name).volume_mode, self.volume(name).access_mode)] for name in self.storage_classes}

    @model_validator(mode="after")
    def _adaptive_start(self) -> "LocalConfig":
        if self.adaptive is not None:
            self.repetitions = self.adaptive.min_repetitions
        return self

    @field_validator("repetitions")
    @classmethod
    def _repetitions(cls, value: int) -> int:
        return check_repetitions(value)

    @field_validator("adaptive")
    @classmethod
    def _adaptive_cap(cls, value: AdaptiveSettings | None) -> AdaptiveSettings | None:
        if value is not None:
            check_repetitions(value.max_repetitions, "adaptive.max_repetitions")
        return value

    @field_validator("storage_classes")
    @classmethod
    def _names(cls, value: dict[str, Path]) -> dict[str, Path]:
        if not value:
            raise ValueError("at least one storage class is needed")
        for name in value:
            check_storage_class_name(name)
        return value

    @model_validator(mode="after")
    def _volumes_of_classes(self) -> "LocalConfig":
        unknown = sorted(set(self.class_volumes) - set(self.storage_classes))
        if unknown:
            raise ValueError(f"class_volumes names classes that are not in storage_classes: {', '.join(unknown)}")
        for name, volume in self.class_volumes.items():
            if volume.scratch and volume.volume_mode != BLOCK:
                raise ValueError(f"storage class {name!r}: scratch is for Block devices (volume_mode: Block)")
        return self

    @field_validator("campaign")
    @classmethod
    def _campaign(cls, value: str) -> str:
        return check_label("campaign", value)

    @field_validator("occasions")
    @classmethod
    def _occasions(cls, value: list[str]) -> list[str]:
        if not value:  # nothing would run, and the run's plan has no first cell to time
            raise ValueError("at least one occasion is needed")
        for occasion in value:
            check_label("occasion", occasion)
        return value


def load_config(path: Path) -> LocalConfig:
    """Read and check a config; relative paths are relative to the file."""
    try:
        data = load_yaml(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    try:
        config = LocalConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from exc
    base = path.parent.resolve()
    config.storage_classes = {k: (base / v).resolve() for k, v in config.storage_classes.items()}
    # two names for one directory (a class line copied, its name changed and not its path): the
    # report would compare the storage with itself and find "no difference"
    by_target: dict[Path, str] = {}
    for name, target in config.storage_classes.items():
        if target in by_target:
            raise ConfigError(
                f"{path}: storage classes {by_target[target]!r} and {name!r} are the same directory {target}: "
                "they would measure the same storage; give each class its own directory"
            )
        by_target[target] = name
    config.spool = (base / config.spool).resolve()
    config.profiles = [f"file:{(base / p[5:]).resolve()}" if p.startswith("file:") else p for p in config.profiles]
    if "://" not in config.store:
        config.store = str((base / config.store).resolve())
    # results written into a directory under test land on the storage being measured, between its
    # cells (and its cleanup runs there): a store or spool path copied from a class line
    for what, folder in [("store", None if "://" in config.store else Path(config.store)), ("spool", config.spool)]:
        for name, target in config.storage_classes.items():
            if folder is not None and (folder == target or target in folder.parents):
                raise ConfigError(
                    f"{path}: the {what} {folder} is inside storage class {name!r}'s directory {target}: results "
                    f"would be written to the storage under test while it is measured; put the {what} elsewhere"
                )
    return config
