"""Work per step (FLOP) and the time steps a step computes: counted from a cell's shape.

What a step computes: dynamic_rnn's while_loop stops at the batch's longest sequence_length
(TF >= 1.6), and static_rnn wraps each unrolled step in a cond that skips the cell once every
sequence of the batch has ended (``rnn._rnn_step``), so both call the cell for the batch's
longest sequence_length time steps, not max_len.
"""

from __future__ import annotations
from rnnbench.grid.axes import value_of

import numpy as np

GATES = {"basic_lstm": 4, "lstm": 4, "gru": 3}
"""Gate blocks of width num_units in a cell's matmuls: LSTM i, j, f, o; GRU r, u and the
candidate (TF1 GRUCell: one [input_dim + num_units, 2 num_units] and one
[input_dim + num_units, num_units] matmul)."""


def cell_step_flop(cell: str, batch_size: int, input_dim: int, num_units: int) -> int:
    """Count the forward FLOP of one cell call on a batch: its matmuls.

    That is 2 x batch x (input_dim + num_units) x gates x num_units: a [m, k] x [k, n] matmul
    costs 2 m k n FLOP (one multiply and one add per term). Element-wise gate arithmetic
    (O(batch x gates x num_units), under a few % of the matmuls at these sizes) and the bias
    add are not counted.

    Raises:
        KeyError: for a cell type not in GATES.
    """
    return 2 * batch_size * (input_dim + num_units) * GATES[cell] * num_units


FORWARD_PASSES = {"train": 3.0, "inference": 1.0}
"""Forward passes' worth of matmul FLOP in one measured step of each mode (grid axis mode)."""


def step_flop(cell: str, batch_size: int, input_dim: int, num_units: int,
              time_steps: float, mode: str = "train") -> float:
    """Count the FLOP of one measured step over ``time_steps`` cell calls.

    A training step (mode train) is forward + backward, 3 x forward: the backward pass of a
    matmul Y = X W is two matmuls of the same size (dX = dY W^T, dW = X^T dY). Mode inference
    is the forward pass alone. The loss, the Adam update (O(parameters), once per step) and
    element-wise ops are left out: a lower bound of the work, close for num_units >= 32.
    Source: the 6 N FLOP per token of Kaplan et al., "Scaling Laws for Neural Language Models"
    (2020), section 2.1.

    Raises:
        KeyError: for a mode not in FORWARD_PASSES or a cell type not in GATES.
    """
    return (FORWARD_PASSES[mode] * time_steps
            * cell_step_flop(cell, batch_size, input_dim, num_units))


def computed_time_steps(cell: dict, impl: str, batch_longest: float) -> float:
    """Count the time steps a training step of ``impl`` in ``cell`` computes.

    One fact for the runners (the work recorded) and for resources (a cluster job's runtime).

    Args:
        cell: the cell's settings (value_of supplies defaults).
        impl: 'static' or 'dynamic'.
        batch_longest: the batch's longest sequence_length, where static_rnn's conds and
            dynamic_rnn's loop stop.

    Returns:
        max_len where the loop runs the padded length: an api other than compat_v1 (Keras
        masks), a cell without sequence_length, dynamic_rnn with loop_bound max_len (as up to
        TF 1.5). Else ``batch_longest``.
    """
    padded = (value_of(cell, "api") != "compat_v1"
              or not value_of(cell, "pass_sequence_length")
              or (impl == "dynamic" and value_of(cell, "loop_bound") == "max_len"))
    return float(cell["max_len"]) if padded else float(batch_longest)


def time_steps_per_step(sequence_length: np.ndarray, batch_size: int, first: int,
                        count: int) -> float:
    """Return the mean of the batch's longest sequence_length over steps ``first`` onwards.

    That is the cell calls each of those steps makes (the module docstring says why). Step k's
    batch is samples k x batch_size .. (k + 1) x batch_size - 1, modulo num_samples
    (runners.compat_v1's Dataset.repeat().batch()).

    Args:
        sequence_length: int [num_samples].
        batch_size: samples per batch.
        first: the first step.
        count: the number of steps.
    """
    lengths = np.asarray(sequence_length)
    steps = np.arange(first, first + count)[:, None]
    index = (steps * batch_size + np.arange(batch_size)[None, :]) % len(lengths)
    return float(lengths[index].max(axis=1).mean())
