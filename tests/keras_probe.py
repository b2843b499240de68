"""Keras side of tests/measure/test_keras_model.py, run in a fresh Python (eager TensorFlow, Keras 3).

Prints one JSON line: the losses per cell, api and unroll (lstm with both apis, gru with
keras: each XLA compilation takes seconds) and "padding" (masking). Timed keras runs are
tested end to end (test_workflow, tests/tiny.yaml).
"""

import json

import numpy as np

from rnnbench.measure import data, frameworks, keras_model

frameworks.keep_jax_out()  # as a keras job (train.py); run with KERAS_BACKEND=jax (test_keras_model)
tf, keras = keras_model.import_tf_keras()
keras_model.configure(tf, "cpu", 1, 1)


def first_two_losses(cell, arrays, api, unroll):
    layer = keras_model.make_layer(keras, cell, 4, unroll)
    layer.build((None, 5, 3))
    layer.set_weights(keras_model.initial_layer_weights(layer, cell, 3, 4, 0))
    step, _ = keras_model.build_train_step(tf, keras, layer, 5, api == "keras_xla")
    batch = [tf.constant(arrays[k]) for k in ("inputs", "sequence_length", "labels")]
    # each call returns the loss before its update: the loss at the initial weights, then
    # after one Adam update
    return [float(step(*batch)), float(step(*batch))]


def losses():
    out = {}
    for cell, apis in (("lstm", ("keras", "keras_xla")), ("gru", ("keras",))):
        arrays = data.make_dataset(max_len=5, sequence_length={"uniform": [1, 5]}, input_dim=3,
                                   num_classes=4, num_samples=6, seed=1)
        out[cell] = {api: {str(u): first_two_losses(cell, arrays, api, u) for u in (True, False)}
                     for api in apis}
    arrays = data.make_dataset(max_len=5, sequence_length={"uniform": [1, 5]}, input_dim=3,
                               num_classes=4, num_samples=6, seed=1)
    padded = {**arrays, "inputs": arrays["inputs"].copy()}
    mask = np.arange(5)[None, :] >= arrays["sequence_length"][:, None]
    padded["inputs"][mask] = 123.0
    out["padding"] = {}
    for unroll in (True, False):
        layer = keras_model.make_layer(keras, "lstm", 4, unroll)
        layer.build((None, 5, 3))
        layer.set_weights(keras_model.initial_layer_weights(layer, "lstm", 3, 4, 0))
        values = []
        for source in (arrays, padded):
            lengths_mask = tf.sequence_mask(source["sequence_length"], 5)
            logits = layer(tf.constant(source["inputs"]), mask=lengths_mask)
            values.append(float(tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=source["labels"], logits=logits))))
        out["padding"][str(unroll)] = values
        out["padding"]["output_shape"] = list(logits.shape)
    return out


if __name__ == "__main__":
    print(json.dumps({**losses(), "backend": keras.backend.backend()}))
