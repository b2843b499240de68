"""One runner per api family: the module that builds, sets up and trains that family's model
in its framework and times each phase (bench.run picks it by the cell's api).

- runners.compat_v1: api compat_v1, rnnbench.measure.model's graph in a TF1 Session.
- runners.keras: apis keras and keras_xla, a Keras layer on eager TensorFlow.
- runners.jax: apis keras_jax and jax_scan (axes.JAX_APIS), on JAX, with no TensorFlow.

A runner is a module here with ``APIS`` (the apis it measures) and ``run(impl, cell, arrays,
protocol, workflow_meta)`` returning the result record (record.result_record), its phases
timed with timing's harness. A runner imports its framework inside ``run`` only (through
rnnbench.measure.frameworks' guards): every runner module is imported to find an api's, and a JAX
job must import no TensorFlow, a TensorFlow job no JAX. Adding an api: a runner file here
(or the api in an existing family's APIS), plus its words (vocabulary.API_WORDS) and its id suffix
(axes.API_SUFFIXES).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def runners() -> dict[str, ModuleType]:
    """Every runner module here, by api (each module's ``APIS``).

    Raises:
        RuntimeError: if two runners claim one api.
    """
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for api in module.APIS:
            if api in found:
                raise RuntimeError(f"api {api!r}: runners {found[api].__name__} and "
                                   f"{module.__name__} both claim it")
            found[api] = module
    return found


def runner_for(api: str) -> ModuleType:
    """The runner module that measures ``api``.

    Raises:
        ValueError: for an api no runner measures (names the known ones).
    """
    found = runners()
    if api not in found:
        raise ValueError(f"api: no runner measures {api!r}; known: {sorted(found)}")
    return found[api]
