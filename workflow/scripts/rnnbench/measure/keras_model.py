"""The seed's model for today's TensorFlow: a Keras RNN layer trained in a ``tf.function``.

api ``keras``: a Keras LSTM or GRU layer, ``unroll=True`` as static and ``unroll=False`` as
dynamic; logits are its last output (classes = num_units); mean sparse softmax
cross-entropy; Adam with TF1's defaults. ``keras_xla``: the same step with
``jit_compile=True``. ``keras_jax``: the same on Keras's JAX backend, in a ``jax.jit`` step;
TensorFlow is never imported. Keras masks and runs the full padded length, so
dynamic_rnn's loop-bound saving does not apply. Details, sources and the weight mapping:
docs/experiment.md, The models, in detail.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

import numpy as np

from rnnbench.measure.model import CELLS, initial_weights

FORGET_BIAS = 1.0  # TF1's BasicLSTMCell and LSTMCell default, added to the forget gate


def import_tf_keras() -> tuple[ModuleType, ModuleType]:
    """Import TensorFlow (eager) and the Keras it ships with, on Keras's TensorFlow backend.

    The Keras is Keras 3 from TF 2.16, tf.keras 2 before. The backend is TensorFlow whatever
    the user's ``KERAS_BACKEND`` or ``~/.keras/keras.json`` says: the api, not the machine,
    chooses the backend (keras_jax's is import_keras_jax).

    Returns:
        (tensorflow, keras).

    Raises:
        RuntimeError: if TensorFlow was imported with TF_USE_LEGACY_KERAS=1 (the compat_v1
            path's legacy Keras) in this process, or Keras was imported already on another
            backend.
    """
    if "tensorflow" in sys.modules and os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        raise RuntimeError("tensorflow was imported with TF_USE_LEGACY_KERAS=1: run the keras "
                           "api in a process of its own")
    os.environ.pop("TF_USE_LEGACY_KERAS", None)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["KERAS_BACKEND"] = "tensorflow"  # read by Keras 3 when it is first imported
    import tensorflow as tf

    import keras

    backend = getattr(keras.backend, "backend", lambda: "tensorflow")()  # tf.keras 2: none
    if backend != "tensorflow":
        raise RuntimeError(f"keras {keras.__version__} was imported on backend {backend!r} "
                           "before KERAS_BACKEND=tensorflow was set: run the keras apis in a "
                           "process of their own")
    tf.get_logger().setLevel("ERROR")
    return tf, keras


def import_keras_jax() -> ModuleType:
    """Import Keras 3 on its JAX backend, for api keras_jax.

    ``KERAS_BACKEND=jax`` is set before the import. Import JAX first with
    frameworks.import_jax (its device and thread flags).

    Returns:
        The ``keras`` module.

    Raises:
        RuntimeError: if Keras was imported already on another backend, or Keras imported
            TensorFlow (a keras_jax job never imports it).
    """
    if "keras" in sys.modules and os.environ.get("KERAS_BACKEND") != "jax":
        raise RuntimeError("keras was imported before KERAS_BACKEND=jax was set: run api "
                           "keras_jax in a process of its own")
    os.environ["KERAS_BACKEND"] = "jax"
    import keras

    if keras.backend.backend() != "jax" or "tensorflow" in sys.modules:
        raise RuntimeError(f"keras {keras.__version__} runs on backend "
                           f"{keras.backend.backend()!r} with tensorflow "
                           f"{'imported' if 'tensorflow' in sys.modules else 'not imported'}: "
                           "api keras_jax needs backend 'jax' and no TensorFlow")
    return keras


def configure(tf: ModuleType, device: str, intra_op: int, inter_op: int,
              grappler: bool = True) -> None:
    """Set eager TensorFlow up as model.session_config does a Session.

    Call before TensorFlow runs any op.

    Args:
        tf: the ``tensorflow`` module (import_tf_keras).
        device: "cpu" hides the GPUs; "gpu" grows GPU memory as needed.
        intra_op: intra-op threads.
        inter_op: inter-op threads.
        grappler: False turns Grappler's meta-optimizer off.

    Raises:
        RuntimeError: if device is "gpu" and TensorFlow sees no GPU.
    """
    gpus = tf.config.list_physical_devices("GPU")
    if device == "gpu" and not gpus:
        raise RuntimeError("device: 'gpu' was asked for, but TensorFlow sees no GPU")
    tf.config.threading.set_intra_op_parallelism_threads(intra_op)
    tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    if device == "cpu":
        tf.config.set_visible_devices([], "GPU")
    else:
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)
    if not grappler:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


def make_layer(keras: ModuleType, cell: str, num_units: int, unroll: bool) -> Any:
    """Return the Keras RNN layer for ``cell``, returning its last output [batch, num_units].

    Args:
        keras: the ``keras`` module.
        cell: basic_lstm or lstm (a Keras LSTM), or gru (a Keras GRU).
        num_units: the layer's units.
        unroll: True for static, False for dynamic.

    Raises:
        ValueError: for an unknown cell name.
    """
    if cell in ("basic_lstm", "lstm"):
        return keras.layers.LSTM(num_units, unroll=unroll)
    if cell == "gru":
        return keras.layers.GRU(num_units, unroll=unroll)
    raise ValueError(f"cell: unknown cell {cell!r}; expected one of {CELLS}")


def lstm_weights_from_compat_v1(kernel: np.ndarray, bias: np.ndarray, input_dim: int,
                                forget_bias: float = FORGET_BIAS) -> list[np.ndarray]:
    """Map a TF1 LSTM cell's kernel and bias to Keras LSTM weights that compute the same.

    The gate blocks are reordered (TF1 i, j, f, o to Keras i, f, c, o), the rows split at
    input_dim, and forget_bias added to the f block of the bias (docs/experiment.md, The
    models, in detail). u is num_units.

    Args:
        kernel: TF1's kernel, [input_dim + u, 4 u].
        bias: TF1's bias, [4 u].
        input_dim: features per time step.
        forget_bias: TF1's forget_bias, added in its cell.

    Returns:
        [kernel [input_dim, 4 u], recurrent_kernel [u, 4 u], bias [4 u]].

    Raises:
        ValueError: when the shapes do not fit together.
    """
    units = bias.shape[0] // 4
    if kernel.shape != (input_dim + units, 4 * units) or bias.shape != (4 * units,):
        raise ValueError(f"kernel {kernel.shape} and bias {bias.shape} are not a TF1 LSTM "
                         f"cell's for input_dim {input_dim}")

    def reorder(blocks: np.ndarray) -> np.ndarray:
        i, j, f, o = np.split(blocks, 4, axis=-1)
        return np.concatenate([i, f, j, o], axis=-1)

    keras_bias = reorder(bias).copy()
    keras_bias[units:2 * units] += forget_bias
    keras_kernel = reorder(kernel)
    return [keras_kernel[:input_dim], keras_kernel[input_dim:], keras_bias]


def initial_layer_weights(layer: Any, cell: str, input_dim: int, num_units: int,
                          seed: int) -> list[np.ndarray]:
    """Return the weights a built ``layer`` starts from, in ``layer.get_weights()`` order.

    LSTM (basic_lstm, lstm): the compat_v1 path's initial kernel (model.initial_weights:
    Glorot-uniform from ``seed``) and zero bias, mapped by lstm_weights_from_compat_v1. So every
    api starts from the same function. GRU: Glorot-uniform kernels drawn by
    model.initial_weights in the layer's own shapes, biases zero.

    Args:
        layer: the built layer (make_layer).
        cell: basic_lstm, lstm or gru.
        input_dim: features per time step.
        num_units: the layer's units.
        seed: seeds model.initial_weights.

    Returns:
        float32 arrays, for ``layer.set_weights``.
    """
    if cell in ("basic_lstm", "lstm"):
        name = "rnn/lstm_cell/kernel:0"
        kernel = initial_weights({name: (input_dim + num_units, 4 * num_units)}, seed)[name]
        return lstm_weights_from_compat_v1(kernel, np.zeros(4 * num_units, np.float32),
                                           input_dim)
    shapes = {f"{i}_{'kernel' if w.ndim == 2 else 'bias'}:0": tuple(w.shape)
              for i, w in enumerate(layer.get_weights())}
    drawn = initial_weights(shapes, seed)
    return [drawn.get(name, np.zeros(shape, np.float32)) for name, shape in shapes.items()]


def build_train_step(tf: ModuleType, keras: ModuleType, layer: Any, max_len: int,
                     xla: bool, pass_sequence_length: bool = True,
                     train: bool = True) -> tuple[Any, Any]:
    """Build the compiled train step and the optimizer it updates.

    The step is wrapped in ``tf.function`` (``jit_compile=xla``); its first call traces and
    compiles it.

    Args:
        tf, keras: the modules import_tf_keras returns.
        layer: the layer make_layer built.
        max_len: padded time steps.
        xla: compile with XLA (api keras_xla).
        pass_sequence_length: mask by sequence_length.
        train: False (mode inference) computes the forward pass and loss alone, with no
            gradient and no update; the optimizer is then unused.

    Returns:
        ``(train_step, optimizer)``. ``train_step(inputs, sequence_length, labels)`` takes
        float32 [batch, max_len, input_dim], int32 [batch], int32 [batch]. It returns the
        scalar loss, computed before one Adam update of ``layer``'s weights.
    """
    optimizer = keras.optimizers.Adam(learning_rate=0.001, epsilon=1e-8)

    def loss_of(inputs: Any, sequence_length: Any, labels: Any) -> Any:
        mask = tf.sequence_mask(sequence_length, max_len) if pass_sequence_length else None
        logits = layer(inputs, mask=mask)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))

    def train_step(inputs: Any, sequence_length: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_of(inputs, sequence_length, labels)
        grads = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply_gradients(zip(grads, layer.trainable_variables))
        return loss

    return tf.function(train_step if train else loss_of, jit_compile=xla), optimizer


def jax_train_step(keras: ModuleType, layer: Any, max_len: int,
                   pass_sequence_length: bool = True, train: bool = True
                   ) -> tuple[Any, tuple[list, list], list]:
    """Build api keras_jax's step: build_train_step's loss and Adam on Keras's JAX backend.

    The step is a pure function for ``jax.jit``; jax_model.compile_step builds and times it.

    Args:
        keras: the module import_keras_jax returns.
        layer: a built keras_jax layer, its weights set.
        max_len: padded time steps.
        pass_sequence_length: mask by sequence_length.
        train: False (mode inference) computes the forward pass and loss alone, and returns
            params and opt_state unchanged.

    Returns:
        ``(step, params, opt_state)``. ``step(params, opt_state, inputs, sequence_length,
        labels)`` takes float32 [batch, max_len, input_dim], int32 [batch], int32 [batch]. It
        returns ``(params, opt_state, loss)``, the loss computed before the update, as
        jax_model.train_step does. ``params`` are the layer's (trainable, non-trainable)
        variable values; ``opt_state`` the optimizer's.
    """
    import jax

    optimizer = keras.optimizers.Adam(learning_rate=0.001, epsilon=1e-8)
    optimizer.build(layer.trainable_variables)
    ops = keras.ops

    def loss_of(trainable: list, non_trainable: list, inputs: Any, sequence_length: Any,
                labels: Any) -> Any:
        mask = (ops.expand_dims(ops.arange(max_len), 0) < ops.expand_dims(sequence_length, 1)
                if pass_sequence_length else None)
        logits, _ = layer.stateless_call(trainable, non_trainable, inputs, mask=mask)
        return ops.mean(ops.sparse_categorical_crossentropy(labels, logits, from_logits=True))

    def train_step(params: tuple, opt_state: list, inputs: Any, sequence_length: Any,
                   labels: Any) -> tuple[tuple, list, Any]:
        trainable, non_trainable = params
        value, grads = jax.value_and_grad(loss_of)(trainable, non_trainable, inputs,
                                                   sequence_length, labels)
        trainable, opt_state = optimizer.stateless_apply(opt_state, grads, trainable)
        return (trainable, non_trainable), opt_state, value

    def inference_step(params: tuple, opt_state: list, inputs: Any, sequence_length: Any,
                       labels: Any) -> tuple[tuple, list, Any]:
        return params, opt_state, loss_of(*params, inputs, sequence_length, labels)

    params = ([v.value for v in layer.trainable_variables],
              [v.value for v in layer.non_trainable_variables])
    return (train_step if train else inference_step), params, [v.value for v in
                                                                optimizer.variables]
