"""YAML that users write (the local config, the limits file), read strictly.

YAML itself lets a mapping repeat a key and keeps the last value, without a word. In a config
that is a copied line not renamed: two storage classes ``fast:`` become one, and the run
benchmarks one class fewer than its file says; a second ``repetitions:`` silently wins. Such a
file is refused here, naming both lines, before anything runs.
"""

from __future__ import annotations

import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"  # `<<: *defaults`: its keys may be overridden, on purpose


class DuplicateKeyError(yaml.YAMLError):
    pass


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that notes every repeated key (line, first line, key) as it builds mappings."""

    def __init__(self, stream):
        super().__init__(stream)
        self.repeated: list[tuple[int, int, object]] = []

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        self.repeated.append((line, seen[key], key))
                        continue
                except TypeError:  # an unhashable key: SafeLoader says so itself
                    continue
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str):
    """``yaml.safe_load(text)``, but a mapping that repeats a key is a DuplicateKeyError naming
    the first one in the file (a yaml.YAMLError, which callers already turn into one line)."""
    loader = _UniqueKeyLoader(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    if loader.repeated:
        line, first, key = min(loader.repeated, key=lambda r: r[0])
        raise DuplicateKeyError(
            f"line {line}: key {key!r} again (first at line {first}); "
            "YAML would keep only the last value: rename or remove one"
        )
    return data
