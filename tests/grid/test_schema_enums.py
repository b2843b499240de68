"""The config schema is the one source of allowed values: every constant of the code that lists
them (for its own checks, its words or its dispatch) lists exactly the schema's enum, so that a
value added to one and not the other fails here, not in a training job."""

import pytest
import yaml

from rnnbench.grid import axes, configcheck, flop, vocabulary
from rnnbench.stats import claims, tables
from rnnbench.pipeline import container
from rnnbench.measure import model, roofline

SCHEMA = yaml.safe_load(configcheck.CONFIG_SCHEMA.read_text())


def enum(*path):
    """The enum at ``path`` in the config schema (a list's item enum for a list key)."""
    node = SCHEMA["properties"]
    for key in path:
        node = node[key]
    node = node.get("items", node)
    return set(node["enum"])


@pytest.mark.parametrize("path, listed", [
    (("cell",), model.CELLS),
    (("cell",), flop.GATES),
    (("api",), axes.API_SUFFIXES),
    (("api",), vocabulary.API_WORDS),
    (("fetches",), vocabulary.FETCHES),
    (("mode",), vocabulary.MODES),
    (("mode",), flop.FORWARD_PASSES),
    (("device",), container.FLAVOR_OF_DEVICE),
    (("device",), roofline.PEAK_SIZE),
    (("claims", "items", "properties", "quantity"), tables.QUANTITIES),
    (("claims", "items", "properties", "direction"), claims.DIRECTIONS),
    (("claims", "items", "properties", "kind"), claims.KIND_DIRECTIONS),
], ids=lambda value: value if isinstance(value, str) else None)
def test_code_lists_exactly_the_schema_enum(path, listed):
    assert set(listed) == enum(*path)


def test_every_ablation_default_is_allowed_by_the_schema():
    for axis, default in axes.ABLATION_DEFAULTS.items():
        items = SCHEMA["properties"][axis].get("items", {})
        if "enum" in items:
            assert default in items["enum"], axis
