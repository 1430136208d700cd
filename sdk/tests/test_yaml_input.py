"""The YAML users write (the local config, the limits file) is read strictly: a repeated key,
which YAML itself resolves silently to the last value, is refused, naming both lines."""

from __future__ import annotations

import pytest

from pvbench.local.config import ConfigError, load_config
from pvbench.stats.limits import LimitsError, read_declarations
from pvbench.yaml_input import DuplicateKeyError, load_yaml


def test_a_repeated_key_is_refused_wherever_it_is():
    for text, line, first in [
        ("a: 1\nb: 2\na: 3\n", 3, 1),
        ("top:\n  fast: /a\n  slow: /b\n  fast: /c\n", 4, 2),
        ("m: {a: 1, a: 2}\n", 1, 1),  # a flow mapping: both on one line
        ("1: a\n1: b\n", 2, 1),  # keys equal as values, not as text
    ]:
        with pytest.raises(DuplicateKeyError, match=rf"line {line}: key .* again \(first at line {first}\)"):
            load_yaml(text)


def test_what_yaml_allows_on_purpose_still_loads():
    # a merge key's values overridden by the mapping's own: YAML's way to share defaults
    text = "defaults: &d {runtime: 30s, size: 1G}\nfast:\n  <<: *d\n  size: 4G\n"
    assert load_yaml(text)["fast"] == {"runtime": "30s", "size": "4G"}
    assert load_yaml("") is None and load_yaml("a: [1, 1]\nb: {c: 1}\n") == {"a": [1, 1], "b": {"c": 1}}


def test_the_config_and_the_limits_file_refuse_a_class_twice(tmp_path):
    config = tmp_path / "pvbench.yaml"
    config.write_text("campaign: c\nstorage_classes:\n  fast: /a\n  fast: /b\nprofiles: [dbench]\n")
    with pytest.raises(ConfigError, match=r"pvbench.yaml: line 4: key 'fast' again \(first at line 3\)"):
        load_config(config)
    with pytest.raises(LimitsError, match=r"l.yaml: line 4: key 'a' again \(first at line 2\)"):
        read_declarations("storage_classes:\n  a: {iops: 5}\n  b: {iops: 6}\n  a: {iops: 7}\n", "l.yaml")
