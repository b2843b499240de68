"""The keras apis (rnnbench.measure.keras_model): unroll=True and unroll=False compute the same function
as each other and as compat_v1's static_rnn / dynamic_rnn from the same weights (timed keras
runs are tested end to end, in test_workflow). Keras runs eagerly without the legacy Keras that the compat_v1 tests
load into this process, so its side runs in a subprocess (tests/keras_probe.py)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from rnnbench.measure import data, keras_model, model

pytestmark = pytest.mark.slow  # each test builds or trains a model in a framework

tf = model.import_tf()
tf1 = tf.compat.v1
PROBE = REPO / "tests" / "keras_probe.py"


def keras_probe(workdir):
    """tests/keras_probe.py's output, from a fresh Python (``workdir`` unused), with
    KERAS_BACKEND=jax in its environment as a keras_jax user may have it: the keras api runs
    on the TensorFlow backend all the same. Run in the background from the session's start
    (conftest)."""
    proc = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "KERAS_BACKEND": "jax",
                                            "PYTHONPATH": str(REPO / "workflow" / "scripts")})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# test name -> scenario: conftest starts the probe once when the session starts
SCENARIOS = {name: keras_probe for name in (
    "test_every_api_computes_the_same_lstm_loss", "test_keras_gru_unroll_true_and_false_agree",
    "test_keras_masks_the_padding",
    "test_the_keras_api_runs_on_tensorflow_whatever_keras_backend_says")}


def should_run():
    return True


@pytest.fixture
def keras_side(scenarios, request):
    """The probe's output (keras_probe), started with the session."""
    return scenarios[request.node.name][1]


def compat_v1_losses(cell, lengths):
    """compat_v1 static and dynamic loss before and after one Adam step, in this process."""
    arrays = data.make_dataset(max_len=5, sequence_length=lengths, input_dim=3, num_classes=4,
                               num_samples=6, seed=1)
    out = {}
    for impl in ("static", "dynamic"):
        with tf.Graph().as_default():
            loss = model.build_loss(tf, tf.constant(arrays["inputs"]),
                                    tf.constant(arrays["sequence_length"]),
                                    tf.constant(arrays["labels"]), impl, cell, 4)
            train = tf1.train.AdamOptimizer().minimize(loss)
            with tf1.Session() as session:
                session.run(tf1.global_variables_initializer())
                model.load_initial_weights(tf, session, 0)
                first, _ = session.run([loss, train])
                out[impl] = [float(first), float(session.run(loss))]
    return out


def test_weight_mapping_reorders_gates_and_moves_the_forget_bias():
    units, input_dim = 2, 3
    # block b of TF1's gates (i, j, f, o) filled with b, rows numbered
    kernel = np.repeat(np.arange(4.0), units)[None, :] + 10 * np.arange(input_dim + units)[:, None]
    bias = np.repeat(np.arange(4.0), units)
    k, r, b = keras_model.lstm_weights_from_compat_v1(kernel, bias, input_dim)
    assert k.shape == (input_dim, 4 * units) and r.shape == (units, 4 * units)
    # Keras's order i, f, c(= TF1's j), o; the forget bias goes to f only
    assert list(b) == [0, 0, 2 + 1.0, 2 + 1.0, 1, 1, 3, 3]
    assert list(k[0]) == [0, 0, 2, 2, 1, 1, 3, 3] and r[0, 0] == 10 * input_dim
    with pytest.raises(ValueError, match="input_dim 4"):
        keras_model.lstm_weights_from_compat_v1(kernel, bias, 4)


def test_every_api_computes_the_same_lstm_loss(keras_side):
    """Same data (mixed lengths), same initial weights: the loss before and after one Adam
    step agrees across compat_v1 static/dynamic and Keras unroll True/False, with and
    without XLA."""
    expected = compat_v1_losses("lstm", {"uniform": [1, 5]})
    assert expected["static"] == pytest.approx(expected["dynamic"], rel=1e-5)
    for api in ("keras", "keras_xla"):
        for unroll in ("True", "False"):
            got = keras_side["lstm"][api][unroll]
            # XLA fuses and reorders float32 arithmetic; 1e-5 holds for it here too
            assert got == pytest.approx(expected["static"], rel=1e-5), (api, unroll)


def test_the_keras_api_runs_on_tensorflow_whatever_keras_backend_says(keras_side):
    assert keras_side["backend"] == "tensorflow"  # the probe ran with KERAS_BACKEND=jax


def test_keras_gru_unroll_true_and_false_agree(keras_side):
    static, dynamic = (keras_side["gru"]["keras"][u] for u in ("True", "False"))
    assert static == pytest.approx(dynamic, rel=1e-5)
    assert static[1] != static[0]  # the Adam update changed the weights


def test_keras_masks_the_padding(keras_side):
    """Changing the padding beyond each sequence_length leaves the loss unchanged."""
    for unroll in ("True", "False"):
        before, after = keras_side["padding"][unroll]
        assert before == pytest.approx(after, rel=1e-6)
    assert keras_side["padding"]["output_shape"] == [6, 4]  # [batch, num_units]


def inference_probe(workdir):
    """tests/inference_probe.py's output, from a fresh Python (``workdir`` unused): timed runs
    of each keras api in both modes. Run in the background from the session's start."""
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "inference_probe.py")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO / "workflow" / "scripts")})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


SCENARIOS["test_inference_times_the_forward_pass_alone_in_each_keras_api"] = inference_probe


def test_inference_times_the_forward_pass_alone_in_each_keras_api(scenarios):
    runs = scenarios["test_inference_times_the_forward_pass_alone_in_each_keras_api"][1]
    for api in ("keras", "keras_xla"):
        for impl in ("static", "dynamic"):
            train, inference = runs[f"{api} {impl} train"], runs[f"{api} {impl} inference"]
            # the same weights and first batch: the same first loss; no update in inference
            # (its loss at a later step of the same batch is unchanged), training moves it
            assert inference["loss"][0] == pytest.approx(train["loss"][0], abs=1e-6)
            assert inference["loss"][1] == pytest.approx(inference["loss"][0], abs=1e-6)
            assert train["loss"][1] != pytest.approx(train["loss"][0], abs=1e-6)
            # no gradient or Adam in the traced graph: fewer nodes, a third of the FLOP
            assert inference["nodes"] < train["nodes"] / 2
            assert inference["flop"] == pytest.approx(train["flop"] / 3)
            assert inference["fetches"] == ["loss"] and inference["steps"] == 3
            assert all(phase > 0 for phase in inference["phases"])


def keras_jax_probe(workdir):
    """tests/keras_jax_probe.py's losses, from a fresh Python (Keras on JAX; ``workdir``
    unused). Run in the background from the session's start."""
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "keras_jax_probe.py")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO / "workflow" / "scripts")})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


SCENARIOS.update({name: keras_jax_probe for name in (
    "test_keras_jax_computes_compat_v1s_lstm_loss", "test_keras_jax_gru_unroll_agrees",
    "test_keras_jax_masks_the_padding", "test_keras_jax_inference_leaves_the_weights")})


def test_keras_jax_computes_compat_v1s_lstm_loss(scenarios):
    """api keras_jax (Keras 3 on JAX, a jax.jit step): from compat_v1's weights and batch,
    compat_v1's loss before and after one Adam step, to 1e-5, for unroll=True and False,
    with mixed and with equal sequence lengths."""
    side = scenarios["test_keras_jax_computes_compat_v1s_lstm_loss"][1]
    assert side["tensorflow"] is False
    for lengths, spec in (("mixed", {"uniform": [1, 5]}), ("equal", 5)):
        expected = compat_v1_losses("lstm", spec)
        for unroll in ("True", "False"):
            got = side["losses"][f"lstm {lengths} {unroll}"]
            assert got == pytest.approx(expected["static"], rel=1e-5), (lengths, unroll)
            assert got[1] != got[0]  # the Adam update changed the weights


def test_keras_jax_gru_unroll_agrees(scenarios):
    """Keras's GRU (reset_after=True) is not TF1's GRUCell: unroll=True against False."""
    side = scenarios["test_keras_jax_gru_unroll_agrees"][1]
    static, dynamic = (side["losses"][f"gru mixed {u}"] for u in ("True", "False"))
    assert static == pytest.approx(dynamic, rel=1e-5) and static[1] != static[0]


def test_keras_jax_masks_the_padding(scenarios):
    """Changing the inputs beyond each sequence_length leaves the first loss unchanged."""
    side = scenarios["test_keras_jax_masks_the_padding"][1]
    for unroll in ("True", "False"):
        assert side["padded"][unroll] == pytest.approx(side["losses"][f"lstm mixed {unroll}"][0],
                                                       rel=1e-6)


def test_keras_jax_inference_leaves_the_weights(scenarios):
    """Mode inference's step: training's first loss, and no update (the same loss again)."""
    side = scenarios["test_keras_jax_inference_leaves_the_weights"][1]
    first, second = side["inference"]
    assert first == pytest.approx(side["losses"]["lstm mixed False"][0], rel=1e-6)
    assert second == first
