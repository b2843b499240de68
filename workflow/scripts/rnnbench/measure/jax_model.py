"""The seed's model in JAX: one RNN cell in ``jax.lax.scan``, softmax loss, Adam.

It computes rnnbench.measure.model's compat_v1 function from the same weights: TF1's cells,
kernel layout, gate order and forget_bias, weights keyed by TensorFlow's variable names, and
TF1's AdamOptimizer. Logits are the final ``h`` (classes = num_units). The scan always runs
the full padded max_len: the loop_bound="max_len" variant. This module never imports
TensorFlow. Details and sources: docs/experiment.md, The models, in detail.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rnnbench.measure.model import CELLS, initial_weights

FORGET_BIAS = 1.0  # TF1's BasicLSTMCell and LSTMCell default, added to the forget gate
# tf.compat.v1.train.AdamOptimizer's defaults
LEARNING_RATE, BETA1, BETA2, EPSILON = 0.001, 0.9, 0.999, 1e-8
SCOPE = {"basic_lstm": "rnn/basic_lstm_cell", "lstm": "rnn/lstm_cell", "gru": "rnn/gru_cell"}

Params = dict[str, jax.Array]


def param_shapes(cell: str, input_dim: int, num_units: int) -> dict[str, tuple[int, ...]]:
    """Return TensorFlow's variable names and shapes for ``cell`` under the scope ``rnn``.

    Raises:
        ValueError: for an unknown cell name.
    """
    if cell not in CELLS:
        raise ValueError(f"cell: unknown cell {cell!r}; expected one of {CELLS}")
    rows, scope = input_dim + num_units, SCOPE[cell]
    if cell == "gru":
        return {f"{scope}/gates/kernel:0": (rows, 2 * num_units),
                f"{scope}/gates/bias:0": (2 * num_units,),
                f"{scope}/candidate/kernel:0": (rows, num_units),
                f"{scope}/candidate/bias:0": (num_units,)}
    return {f"{scope}/kernel:0": (rows, 4 * num_units), f"{scope}/bias:0": (4 * num_units,)}


def initial_params(cell: str, input_dim: int, num_units: int, seed: int) -> dict[str, np.ndarray]:
    """Return the weights the compat_v1 model starts from after model.load_initial_weights.

    Kernels come from model.initial_weights(seed); biases sit at the cell's own constant (GRU
    gates 1.0, all other biases 0.0).

    Returns:
        float32 arrays by TensorFlow variable name.
    """
    shapes = param_shapes(cell, input_dim, num_units)
    kernels = initial_weights(shapes, seed)
    return {name: kernels[name] if name in kernels
            else np.full(shape, 1.0 if name.endswith("gates/bias:0") else 0.0, np.float32)
            for name, shape in shapes.items()}


def cell_step(params: Params, cell: str, x: jax.Array, state: tuple[jax.Array, ...]
              ) -> tuple[jax.Array, ...]:
    """Run one step of ``cell`` (TF1's BasicLSTMCell.call or GRUCell.call arithmetic).

    The formulas: docs/experiment.md, The models, in detail.

    Args:
        params: the weights by TensorFlow variable name.
        cell: basic_lstm, lstm or gru.
        x: float32 [batch, input_dim].
        state: (c, h) for the LSTMs or (h,) for gru, each [batch, num_units].

    Returns:
        The new state, in the same form.
    """
    scope = SCOPE[cell]
    if cell == "gru":
        (h,) = state
        gates = jax.nn.sigmoid(jnp.concatenate([x, h], 1) @ params[f"{scope}/gates/kernel:0"]
                               + params[f"{scope}/gates/bias:0"])
        r, u = jnp.split(gates, 2, axis=1)
        candidate = jnp.tanh(jnp.concatenate([x, r * h], 1) @ params[f"{scope}/candidate/kernel:0"]
                             + params[f"{scope}/candidate/bias:0"])
        return (u * h + (1 - u) * candidate,)
    c, h = state
    gates = jnp.concatenate([x, h], 1) @ params[f"{scope}/kernel:0"] + params[f"{scope}/bias:0"]
    i, j, f, o = jnp.split(gates, 4, axis=1)
    new_c = c * jax.nn.sigmoid(f + FORGET_BIAS) + jax.nn.sigmoid(i) * jnp.tanh(j)
    return new_c, jnp.tanh(new_c) * jax.nn.sigmoid(o)


def rnn(params: Params, cell: str, inputs: jax.Array, sequence_length: jax.Array,
        unroll: int = 1) -> tuple[jax.Array, ...]:
    """Return the final state of ``cell`` over ``inputs``, masked by length.

    ``jax.lax.scan(..., unroll=unroll)`` runs all max_len steps, the cell on the whole batch.
    A sample's state is kept from its sequence_length on (``jnp.where(t < sequence_length,
    new, old)``). So the result is the state at each sample's last valid step (zero for a
    length of 0), as dynamic_rnn with sequence_length returns. There is no loop-bound saving.

    Args:
        params: the weights by TensorFlow variable name.
        cell: basic_lstm, lstm or gru.
        inputs: float32 [batch, max_len, input_dim].
        sequence_length: int32 [batch], each in 0..max_len (time steps).
        unroll: a static int >= 1 (max_len unrolls fully); it changes the code, not the result.

    Returns:
        (c, h) for the LSTMs, (h,) for gru; each float32 [batch, num_units].

    Raises:
        ValueError: for an unknown cell name.
    """
    if cell not in SCOPE:
        raise ValueError(f"cell: unknown cell {cell!r}; expected one of {CELLS}")
    batch, max_len, _ = inputs.shape
    scope = SCOPE[cell]
    num_units = (params[f"{scope}/candidate/bias:0"].shape[0] if cell == "gru"
                 else params[f"{scope}/bias:0"].shape[0] // 4)
    zeros = jnp.zeros((batch, num_units), inputs.dtype)
    state = (zeros,) if cell == "gru" else (zeros, zeros)

    def step(state: tuple[jax.Array, ...], t_x: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
        t, x = t_x
        keep = (t < sequence_length)[:, None]
        new = cell_step(params, cell, x, state)
        return tuple(jnp.where(keep, n, o) for n, o in zip(new, state)), None

    time_major = jnp.swapaxes(inputs, 0, 1)  # [max_len, batch, input_dim]
    state, _ = jax.lax.scan(step, state, (jnp.arange(max_len), time_major), unroll=unroll)
    return state


def loss(params: Params, cell: str, inputs: jax.Array, sequence_length: jax.Array,
         labels: jax.Array, unroll: int = 1) -> jax.Array:
    """Return the scalar mean sparse softmax cross-entropy (nats) of the final h.

    The final h [batch, num_units] are the logits. ``labels`` are int32 [batch], each in
    [0, num_units); inputs and sequence_length are as for ``rnn``.
    """
    logits = rnn(params, cell, inputs, sequence_length, unroll)[-1]
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))


class AdamState(NamedTuple):
    """TF1 AdamOptimizer's slots: m and v per weight, and the beta powers.

    The beta powers are beta1^t and beta2^t for the next step t. They start at beta1 and beta2,
    as TF1's accumulators do.
    """
    m: Params
    v: Params
    beta1_power: jax.Array
    beta2_power: jax.Array


def adam_init(params: Params) -> AdamState:
    """Zero slots and the first step's beta powers."""
    zeros = {name: jnp.zeros_like(value) for name, value in params.items()}
    return AdamState(zeros, dict(zeros), jnp.float32(BETA1), jnp.float32(BETA2))


def adam_update(params: Params, grads: Params, state: AdamState) -> tuple[Params, AdamState]:
    """Run one step of ``tf.compat.v1.train.AdamOptimizer()`` (lr 0.001, beta1 0.9, beta2 0.999).

    The update, with epsilon 1e-8 added to sqrt(v) without bias correction, as TF1 does::

        lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr_t * m / (sqrt(v) + epsilon)

    Source: TensorFlow's ``training/adam.py`` and ApplyAdam kernel (docs/experiment.md, The
    models, in detail, says how it differs from Kingma and Ba's algorithm 1 and Keras's Adam).

    Returns:
        (params, state) after the update.
    """
    lr_t = LEARNING_RATE * jnp.sqrt(1 - state.beta2_power) / (1 - state.beta1_power)
    m = {n: BETA1 * state.m[n] + (1 - BETA1) * g for n, g in grads.items()}
    v = {n: BETA2 * state.v[n] + (1 - BETA2) * g * g for n, g in grads.items()}
    new_params = {n: w - lr_t * m[n] / (jnp.sqrt(v[n]) + EPSILON) for n, w in params.items()}
    return new_params, AdamState(m, v, state.beta1_power * BETA1, state.beta2_power * BETA2)


def train_step(params: Params, opt_state: AdamState, inputs: jax.Array,
               sequence_length: jax.Array, labels: jax.Array, cell: str, unroll: int = 1
               ) -> tuple[Params, AdamState, jax.Array]:
    """Run one Adam step on one batch, as ``session.run([train_op, loss])`` does.

    Arrays are as for ``loss``.

    Returns:
        (params, opt_state, loss before the update).
    """
    value, grads = jax.value_and_grad(loss)(params, cell, inputs, sequence_length, labels, unroll)
    params, opt_state = adam_update(params, grads, opt_state)
    return params, opt_state, value


class CompiledStep(NamedTuple):
    """A compiled train step and what building it took (wall seconds)."""
    step: Callable[..., tuple[Params, AdamState, jax.Array]]
    trace_s: float  # jax.jit(...).lower(...): tracing to a jaxpr and lowering to StableHLO
    compile_s: float  # .compile(): XLA's compilation of the lowered module
    lowered_text: str  # the StableHLO module (its size: what tracing built)
    compiled_text: str  # the optimised HLO XLA compiled (its size: the unrolled program)


def inference_step(params: Params, opt_state: AdamState, inputs: jax.Array,
                   sequence_length: jax.Array, labels: jax.Array, cell: str, unroll: int = 1
                   ) -> tuple[Params, AdamState, jax.Array]:
    """Run the forward pass and loss alone (mode inference), with train_step's arguments.

    Returns:
        train_step's results; params and opt_state come back unchanged.
    """
    return params, opt_state, loss(params, cell, inputs, sequence_length, labels, unroll)


def step_function(cell: str, unroll: int, train: bool = True) -> Callable[..., Any]:
    """Return the step for ``cell`` and ``unroll``: train_step, or inference_step without train.

    The step is ``step(params, opt_state, inputs, sequence_length, labels)``, to be built by
    compile_step (runners.jax).
    """
    return partial(train_step if train else inference_step, cell=cell, unroll=unroll)


def compile_step(step: Callable[..., Any], *args: Any) -> CompiledStep:
    """jit ``step`` and build it for ``args``' shapes and dtypes, timing its two phases apart.

    The phases are tracing-and-lowering and XLA's compilation. ``args`` (pytrees of arrays) are
    moved to the device before the timing, so neither phase includes the backend's start-up.
    Used by runners.jax for api jax_scan's step (step_function) and keras_jax's
    (keras_model.jax_train_step).

    Returns:
        A CompiledStep. Its ``step(*args)`` runs without tracing or compiling, and accepts only
        those shapes and dtypes.
    """
    args = jax.device_put(args)
    jax.block_until_ready(args)
    jitted = jax.jit(step)
    start = time.perf_counter()
    lowered = jitted.lower(*args)
    traced = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return CompiledStep(compiled, traced - start, done - traced, lowered.as_text(),
                        compiled.as_text() or "")
