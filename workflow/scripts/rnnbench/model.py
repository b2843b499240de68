"""The seed's model in TF1 graph mode: one RNN cell, static_rnn or dynamic_rnn, softmax loss, Adam.

Model (seed 000): logits are the final ``h`` state ([batch, num_units]), so the number of
classes equals num_units; loss is the mean sparse softmax cross-entropy; Adam with its
default hyper-parameters. ``static`` runs ``tf.compat.v1.nn.static_rnn`` over
``tf.unstack(inputs, axis=1)`` (max_len cell copies in the graph, each wrapped in a cond that
skips it once every sequence has ended); ``dynamic`` runs ``tf.compat.v1.nn.dynamic_rnn`` (one
cell inside a ``tf.while_loop`` that stops at the batch's longest sequence_length, TF >= 1.6).
Both get ``sequence_length``, so both return the state at each sample's last valid step.

TensorFlow 2.16+ ships Keras 3, which has no BasicLSTMCell: the legacy cells come from
``tf_keras`` when ``TF_USE_LEGACY_KERAS=1`` is set before TensorFlow is imported
(``import_tf`` does that).
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


def build_loss(tf: ModuleType, inputs: Any, sequence_length: Any, labels: Any, impl: str,
               cell: str, num_units: int, parallel_iterations: int | None = None) -> Any:
    """Build the forward pass and return the scalar mean cross-entropy loss tensor.

    Args:
        inputs: float32 tensor [batch, max_len, input_dim]; max_len must be static for static_rnn.
        sequence_length: int32 tensor [batch], each in 1..max_len.
        labels: int32 tensor [batch], each in [0, num_units).
        impl: "static" (tf.compat.v1.nn.static_rnn) or "dynamic" (tf.compat.v1.nn.dynamic_rnn).
        cell: basic_lstm, lstm or gru.
        num_units: cell size, also the number of classes.
        parallel_iterations: dynamic_rnn's parallel_iterations (None: TensorFlow's default, 32).

    Raises:
        ValueError: for an unknown impl or cell.
    """
    tf1 = tf.compat.v1
    rnn_cell = make_cell(tf, cell, num_units)
    if impl == "static":
        _, state = tf1.nn.static_rnn(
            rnn_cell, tf.unstack(inputs, axis=1), sequence_length=sequence_length,
            dtype=tf.float32,
        )
    elif impl == "dynamic":
        kwargs = {} if parallel_iterations is None else {"parallel_iterations": parallel_iterations}
        _, state = tf1.nn.dynamic_rnn(
            rnn_cell, inputs, sequence_length=sequence_length, dtype=tf.float32, **kwargs
        )
    else:
        raise ValueError(f"impl: unknown implementation {impl!r}; expected static or dynamic")
    final_h = state.h if hasattr(state, "h") else state
    return tf1.losses.sparse_softmax_cross_entropy(labels=labels, logits=final_h)


def initial_weights(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    """Glorot-uniform kernels drawn by numpy from ``seed``, in sorted name order.

    Only variables whose name ends in ``kernel:0`` are drawn (limit sqrt(6 / (fan_in + fan_out)),
    Glorot & Bengio 2010, TensorFlow's default for these cells' kernels); biases keep the
    cell's own constant initialiser. The same names and shapes give the same arrays, so
    static and dynamic start from identical weights.
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
