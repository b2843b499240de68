"""The api registry (rnnbench.grid.apis): every registered api has all a cell, a job, FINDINGS
and the time estimate need, and the other modules' views of the apis are read from it."""

import yaml

from rnnbench.grid import apis, axes, vocabulary
from rnnbench.grid.layout import CONFIG_SCHEMA, REPO
from rnnbench.measure import runners

PHASES = ("graph_construction_s", "init_s", "first_step_s", "optimisation_s",
          "first_step_rest_s")


def test_every_api_has_a_complete_record():
    suffixes = [api.suffix for api in apis.APIS.values()]
    assert len(set(suffixes)) == len(suffixes) and suffixes.count("") == 1
    for name, api in apis.APIS.items():
        assert api.name == name
        assert api.framework in ("tensorflow", "jax"), name
        assert set(api.words) == {"static", "dynamic", *PHASES}, name
        assert set(api.step) == set(vocabulary.MODES) and all(api.step.values()), name
        assert api.title and api.start_s > 0 and api.per_time_step_s > 0, name
        assert len(api.setup_s) == 2 and min(api.setup_s) >= 0, name
        assert api.compiled_fit == () or [len(terms) for terms in api.compiled_fit] == [3, 3]
        assert callable(runners.runner_for(name).run), name


def test_the_schemas_list_every_registered_api():
    config = yaml.safe_load(CONFIG_SCHEMA.read_text())["properties"]["api"]
    result = yaml.safe_load(
        (REPO / "workflow/scripts/rnnbench/measure/result.schema.yaml").read_text())
    assert set(config["items"]["enum"]) == set(apis.APIS)
    cell = next(value for key, value in result["properties"].items()
                if "api" in value.get("properties", {}))
    assert set(cell["properties"]["api"]["enum"]) == set(apis.APIS), cell


def test_the_other_views_of_the_apis_are_the_registry():
    assert axes.API_SUFFIXES == {name: api.suffix for name, api in apis.APIS.items()}
    assert set(axes.JAX_APIS) == {"keras_jax", "jax_scan"}
    assert set(axes.KERAS_APIS) == {"keras", "keras_xla", "keras_jax"}
    assert vocabulary.API_WORDS["jax_scan"]["static"] == "scan unroll=k"
    assert apis.api_of({}).name == "compat_v1"


def test_an_unknown_api_is_refused_by_name():
    import pytest

    with pytest.raises(ValueError, match="api: 'torch' is not one of"):
        apis.api_of({"api": "torch"})
