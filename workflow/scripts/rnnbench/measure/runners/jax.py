"""Run the apis on JAX (keras_jax, jax_scan), jit-compiled ahead of time; no TensorFlow.

The step is compiled by jax_model.compile_step. jax_scan: rnnbench.measure.jax_model's train
step. keras_jax: the keras api's layer, loss and Adam on Keras's JAX backend
(keras_model.jax_train_step), unroll=True for static, False for dynamic. In mode inference,
the forward pass and loss alone. Phases, with ``time.perf_counter``:

- ``init_s``: the initial weights (compat_v1's: jax_model.initial_params, or
  keras_model.initial_layer_weights in the Keras layer, built here), the optimizer's slots,
  and the dataset moved to the device in num_samples // batch_size batches (each step takes
  the next one: no input pipeline inside the timed steps).
- ``graph_construction_s``: tracing and lowering to StableHLO (``jit(...).lower``): the scan
  body written unroll times for static (keras_jax: max_len times).
- ``optimisation_s``: XLA's compilation (``.compile()``), timed alone and part of the first
  step, as Grappler's is for compat_v1.
- ``first_step_s``: the compilation plus the first call, so that graph construction, init
  and first step sum to everything before the second step.
- warm-up and measured steps as for compat_v1 (timing.warm_and_measure); each step fetches
  the loss (``float``, which waits for the step).

The scan runs the padded max_len, masked by sequence_length (no loop-bound saving);
``node_count`` counts the StableHLO module's lines, ``optimised_node_count`` those of the
compiled HLO. This module imports JAX only inside ``run`` (frameworks.import_jax sets its
flags first).
"""

from __future__ import annotations

import logging
import time
from types import ModuleType
from typing import Any, Callable

import numpy as np

from rnnbench.measure import keras_model, metadata
from rnnbench.grid import flop
from rnnbench.measure.frameworks import check_image_imports, import_jax
from rnnbench.measure.record import result_record
from rnnbench.measure.timing import heartbeat, warm_and_measure
from rnnbench.grid.axes import value_of

log = logging.getLogger("rnnbench")


def scan_unroll(impl: str, cell: dict) -> int:
    """Return the unroll factor of the cell's jax.lax.scan.

    Args:
        impl: "static" or "dynamic".
        cell: the cell's settings (its ``unroll``; default max_len).

    Returns:
        1 for dynamic. For static the cell's ``unroll``: max_len (fully unrolled) for
        "max_len" or for a factor above max_len.
    """
    if impl == "dynamic":
        return 1
    unroll = value_of(cell, "unroll")
    return cell["max_len"] if unroll == "max_len" else min(int(unroll), cell["max_len"])


def run(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
        workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """Measure one run of the JAX apis (bench.run's runner).

    The phases, in order: set up the parameters, optimizer state and batches on the device,
    trace and compile the step, its first call, then the warm-up and measured steps (the module
    docstring says what each holds).

    Args:
        impl: "static" or "dynamic".
        cell: the cell's settings.
        arrays: the dataset (data.make_dataset's arrays).
        protocol: the run's protocol (device, seed, the timing's).
        workflow_meta: the workflow's git and image_sha256.

    Returns:
        The result record (record.result_record).

    Raises:
        RuntimeError: as frameworks.import_jax, keras_model.import_keras_jax and
            frameworks.check_image_imports.
    """
    rss_before_import_mb = metadata.peak_rss_mb()
    noise_before = metadata.noise_probe()
    jax = import_jax(protocol["device"], cell["intra_op_parallelism_threads"])
    from rnnbench.measure import jax_model

    keras = keras_model.import_keras_jax() if cell["api"] == "keras_jax" else None
    check_image_imports()
    rss_after_import_mb = metadata.peak_rss_mb()
    log.info("%s %s (%s, unroll %d): building the step (max_len %d)", impl, cell["cell"],
             cell["api"], scan_unroll(impl, cell), cell["max_len"])
    train_step, params, opt_state, initial, batches, init_s = set_up(
        jax, keras, impl, cell, arrays, protocol["seed"])
    log.info("weights, optimizer and batches on the device: %.2f s", init_s)

    with heartbeat("tracing and compilation"):
        start = time.perf_counter()
        built = jax_model.compile_step(train_step, params, opt_state, *batches[0])
        params, opt_state, loss = built.step(params, opt_state, *batches[0])
        first_loss = float(loss)
        first_step_s = time.perf_counter() - start - built.trace_s
    log.info("tracing: %.2f s; compilation %.2f s, first step %.2f s in all", built.trace_s,
             built.compile_s, first_step_s)
    state = {"params": params, "opt": opt_state, "k": 1}

    def step(_: Any) -> float:  # the next batch, as compat_v1's get_next
        batch = batches[state["k"] % len(batches)]
        state["params"], state["opt"], value = built.step(state["params"], state["opt"], *batch)
        state["k"] += 1
        return float(value)

    steps = warm_and_measure(step, lambda warmup, k: False, protocol)
    noise_after = metadata.noise_probe()
    stablehlo, hlo = built.lowered_text, built.compiled_text
    return result_record(
        None, impl, cell, {**protocol, "parallel_iterations": None,
                           "fetches": (["train_step", "loss"] if cell["mode"] == "train"
                                       else ["loss"]),
                           "hook_fetches": []},
        workflow_meta,
        {"graph_construction_s": built.trace_s, "init_s": init_s,
         "first_step_s": first_step_s, "optimisation_s": built.compile_s,
         "warmup_step_s": steps["warmup_step_s"], "warmup_settled": steps["warmup_settled"],
         "step_s": steps["step_s"], "hook_steps": []},
        {"node_count": max(1, stablehlo.count("\n")), "function_node_count": 0,
         "graphdef_bytes": max(1, len(stablehlo.encode())),
         "optimised_node_count": max(1, hlo.count("\n")) if hlo else None},
        flop.computed_time_steps(cell, impl, cell["max_len"]), (first_loss, steps["last"]),
        initial, (rss_before_import_mb, rss_after_import_mb),
        metadata.noise(noise_before, noise_after))


def set_up(jax: ModuleType, keras: ModuleType | None, impl: str, cell: dict,
           arrays: dict[str, np.ndarray], seed: int
           ) -> tuple[Callable[..., Any], Any, Any, dict[str, np.ndarray], list, float]:
    """Run phase init: the step function, its parameters and optimizer state, and the batches.

    Everything is on the device before the clock stops. The step is jax_model.step_function at
    scan_unroll for jax_scan, or keras_model.jax_train_step of the cell's layer for keras_jax.
    Without pass_sequence_length, every sequence_length is max_len.

    Args:
        jax: the ``jax`` module (frameworks.import_jax).
        keras: the ``keras`` module for keras_jax; None for jax_scan.
        impl: "static" or "dynamic".
        cell: the cell's settings.
        arrays: the dataset, cut into num_samples // batch_size batches.
        seed: seeds the initial parameters.

    Returns:
        (step, params, opt_state, the initial weights by name, batches, seconds).
    """
    from rnnbench.measure import jax_model

    batch_size, max_len = cell["batch_size"], cell["max_len"]
    train = cell["mode"] == "train"
    start = time.perf_counter()
    if keras is None:
        initial = jax_model.initial_params(cell["cell"], cell["input_dim"], cell["num_units"],
                                           seed)
        params = jax.device_put(initial)
        opt_state = jax_model.adam_init(params)
        train_step = jax_model.step_function(cell["cell"], scan_unroll(impl, cell), train)
    else:
        layer = keras_model.make_layer(keras, cell["cell"], cell["num_units"],
                                       impl == "static")
        layer.build((batch_size, max_len, cell["input_dim"]))
        weights = keras_model.initial_layer_weights(layer, cell["cell"], cell["input_dim"],
                                                    cell["num_units"], seed)
        layer.set_weights(weights)
        initial = {f"{i}:0": w for i, w in enumerate(weights)}
        train_step, params, opt_state = keras_model.jax_train_step(
            keras, layer, max_len, cell["pass_sequence_length"], train)
    lengths = (arrays["sequence_length"] if cell["pass_sequence_length"]
               else np.full_like(arrays["sequence_length"], max_len))
    batches = [jax.device_put((arrays["inputs"][k:k + batch_size], lengths[k:k + batch_size],
                               arrays["labels"][k:k + batch_size]))
               for k in range(0, len(lengths) - batch_size + 1, batch_size)]
    jax.block_until_ready((params, opt_state, batches))
    return train_step, params, opt_state, initial, batches, time.perf_counter() - start
