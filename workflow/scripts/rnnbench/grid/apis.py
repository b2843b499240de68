"""Hold the apis: one record per api, the one registry every other module reads.

A record gives the api's ids, words, runner, what it lacks, and the constants of the time
estimate and the memory bound. Adding an api is a record here, its runner
(rnnbench/measure/runners/), and its value in the schemas' ``api`` enums
(tests/grid/test_apis.py checks each record is complete).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

PHASES_TF1 = {"graph_construction_s": "graph construction", "init_s": "session setup",
              "first_step_s": "first step", "optimisation_s": "Grappler (timed alone)",
              "first_step_rest_s": "first step (rest)"}
PHASES_KERAS = {"graph_construction_s": "tracing", "init_s": "model setup",
                "first_step_s": "first call", "optimisation_s": "Grappler (timed alone)",
                "first_step_rest_s": "first call (rest)"}
PHASES_JAX = {"graph_construction_s": "tracing and lowering", "init_s": "model setup",
              "first_step_s": "XLA compilation + first call",
              "optimisation_s": "XLA compilation", "first_step_rest_s": "first call"}


@dataclass(frozen=True)
class Api:
    """One api: how a cell of it is named, measured, worded and budgeted.

    Attributes:
        name: the config's ``api`` value.
        suffix: its cell id suffix ('' for compat_v1).
        framework: 'tensorflow' or 'jax' (a job of one never imports the other).
        runner: the module in rnnbench.measure.runners that measures it.
        keras: a Keras layer (unroll=True against unroll=False: FINDINGS' Keras section).
        title: how the README's answer names it.
        words: static, dynamic and each setup phase (measurements columns) in its own words.
        step: what one measured step runs, in each mode (the mode axis: train, inference).
        tf1_settings: it has compat_v1's own settings (axes.COMPAT_V1_ONLY: the while loop's
            and the Session's); a JAX api also lacks axes.TENSORFLOW_ONLY (no Grappler).
        unroll_factor: it has an unroll factor for static (axes.JAX_ONLY).
        start_s: seconds a job spends outside setup and steps (calibration jobs' median).
        setup_s: (fixed seconds, seconds per unrolled time step) of setup.
        per_time_step_s: seconds of overhead per computed time step beyond its FLOP.
        compiled_fit: (MiB, seconds) that static's compiled, unrolled graph adds to a job, as
            coefficients of L, L^2, L^3 (L: unrolled time steps); () for an api TensorFlow
            runs op by op. Fitted to presets/calibrate-resources.yaml's run
            (docs/figures/calibration/jobs.csv) by non-negative least squares.
    """

    name: str
    suffix: str
    framework: str
    runner: str
    keras: bool
    title: str
    words: Mapping[str, str]
    step: Mapping[str, str]
    tf1_settings: bool
    unroll_factor: bool
    start_s: float
    setup_s: tuple[float, float]
    per_time_step_s: float
    compiled_fit: tuple = field(default=())


APIS: Mapping[str, Api] = MappingProxyType({api.name: api for api in (
    Api(name="compat_v1", suffix="", framework="tensorflow", runner="compat_v1", keras=False,
        title="tf.compat.v1", words={"static": "static_rnn", "dynamic": "dynamic_rnn",
                                     **PHASES_TF1},
        step={"train": "one Session.run of the TF1 graph: the forward pass, the loss, the "
                       "backward pass and TF1's Adam (tf.compat.v1.train.AdamOptimizer)",
              "inference": "one Session.run of the TF1 graph's forward pass and loss alone, "
                           "with no gradient or optimizer in the graph"},
        tf1_settings=True, unroll_factor=False,
        start_s=4.4, setup_s=(0.5, 0.2), per_time_step_s=0.16e-3),
    Api(name="keras", suffix="_keras", framework="tensorflow", runner="keras", keras=True,
        title="Keras on TensorFlow",
        words={"static": "unroll=True", "dynamic": "unroll=False", **PHASES_KERAS},
        step={"train": "one call of a tf.function: the layer's forward pass, the loss, its "
                       "gradient (GradientTape) and Keras's Adam at TF1's defaults",
              "inference": "one call of a tf.function: the layer's forward pass and loss "
                           "alone, no gradient or optimizer"},
        tf1_settings=False, unroll_factor=False,
        start_s=4.5, setup_s=(0.9, 0.07), per_time_step_s=0.16e-3),
    Api(name="keras_xla", suffix="_kerasxla", framework="tensorflow", runner="keras",
        keras=True, title="Keras with XLA",
        words={"static": "unroll=True", "dynamic": "unroll=False", **PHASES_KERAS,
               "first_step_s": "first call (XLA compilation)"},
        step={"train": "one call of a tf.function with jit_compile=True: the layer's forward "
                       "pass, the loss, its gradient and Keras's Adam at TF1's defaults",
              "inference": "one call of a tf.function with jit_compile=True: the layer's "
                           "forward pass and loss alone, no gradient or optimizer"},
        tf1_settings=False, unroll_factor=False,
        start_s=4.9, setup_s=(1.9, 0.0), per_time_step_s=0.10e-3,
        compiled_fit=((4.14, 0.0889, 0.00286), (1.12, 0.00562, 0.0))),
    Api(name="keras_jax", suffix="_kerasjax", framework="jax", runner="jax", keras=True,
        title="Keras on JAX",
        words={"static": "unroll=True", "dynamic": "unroll=False", **PHASES_JAX},
        step={"train": "one call of a jax.jit-compiled step on Keras's JAX backend: the "
                       "layer's forward pass, the loss, its gradient and Keras's Adam at "
                       "TF1's defaults",
              "inference": "one call of a jax.jit-compiled step on Keras's JAX backend: the "
                           "layer's forward pass and loss alone, no gradient or optimizer"},
        tf1_settings=False, unroll_factor=False,
        start_s=2.4, setup_s=(2.3, 0.0), per_time_step_s=0.05e-3,
        compiled_fit=((6.61, 0.0539, 0.00300), (0.00668, 0.0142, 0.0))),
    Api(name="jax_scan", suffix="_jaxscan", framework="jax", runner="jax", keras=False,
        title="JAX's lax.scan",
        words={"static": "scan unroll=k", "dynamic": "scan unroll=1", **PHASES_JAX,
               "init_s": "parameter setup"},
        step={"train": "one call of a jit-compiled step: the jax.lax.scan forward pass, the "
                       "loss, its gradient (jax.value_and_grad) and TF1's Adam",
              "inference": "one call of a jit-compiled step: the jax.lax.scan forward pass and "
                           "loss alone, no gradient or optimizer"},
        tf1_settings=False, unroll_factor=True,
        start_s=1.2, setup_s=(1.3, 0.0), per_time_step_s=0.04e-3,
        compiled_fit=((2.67, 0.180, 0.00186), (0.0519, 0.0135, 0.0))),
)})
"""Every api, by name, in the order FINDINGS and the charts list them."""
DEFAULT_API = "compat_v1"
"""The api of a cell that names none (the original, tf.compat.v1)."""


def api_of(cell: Mapping) -> Api:
    """The record of ``cell``'s api (a cell without one is compat_v1's, the default).

    Raises:
        ValueError: for an api not in APIS, naming the known ones.
    """
    name = cell.get("api", DEFAULT_API)
    if name not in APIS:
        raise ValueError(f"api: {name!r} is not one of {list(APIS)}")
    return APIS[name]
