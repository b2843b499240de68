"""Run the keras apis on TensorFlow (keras, keras_xla): a Keras layer on eager TensorFlow.

The layer (unroll=True for static, False for dynamic) is trained by
keras_model.build_train_step; in mode inference, its forward pass and loss alone. Phases,
with ``time.perf_counter``:

- ``init_s``: the layer, its weights (keras_model.initial_layer_weights), the optimizer and
  the input pipeline (``tf.data``; each step takes its batch outside the train step, XLA
  cannot compile the iterator, inside the timed region).
- ``graph_construction_s``: tracing the train step (``get_concrete_function``): Python builds
  its graph, the unrolled one for static.
- ``first_step_s``: its first call: graph optimisation (Grappler; for keras_xla also the XLA
  compilation) and one step.
- warm-up and measured steps as for compat_v1 (timing.warm_and_measure); every step fetches
  the loss (``.numpy()``, which also waits for the step to finish).

``optimisation_s`` and ``optimised_node_count`` are None (Grappler is not run alone on a
function graph); meta_optimizer "off" disables Grappler through
``tf.config.optimizer.set_experimental_options``. Every step computes all max_len time steps
(Keras's loop and its unrolled graph both run the padded length, masked).
"""

from __future__ import annotations

import logging
import time
from types import ModuleType
from typing import Any, Iterator

import numpy as np

from rnnbench.measure import keras_model, metadata
from rnnbench.grid import flop
from rnnbench.measure.frameworks import check_tensorflow
from rnnbench.measure.record import graph_sizes, result_record
from rnnbench.measure.timing import heartbeat, warm_and_measure

log = logging.getLogger("rnnbench")


def run(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
        workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """Measure one run of the keras apis (bench.run's runner).

    The phases, in order: set up the model, trace the train step, its first call, then the
    warm-up and measured steps (the module docstring says what each holds).

    Args:
        impl: "static" or "dynamic".
        cell: the cell's settings.
        arrays: the dataset (data.make_dataset's arrays).
        protocol: the run's protocol (device, seed, the timing's).
        workflow_meta: the workflow's git and image_sha256.

    Returns:
        The result record (record.result_record).

    Raises:
        RuntimeError: as bench.run (check_tensorflow, keras_model.configure).
    """
    rss_before_import_mb = metadata.peak_rss_mb()
    noise_before = metadata.noise_probe()
    tf, keras = keras_model.import_tf_keras()
    check_tensorflow(tf, cell["tf_version"])
    keras_model.configure(tf, protocol["device"], cell["intra_op_parallelism_threads"],
                          cell["inter_op_parallelism_threads"], cell["meta_optimizer"] == "on")
    rss_after_import_mb = metadata.peak_rss_mb()
    log.info("%s %s (%s): building the model (max_len %d)", impl, cell["cell"], cell["api"],
             cell["max_len"])
    train_step, initial, batches, init_s = set_up(tf, keras, impl, cell, arrays,
                                                  protocol["seed"])
    log.info("model, weights, optimizer and input pipeline: %.2f s", init_s)

    first_batch = next(batches)
    with heartbeat("tracing"):
        start = time.perf_counter()
        concrete = train_step.get_concrete_function(*first_batch)
        graph_construction_s = time.perf_counter() - start
    graph_def = concrete.graph.as_graph_def()
    log.info("tracing: %.2f s, %d nodes", graph_construction_s,
             graph_sizes(graph_def)["node_count"])

    with heartbeat("first step"):
        start = time.perf_counter()
        first_loss = float(train_step(*first_batch).numpy())
        first_step_s = time.perf_counter() - start
    log.info("first step: %.2f s", first_step_s)

    def step(_: Any) -> float:  # the batch included, as compat_v1's get_next
        return float(train_step(*next(batches)).numpy())

    steps = warm_and_measure(step, lambda warmup, k: False, protocol)
    noise_after = metadata.noise_probe()
    weights = {f"{i}:0": w for i, w in enumerate(initial)}
    return result_record(
        tf, impl, cell, {**protocol, "parallel_iterations": None,
                         "fetches": (["train_step", "loss"] if cell["mode"] == "train"
                                     else ["loss"]),
                         "hook_fetches": []},
        workflow_meta,
        {"graph_construction_s": graph_construction_s, "init_s": init_s,
         "first_step_s": first_step_s, "optimisation_s": None,
         "warmup_step_s": steps["warmup_step_s"], "warmup_settled": steps["warmup_settled"],
         "step_s": steps["step_s"], "hook_steps": []},
        graph_sizes(graph_def) | {"optimised_node_count": None},
        flop.computed_time_steps(cell, impl, cell["max_len"]),
        (first_loss, steps["last"]), weights,
        (rss_before_import_mb, rss_after_import_mb), metadata.noise(noise_before, noise_after))


def set_up(tf: ModuleType, keras: ModuleType, impl: str, cell: dict,
           arrays: dict[str, np.ndarray], seed: int
           ) -> tuple[Any, list[np.ndarray], Iterator, float]:
    """Run phase init: the layer and its weights, the train step and the input pipeline.

    The layer is built with its initial weights (from ``seed``). The train step is
    keras_model.build_train_step's (XLA for keras_xla; in mode inference the forward pass and
    loss). The pipeline is a repeating batched ``tf.data`` Dataset over ``arrays``.

    Args:
        tf: the ``tensorflow`` module (keras_model.import_tf_keras).
        keras: the ``keras`` module.
        impl: "static" or "dynamic".
        cell: the cell's settings.
        arrays: the dataset, by name.
        seed: seeds the initial weights.

    Returns:
        (train step, the initial weights in ``layer.get_weights()`` order, the batches'
        iterator, seconds).
    """
    batch_size, max_len = cell["batch_size"], cell["max_len"]
    start = time.perf_counter()
    layer = keras_model.make_layer(keras, cell["cell"], cell["num_units"], impl == "static")
    layer.build((batch_size, max_len, cell["input_dim"]))
    initial = keras_model.initial_layer_weights(layer, cell["cell"], cell["input_dim"],
                                                cell["num_units"], seed)
    layer.set_weights(initial)
    train_step, _ = keras_model.build_train_step(tf, keras, layer, max_len,
                                                 cell["api"] == "keras_xla",
                                                 cell["pass_sequence_length"],
                                                 cell["mode"] == "train")
    batches = iter(tf.data.Dataset.from_tensor_slices(
        (arrays["inputs"], arrays["sequence_length"], arrays["labels"])
    ).repeat().batch(batch_size, drop_remainder=True))
    return train_step, initial, batches, time.perf_counter() - start
