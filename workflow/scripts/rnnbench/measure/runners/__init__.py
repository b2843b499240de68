"""Hold one runner per api family, which builds, sets up, trains and times its model.

bench.run picks the runner by the cell's api.

- runners.compat_v1: api compat_v1, rnnbench.measure.model's graph in a TF1 Session.
- runners.keras: apis keras and keras_xla, a Keras layer on eager TensorFlow.
- runners.jax: apis keras_jax and jax_scan, on JAX, with no TensorFlow.

A runner is a module here with ``run(impl, cell, arrays, protocol, workflow_meta)`` returning
the result record (record.result_record), its phases timed with timing's harness; the api
registry (rnnbench.grid.apis) names each api's runner. A runner imports its framework inside
``run`` only (through rnnbench.measure.frameworks' guards): a JAX job must import no
TensorFlow, a TensorFlow job no JAX.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from rnnbench.grid.apis import APIS, api_of


def runners() -> dict[str, ModuleType]:
    """Every api's runner module, by api (rnnbench.grid.apis names it)."""
    return {name: runner_for(name) for name in APIS}


def runner_for(api: str) -> ModuleType:
    """The runner module that measures ``api``.

    Raises:
        ValueError: for an api not in the registry (names the known ones).
    """
    return importlib.import_module(f"{__name__}.{api_of({'api': api}).runner}")
