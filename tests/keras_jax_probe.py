"""keras_jax side of tests/measure/test_keras_model.py, run in a fresh Python (Keras 3 on its JAX
backend, no TensorFlow), as a keras_jax job imports it (frameworks.import_jax, then
keras_model.import_keras_jax).

Prints one JSON line: "losses", per cell, sequence lengths (mixed, equal) and unroll, the
loss before and after one Adam step of keras_model.jax_train_step (built by
jax_model.compile_step); "padded", for lstm with mixed lengths, the first loss again with the
inputs beyond each sequence_length changed; "inference", the mode-inference step's loss at
the initial weights, twice (no update); "tensorflow", whether TensorFlow was imported. Timed
keras_jax runs are tested end to end (tests/measure/test_jax_model.py's tiny grid).
"""

import json
import sys

import numpy as np

from rnnbench.measure import data, frameworks, keras_model

LENGTHS = {"mixed": {"uniform": [1, 5]}, "equal": 5}


def main():
    frameworks.import_jax("cpu", 1)  # its flags, before anything imports JAX
    keras = keras_model.import_keras_jax()
    from rnnbench.measure import jax_model

    def losses(cell, lengths, unroll, train=True):
        arrays = data.make_dataset(max_len=5, sequence_length=lengths, input_dim=3,
                                   num_classes=4, num_samples=6, seed=1)
        layer = keras_model.make_layer(keras, cell, 4, unroll)
        layer.build((None, 5, 3))
        layer.set_weights(keras_model.initial_layer_weights(layer, cell, 3, 4, 0))
        step, params, opt_state = keras_model.jax_train_step(keras, layer, 5, train=train)
        batch = [arrays[k] for k in ("inputs", "sequence_length", "labels")]
        built = jax_model.compile_step(step, params, opt_state, *batch)
        padded = arrays["inputs"].copy()
        padded[np.arange(5)[None, :] >= arrays["sequence_length"][:, None]] = 123.0
        _, _, on_padded = built.step(params, opt_state, padded, *batch[1:])
        params, opt_state, first = built.step(params, opt_state, *batch)
        _, _, second = built.step(params, opt_state, *batch)
        return [float(first), float(second)], float(on_padded)

    out = {"losses": {}, "padded": {}}
    # GRU (Keras's reset_after=True, not TF1's GRUCell): unroll=True against False alone
    for cell, name, unroll in [("lstm", n, u) for n in LENGTHS for u in (True, False)] + [
            ("gru", "mixed", True), ("gru", "mixed", False)]:
        values, on_padded = losses(cell, LENGTHS[name], unroll)
        out["losses"][f"{cell} {name} {unroll}"] = values
        if cell == "lstm" and name == "mixed":
            out["padded"][str(unroll)] = on_padded
    out["inference"] = losses("lstm", LENGTHS["mixed"], False, train=False)[0]
    out["tensorflow"] = "tensorflow" in sys.modules
    print(json.dumps(out))


if __name__ == "__main__":
    main()
