"""Work per training step (FLOP) and the device's float32 matmul rate, for a roofline view.

What a step computes: dynamic_rnn's while_loop stops at the batch's longest sequence_length
(TF >= 1.6), and static_rnn wraps each unrolled step in a cond that skips the cell once every
sequence of the batch has ended (``rnn._rnn_step``), so both call the cell for the batch's
longest sequence_length time steps, not max_len.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np

from rnnbench.model import session_config

PEAK_SIZE = {"cpu": 1024, "gpu": 4096}
"""Matmul size of rule peak per device: large enough to be compute-bound."""
PEAK_REPEATS = 20

GATES = {"basic_lstm": 4, "lstm": 4, "gru": 3}
"""Gate blocks of width num_units in a cell's matmuls: LSTM i, j, f, o; GRU r, u and the
candidate (TF1 GRUCell: one [input_dim + num_units, 2 num_units] and one
[input_dim + num_units, num_units] matmul)."""


def cell_step_flop(cell: str, batch_size: int, input_dim: int, num_units: int) -> int:
    """Forward FLOP of one cell call on a batch: its matmuls, 2 x batch x (input_dim +
    num_units) x gates x num_units (a [m, k] x [k, n] matmul costs 2 m k n FLOP: one multiply
    and one add per term). Element-wise gate arithmetic (O(batch x gates x num_units), under
    a few % of the matmuls for these sizes) and the bias add are not counted.

    Raises:
        KeyError: for a cell type not in GATES.
    """
    return 2 * batch_size * (input_dim + num_units) * GATES[cell] * num_units


FORWARD_PASSES = {"train": 3.0, "inference": 1.0}
"""Forward passes' worth of matmul FLOP in one measured step of each mode (grid axis mode)."""


def step_flop(cell: str, batch_size: int, input_dim: int, num_units: int,
              time_steps: float, mode: str = "train") -> float:
    """FLOP of one measured step over ``time_steps`` cell calls: a training step (forward +
    backward, mode train) or a forward pass alone (mode inference).

    Training is 3 x forward: the backward pass of a matmul Y = X W is two matmuls of the same
    size (dX = dY W^T and dW = X^T dY), as in the 6 N FLOP per token (2 N forward, 4 N
    backward) of Kaplan et al., "Scaling Laws for Neural Language Models" (2020), section
    2.1. The loss, the Adam update (O(parameters), once per step) and element-wise ops are
    left out: a lower bound of the work, close for num_units >= 32.

    Raises:
        KeyError: for a mode not in FORWARD_PASSES or a cell type not in GATES.
    """
    return (FORWARD_PASSES[mode] * time_steps
            * cell_step_flop(cell, batch_size, input_dim, num_units))


def computed_time_steps(cell: dict, impl: str, batch_longest: float) -> float:
    """Time steps a training step of ``impl`` in ``cell`` computes, given its batch's longest
    sequence_length ``batch_longest``: every padded step (max_len) where the loop runs the
    padded length - the keras apis (Keras masks), a cell without sequence_length, dynamic_rnn
    with loop_bound max_len (as up to TF 1.5) - else ``batch_longest`` (static_rnn's conds
    and dynamic_rnn's loop stop there). One fact for the runners (the work recorded) and
    resources (a cluster job's runtime)."""
    padded = (cell.get("api", "compat_v1") != "compat_v1"
              or not cell.get("pass_sequence_length", True)
              or (impl == "dynamic" and cell.get("loop_bound", "batch_max") == "max_len"))
    return float(cell["max_len"]) if padded else float(batch_longest)


def time_steps_per_step(sequence_length: np.ndarray, batch_size: int, first: int,
                        count: int) -> float:
    """Mean, over training steps ``first`` .. ``first + count - 1``, of the batch's longest
    sequence_length: the cell calls each of those steps makes (see the module docstring).

    ``sequence_length`` is int [num_samples]; step k's batch is samples k x batch_size ..
    (k + 1) x batch_size - 1, modulo num_samples (runners.compat_v1's
    Dataset.repeat().batch()).
    """
    lengths = np.asarray(sequence_length)
    steps = np.arange(first, first + count)[:, None]
    index = (steps * batch_size + np.arange(batch_size)[None, :]) % len(lengths)
    return float(lengths[index].max(axis=1).mean())


def measure_matmul_peak(tf: ModuleType, size: int, repeats: int, intra_op: int, inter_op: int,
                        device: str, warmup: int = 3) -> dict[str, Any]:
    """The device's float32 matmul rate with TensorFlow, in FLOP/s: the practical peak that
    the RNN's matmuls are compared with.

    Times ``repeats`` session runs (after ``warmup``) of a [size, size] x [size, size] float32
    matmul on variables, fetching only the sum of the product (a scalar, so no copy of the
    result is timed), each with ``time.perf_counter``, in a TF1 session with the same thread
    settings and device as the training jobs. Returns size, repeats, the median and IQR of
    the seconds, and flop_per_s = 2 size^3 / median (the reduction's size^2 adds are ignored).

    Raises:
        RuntimeError: if device is "gpu" and TensorFlow sees no GPU.
    """
    tf1 = tf.compat.v1
    config = session_config(tf, device, intra_op, inter_op)
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        a = tf1.Variable(rng.standard_normal((size, size), dtype=np.float32))
        b = tf1.Variable(rng.standard_normal((size, size), dtype=np.float32))
        total = tf.reduce_sum(tf.matmul(a, b))
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph, config=config) as session:
        session.run(init)
        for _ in range(warmup):
            session.run(total)
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            session.run(total)
            seconds.append(time.perf_counter() - start)
    median = float(np.median(seconds))
    q1, q3 = np.percentile(seconds, [25, 75])
    return {"size": size, "repeats": repeats, "warmup": warmup, "seconds": seconds,
            "median_s": median, "iqr_over_median": float((q3 - q1) / median),
            "flop_per_s": 2.0 * size**3 / median}
