"""The seed's model in TF1 graph mode: static_rnn or dynamic_rnn, softmax loss, Adam.

Logits are the final ``h`` (classes = num_units); the loss is the mean sparse softmax
cross-entropy. ``static`` runs ``tf.compat.v1.nn.static_rnn``, ``dynamic``
``tf.compat.v1.nn.dynamic_rnn``; both get ``sequence_length``. build_loss's ablations
(loop_bound, pass_sequence_length, parallel_iterations, swap_memory) are grid axes. The
legacy cells come from ``tf_keras`` (import_tf). Details and sources: docs/experiment.md,
The models, in detail.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType
from typing import Any

import numpy as np

CELLS = ("basic_lstm", "lstm", "gru")


def import_tf() -> ModuleType:
    """Import TensorFlow for TF1 graph mode with the legacy (tf_keras) RNN cells.

    Sets ``TF_USE_LEGACY_KERAS=1`` and quiets C++ info logs, then disables eager execution.
    Returns the ``tensorflow`` module.

    Raises:
        RuntimeError: if TensorFlow was already imported without TF_USE_LEGACY_KERAS=1.
    """
    import sys

    if "tensorflow" in sys.modules and os.environ.get("TF_USE_LEGACY_KERAS") != "1":
        raise RuntimeError("tensorflow was imported before TF_USE_LEGACY_KERAS=1 was set")
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    # This project uses the deprecated TF1 RNN API on purpose: keep its notices out of the logs.
    tf.get_logger().setLevel("ERROR")
    warnings.filterwarnings("ignore", message=r".*is deprecated", category=UserWarning)
    return tf


def session_config(tf: ModuleType, device: str, intra_op: int, inter_op: int) -> Any:
    """Return the ConfigProto every timed session uses.

    It sets TensorFlow's intra- and inter-op threads. Device "cpu" hides the GPUs; "gpu" grows
    GPU memory as needed (as in the seed).

    Args:
        tf: the ``tensorflow`` module (import_tf).
        device: "cpu" or "gpu".
        intra_op: intra-op threads.
        inter_op: inter-op threads.

    Raises:
        RuntimeError: if device is "gpu" and TensorFlow sees no GPU.
    """
    if device == "gpu" and not tf.config.list_physical_devices("GPU"):
        raise RuntimeError("device: 'gpu' was asked for, but TensorFlow sees no GPU")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=intra_op,
                                      inter_op_parallelism_threads=inter_op)
    if device == "cpu":
        config.device_count["GPU"] = 0
    else:
        config.gpu_options.allow_growth = True
    return config


def make_cell(tf: ModuleType, cell: str, num_units: int) -> Any:
    """The legacy RNN cell named ``cell`` (basic_lstm, lstm or gru) with ``num_units`` units.

    Raises:
        ValueError: for an unknown cell name.
    """
    rnn_cell = tf.compat.v1.nn.rnn_cell
    if cell == "basic_lstm":
        return rnn_cell.BasicLSTMCell(num_units)
    if cell == "lstm":
        return rnn_cell.LSTMCell(num_units)
    if cell == "gru":
        return rnn_cell.GRUCell(num_units)
    raise ValueError(f"cell: unknown cell {cell!r}; expected one of {CELLS}")


def full_length_rnn(tf: ModuleType, rnn_cell: Any, inputs: Any, sequence_length: Any,
                    parallel_iterations: int | None = None, swap_memory: bool = False) -> Any:
    """Return the final state of ``rnn_cell`` after a ``tf.while_loop`` over all max_len steps.

    This is dynamic_rnn up to TF 1.5. Every iteration calls the cell for the whole batch. A
    sample's state is kept (``tf.where(t < sequence_length, new, old)``) once t reaches its
    sequence_length. So the result is the state at each sample's last valid step, as
    dynamic_rnn returns. Variables live under the scope ``rnn``, as TensorFlow's RNNs put them,
    so initial weights load by the same names.

    Args:
        tf: the ``tensorflow`` module (import_tf).
        rnn_cell: the cell (make_cell).
        inputs: float32 [batch, max_len, input_dim], max_len static.
        sequence_length: int32 [batch].
        parallel_iterations, swap_memory: the ``tf.while_loop``'s (None: TensorFlow's 32).
    """
    tf1 = tf.compat.v1
    batch = tf.shape(inputs)[0]
    max_len = inputs.shape[1]

    def step(t: Any, x_t: Any, state: Any) -> Any:
        _, new_state = rnn_cell(x_t, state)
        keep = (t < sequence_length)[:, None]
        return tf.nest.map_structure(lambda new, old: tf.where(keep, new, old), new_state, state)

    with tf1.variable_scope("rnn"):
        state = rnn_cell.zero_state(batch, tf.float32)
        time_major = tf.transpose(inputs, [1, 0, 2])
        kwargs = {} if parallel_iterations is None else {"parallel_iterations": parallel_iterations}
        _, state = tf1.while_loop(
            lambda t, _: t < max_len,
            lambda t, state: (t + 1, step(t, time_major[t], state)),
            (tf.constant(0), state), swap_memory=swap_memory, **kwargs)
        return state


def build_loss(tf: ModuleType, inputs: Any, sequence_length: Any, labels: Any, impl: str,
               cell: str, num_units: int, parallel_iterations: int | None = None,
               loop_bound: str = "batch_max", pass_sequence_length: bool = True,
               swap_memory: bool = False) -> Any:
    """Build the forward pass and return the scalar mean cross-entropy loss tensor.

    Args:
        inputs: float32 tensor [batch, max_len, input_dim]; max_len must be static for static_rnn.
        sequence_length: int32 tensor [batch], each in 1..max_len.
        labels: int32 tensor [batch], each in [0, num_units).
        impl: "static" (tf.compat.v1.nn.static_rnn) or "dynamic" (tf.compat.v1.nn.dynamic_rnn).
        cell: basic_lstm, lstm or gru.
        num_units: cell size, also the number of classes.
        parallel_iterations: dynamic_rnn's parallel_iterations (None: TensorFlow's default, 32).
        loop_bound: "batch_max" (TensorFlow's RNNs) or "max_len" (dynamic: full_length_rnn;
            static: unchanged); docs/experiment.md, The models, in detail.
        pass_sequence_length: False runs TensorFlow's RNNs without sequence_length.
        swap_memory: dynamic_rnn's (and the max_len loop's) swap_memory; static ignores it.

    Raises:
        ValueError: for an unknown impl, cell or loop_bound, or loop_bound "max_len" without
            sequence_length (every step runs then anyway).
    """
    tf1 = tf.compat.v1
    rnn_cell = make_cell(tf, cell, num_units)
    if impl not in ("static", "dynamic"):
        raise ValueError(f"impl: unknown implementation {impl!r}; expected static or dynamic")
    if loop_bound not in ("batch_max", "max_len"):
        raise ValueError(f"loop_bound: {loop_bound!r} is not batch_max or max_len")
    if loop_bound == "max_len" and not pass_sequence_length:
        raise ValueError("loop_bound: max_len needs pass_sequence_length (without it every "
                         "step runs anyway)")
    lengths = sequence_length if pass_sequence_length else None
    if loop_bound == "max_len" and impl == "dynamic":
        state = full_length_rnn(tf, rnn_cell, inputs, sequence_length, parallel_iterations,
                                swap_memory)
    elif impl == "static":
        _, state = tf1.nn.static_rnn(
            rnn_cell, tf.unstack(inputs, axis=1), sequence_length=lengths, dtype=tf.float32,
        )
    else:
        kwargs = {} if parallel_iterations is None else {"parallel_iterations": parallel_iterations}
        _, state = tf1.nn.dynamic_rnn(
            rnn_cell, inputs, sequence_length=lengths, dtype=tf.float32,
            swap_memory=swap_memory, **kwargs
        )
    final_h = state.h if hasattr(state, "h") else state
    return tf1.losses.sparse_softmax_cross_entropy(labels=labels, logits=final_h)


def initial_weights(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    """Draw Glorot-uniform kernels by numpy from ``seed``, in sorted name order.

    Only variables whose name ends in ``kernel:0`` are drawn, with limit
    sqrt(6 / (fan_in + fan_out)); biases keep the cell's own constant initialiser. The same
    names and shapes give the same arrays, so static and dynamic start from identical weights.
    Source: Glorot and Bengio 2010, TensorFlow's default for these cells' kernels.

    Args:
        shapes: {variable name: shape}.
        seed: seeds numpy's generator.

    Returns:
        {variable name: float32 array} for the kernels.
    """
    rng = np.random.default_rng([seed, 1])
    out = {}
    for name in sorted(shapes):
        if name.endswith("kernel:0"):
            fan_in, fan_out = shapes[name]
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            out[name] = rng.uniform(-limit, limit, size=shapes[name]).astype(np.float32)
    return out


def load_initial_weights(tf: ModuleType, session: Any, seed: int) -> dict[str, np.ndarray]:
    """Overwrite the graph's RNN kernels with ``initial_weights(seed)`` in ``session``.

    Call after the variable initialiser. Returns the loaded arrays by variable name.

    Raises:
        RuntimeError: if the graph has no kernel variable to load.
    """
    variables = {v.name: v for v in tf.compat.v1.trainable_variables()}
    weights = initial_weights({n: tuple(v.shape.as_list()) for n, v in variables.items()}, seed)
    if not weights:
        raise RuntimeError(f"no kernel among trainable variables {sorted(variables)}")
    for name, value in weights.items():
        variables[name].load(value, session)
    return weights
