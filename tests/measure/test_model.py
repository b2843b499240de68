"""static_rnn and dynamic_rnn compute the same function (rnnbench.measure.model), and a timed run
returns a schema-valid result (rnnbench.measure.bench). Runs TensorFlow in this process."""

import sys

import numpy as np
import pytest

from conftest import REPO
from fetch_plan import fetch_plan
from rnnbench.measure import bench, data, frameworks, metadata, model, timing
from rnnbench.measure.schema import validate_result

pytestmark = pytest.mark.slow  # each test builds or trains a model in a framework

tf = model.import_tf()
WORKFLOW_META = {"git": metadata.git_commit(REPO), "image_sha256": None}
tf1 = tf.compat.v1


def losses(impl, cell, batch, num_units, seed=0, adam_steps=2, **ablation):
    """Loss before and after each of ``adam_steps`` Adam steps on one fixed batch
    (``ablation``: loop_bound, pass_sequence_length for build_loss)."""
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf1.placeholder(tf.float32, batch["inputs"].shape)
        lengths = tf1.placeholder(tf.int32, batch["sequence_length"].shape)
        labels = tf1.placeholder(tf.int32, batch["labels"].shape)
        loss = model.build_loss(tf, inputs, lengths, labels, impl, cell, num_units, **ablation)
        train_op = tf1.train.AdamOptimizer().minimize(loss)
        init = tf1.global_variables_initializer()
        names = sorted(v.name for v in tf1.trainable_variables())
        with tf1.Session(graph=graph) as session:
            session.run(init)
            model.load_initial_weights(tf, session, seed)
            feed = {inputs: batch["inputs"], lengths: batch["sequence_length"],
                    labels: batch["labels"]}
            out = [session.run(loss, feed)]
            for _ in range(adam_steps):
                session.run(train_op, feed)
                out.append(session.run(loss, feed))
    return np.array(out), names


@pytest.mark.parametrize("cell", model.CELLS)
@pytest.mark.parametrize("sequence_length", [6, {"uniform": [1, 6]}], ids=["equal", "mixed"])
def test_static_and_dynamic_give_the_same_loss(cell, sequence_length):
    batch = data.make_dataset(max_len=6, sequence_length=sequence_length, input_dim=3,
                              num_classes=8, num_samples=5, seed=1)
    static, static_vars = losses("static", cell, batch, 8)
    dynamic, dynamic_vars = losses("dynamic", cell, batch, 8)
    assert static_vars == dynamic_vars  # same variables, so the same initial weights
    relative = np.abs(static - dynamic) / np.abs(dynamic)
    assert relative.max() < 1e-5, (static, dynamic)
    assert static[-1] < static[0]  # Adam really trains


@pytest.mark.parametrize("cell", ["basic_lstm", "gru"])
def test_the_full_length_loop_gives_the_same_loss(cell):
    # mixed lengths, none reaching max_len: the max_len loop runs steps no batch needs
    batch = data.make_dataset(max_len=6, sequence_length={"uniform": [1, 4]}, input_dim=3,
                              num_classes=8, num_samples=5, seed=3)
    standard, names = losses("dynamic", cell, batch, 8)
    full, full_names = losses("dynamic", cell, batch, 8, loop_bound="max_len")
    assert full_names == names  # same variables, so the same initial weights
    assert (np.abs(full - standard) / np.abs(standard)).max() < 1e-5, (full, standard)


def test_without_sequence_length_the_padding_counts_alike_in_both():
    batch = data.make_dataset(max_len=6, sequence_length={"uniform": [1, 4]}, input_dim=3,
                              num_classes=8, num_samples=5, seed=3)
    static, _ = losses("static", "basic_lstm", batch, 8, pass_sequence_length=False)
    dynamic, _ = losses("dynamic", "basic_lstm", batch, 8, pass_sequence_length=False)
    masked, _ = losses("static", "basic_lstm", batch, 8)
    assert (np.abs(static - dynamic) / np.abs(dynamic)).max() < 1e-5
    assert abs(static[0] - masked[0]) > 1e-4  # the final state now includes the padding


def test_padding_beyond_sequence_length_is_ignored():
    batch = data.make_dataset(max_len=6, sequence_length={"uniform": [1, 4]}, input_dim=3,
                              num_classes=8, num_samples=5, seed=2)
    changed = {**batch, "inputs": batch["inputs"].copy()}
    for row, length in enumerate(batch["sequence_length"]):
        changed["inputs"][row, length:] = 7.0
    for impl in ("static", "dynamic"):
        original, _ = losses(impl, "basic_lstm", batch, 8, adam_steps=0)
        padded, _ = losses(impl, "basic_lstm", changed, 8, adam_steps=0)
        assert original[0] == pytest.approx(padded[0], rel=1e-6)


def test_initial_weights_are_seeded_and_glorot_bounded():
    shapes = {"rnn/cell/kernel:0": (11, 32), "rnn/cell/bias:0": (32,)}
    first, again = model.initial_weights(shapes, 0), model.initial_weights(shapes, 0)
    assert list(first) == ["rnn/cell/kernel:0"]  # biases keep the cell's own initialiser
    np.testing.assert_array_equal(first["rnn/cell/kernel:0"], again["rnn/cell/kernel:0"])
    assert np.abs(first["rnn/cell/kernel:0"]).max() <= np.sqrt(6 / (11 + 32))
    assert not np.array_equal(first["rnn/cell/kernel:0"],
                              model.initial_weights(shapes, 1)["rnn/cell/kernel:0"])


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="'lstmm'"):
        model.make_cell(tf, "lstmm", 4)
    with tf.Graph().as_default():
        x = tf1.placeholder(tf.float32, (2, 3, 1))
        with pytest.raises(ValueError, match="'unrolled'"):
            model.build_loss(tf, x, tf.constant([3, 3]), tf.constant([0, 1]), "unrolled",
                             "gru", 4)


@pytest.mark.parametrize("impl", ["static", "dynamic"])
def test_a_timed_run_returns_a_valid_result(impl, tiny_cell, tiny_protocol):
    arrays = data.make_dataset(max_len=6, sequence_length={"uniform": [2, 6]}, input_dim=3,
                               num_classes=8, num_samples=12, seed=0)
    result = bench.run(impl, tiny_cell, arrays, tiny_protocol, WORKFLOW_META)
    result.update(cell_id="tiny", repeat=1, job_threads=1, data={"path": "x", "sha256": "y"})
    validate_result(result)
    timings = result["timings"]
    assert len(timings["step_s"]) == 4 and len(timings["warmup_step_s"]) == 1
    assert timings["median_step_s"] == pytest.approx(np.median(timings["step_s"]))
    assert result["protocol"]["fetches"] == ["train_op", "loss"]
    assert result["protocol"]["parallel_iterations"] == 4  # defaults to batch_size
    assert timings["hook_steps"] == [] and timings["mean_step_s"] == pytest.approx(
        np.mean(timings["step_s"]))
    assert result["metadata"]["tf_version"] == tf.__version__
    assert result["metadata"]["keras_version"] is None  # compat_v1: no Keras model
    assert result["metadata"]["is_cuda_build"] is False  # the venv holds tensorflow-cpu only
    assert np.isfinite(result["loss"]["first"]) and np.isfinite(result["loss"]["last"])


def test_a_run_settles_its_warm_up_measures_long_enough_and_records_the_noise(
        tiny_cell, tiny_protocol):
    """The warm-up is tested for settling (two blocks of 20 steps at least), the measurement
    runs past ``steps`` until it has lasted min_measure_s, and the result records the load,
    steal time and CPU frequency around it (schema-valid)."""
    arrays = data.make_dataset(max_len=6, sequence_length={"uniform": [2, 6]}, input_dim=3,
                               num_classes=8, num_samples=12, seed=0)
    protocol = {**tiny_protocol, "warmup_steps": 0, "max_warmup_steps": 200,
                "min_measure_s": 0.3, "grappler_alone": False}
    result = bench.run("dynamic", tiny_cell, arrays, protocol, WORKFLOW_META)
    result.update(cell_id="tiny", repeat=1, job_threads=1, data={"path": "x", "sha256": "y"})
    validate_result(result)
    timings = result["timings"]
    assert 40 <= len(timings["warmup_step_s"]) <= 200
    assert timings["warmup_settled"] in (True, False)
    assert len(timings["step_s"]) > 4 and sum(timings["step_s"]) >= 0.25
    noise = result["noise"]
    assert len(noise["load_average_before"]) == 3 and len(noise["load_average_after"]) == 3
    assert 0 <= noise["steal_share"] < 1
    # the measured steps' hook plan and work follow the steps actually run
    assert timings["hook_steps"] == []
    assert result["work"]["time_steps_per_step"] > 0


def test_ablations_reach_the_run(tiny_cell, tiny_protocol):
    arrays = data.make_dataset(max_len=6, sequence_length={"uniform": [2, 6]}, input_dim=3,
                               num_classes=8, num_samples=12, seed=0)
    standard = bench.run("dynamic", tiny_cell, arrays, tiny_protocol, WORKFLOW_META)
    cell = {**tiny_cell, "loop_bound": "max_len", "meta_optimizer": "off"}
    ablated = bench.run("dynamic", cell, arrays, tiny_protocol, WORKFLOW_META)
    assert ablated["cell"]["loop_bound"] == "max_len" and ablated["cell"]["meta_optimizer"] == "off"
    # the full loop computes all 6 steps; the standard one each batch's longest (<= 6)
    assert ablated["work"]["time_steps_per_step"] == 6
    assert standard["work"]["time_steps_per_step"] <= 6
    assert ablated["loss"]["first"] == pytest.approx(standard["loss"]["first"], rel=1e-5)
    # meta-optimizer off reaches Grappler: it then returns the graph as it was given
    graph = ablated["graph"]
    assert graph["optimised_node_count"] == graph["node_count"] - graph["function_node_count"]
    assert standard["graph"]["optimised_node_count"] != standard["graph"]["node_count"]


@pytest.mark.parametrize("impl", ["static", "dynamic"])
def test_inference_times_the_forward_pass_alone(impl, tiny_cell, tiny_protocol):
    arrays = data.make_dataset(max_len=6, sequence_length={"uniform": [2, 6]}, input_dim=3,
                               num_classes=8, num_samples=4, seed=0)  # one batch, every step
    train = bench.run(impl, tiny_cell, arrays, tiny_protocol, WORKFLOW_META)
    inference = bench.run(impl, {**tiny_cell, "mode": "inference"}, arrays, tiny_protocol,
                          WORKFLOW_META)
    inference.update(cell_id="tiny", repeat=1, job_threads=1, data={"path": "x", "sha256": "y"})
    validate_result(inference)
    # the same weights and batch: the same loss, unchanged by its steps (no update)
    assert inference["loss"]["first"] == pytest.approx(train["loss"]["first"], rel=1e-6)
    assert inference["loss"]["last"] == pytest.approx(inference["loss"]["first"], rel=1e-6)
    assert train["loss"]["last"] < train["loss"]["first"]  # training moves it
    # no gradient or Adam in the graph; the loss alone fetched; a third of the FLOP
    assert inference["protocol"]["fetches"] == ["loss"]
    assert inference["graph"]["node_count"] < train["graph"]["node_count"] / 2
    assert inference["work"]["train_step_flop"] == pytest.approx(
        train["work"]["train_step_flop"] / 3)
    assert len(inference["timings"]["step_s"]) == 4
    assert inference["timings"]["graph_construction_s"] > 0


def test_mismatched_arrays_are_refused_before_tensorflow_work(tiny_cell, tiny_protocol):
    arrays = data.make_dataset(max_len=7, sequence_length=3, input_dim=3, num_classes=8,
                               num_samples=12, seed=0)
    with pytest.raises(ValueError, match="does not match"):
        bench.run("static", tiny_cell, arrays, tiny_protocol, WORKFLOW_META)


def test_a_job_refuses_another_tensorflow_version(tiny_cell, tiny_protocol):
    # e.g. a bare run handed a cell of another version, or an image mapped wrongly (the keras
    # apis, which need a process of their own, make the same check)
    arrays = data.make_dataset(max_len=6, sequence_length={"uniform": [2, 6]}, input_dim=3,
                               num_classes=8, num_samples=12, seed=0)
    cell = {**tiny_cell, "tf_version": "2.12"}
    with pytest.raises(RuntimeError, match=f"tf_version '2.12' was asked for, but TensorFlow "
                                           f"{tf.__version__} "):
        bench.run("static", cell, arrays, tiny_protocol, WORKFLOW_META)


def test_step_stats():
    stats = timing.step_stats([0.1, 0.2, 0.3, 0.4, 0.5])
    assert stats["median_step_s"] == pytest.approx(0.3)
    assert stats["steps_per_s"] == pytest.approx(1 / 0.3)
    assert stats["step_iqr_over_median"] == pytest.approx((0.4 - 0.2) / 0.3)
    with pytest.raises(ValueError, match="got 1"):
        timing.step_stats([0.1])


def test_every_api_has_one_runner():
    """bench.run hands each api of the config schema to exactly one runner module."""
    from rnnbench.grid import axes
    from rnnbench.measure import runners

    found = runners.runners()
    assert set(found) == set(axes.API_SUFFIXES)
    assert found["compat_v1"].__name__ == "rnnbench.measure.runners.compat_v1"
    with pytest.raises(ValueError, match="'kerass'"):
        runners.runner_for("kerass")


def test_fetch_plans():
    # the seed's Estimator: hooks on the first step, then every hook_every steps
    assert fetch_plan("hooks", 3, 1, 4) == [True, False, False, True, False, False]
    # the pitfall: never before the measurement, then on its first step
    assert fetch_plan("hooks_cold", 3, 1, 4) == [False, False, True, False, False, True]
    assert fetch_plan("loss", 3, 1, 4) == [False] * 6
    with pytest.raises(ValueError, match="'hook'"):
        fetch_plan("hook", 3, 1, 4)


def test_a_fetch_set_first_run_in_the_timed_loop_pays_a_fresh_optimisation(tiny_cell,
                                                                            tiny_protocol):
    arrays = data.make_dataset(max_len=6, sequence_length={"uniform": [2, 6]}, input_dim=3,
                               num_classes=8, num_samples=12, seed=0)
    protocol = {**tiny_protocol, "grappler_alone": False}  # (and skip it: faster)
    warm = bench.run("static", {**tiny_cell, "fetches": "hooks"}, arrays, protocol,
                     WORKFLOW_META)
    cold = bench.run("static", {**tiny_cell, "fetches": "hooks_cold"}, arrays, protocol,
                     WORKFLOW_META)
    assert cold["timings"]["optimisation_s"] is None
    assert cold["graph"]["optimised_node_count"] is None
    assert warm["timings"]["hook_steps"] == [0, 3] and cold["timings"]["hook_steps"] == [2, 5]
    assert cold["protocol"]["fetches"] == ["train_op", "loss", "global_step"]
    assert cold["protocol"]["hook_fetches"] == ["train_op", "loss", "global_step", "summary"]
    step_s = cold["timings"]["step_s"]
    # the first measured step is the hook set's first run: Grappler and a new executor
    assert step_s[0] > 5 * np.median(step_s)
    assert cold["timings"]["mean_step_s"] > cold["timings"]["median_step_s"]
    # warmed up (its first step ran the hook set): the hook step in the loop is not the slow one
    assert warm["timings"]["step_s"][1] < step_s[0]


@pytest.mark.parametrize("ablation", [{"parallel_iterations": 1}, {"swap_memory": True},
                                      {"parallel_iterations": 1, "loop_bound": "max_len"},
                                      {"swap_memory": True, "loop_bound": "max_len"}])
def test_loop_settings_keep_the_loss(ablation):
    """parallel_iterations and swap_memory change scheduling and memory, not the function."""
    arrays = data.make_dataset(max_len=5, sequence_length={"uniform": [1, 5]}, input_dim=3,
                               num_classes=4, num_samples=6, seed=1)
    losses = []
    for kwargs in ({}, ablation):
        with tf.Graph().as_default():
            loss = model.build_loss(tf, tf.constant(arrays["inputs"]),
                                    tf.constant(arrays["sequence_length"]),
                                    tf.constant(arrays["labels"]), "dynamic", "lstm", 4, **kwargs)
            with tf1.Session() as session:
                session.run(tf1.global_variables_initializer())
                model.load_initial_weights(tf, session, 0)
                losses.append(session.run(loss))
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)


def test_inside_an_image_a_package_from_outside_it_is_refused(monkeypatch):
    """frameworks.check_image_imports, which check_tensorflow and the JAX apis' runs call."""
    import types

    frameworks.check_image_imports()  # outside an image: nothing to check
    monkeypatch.setenv("APPTAINER_CONTAINER", "/images/cpu.sif")
    frameworks.check_image_imports()  # this venv's own packages: inside "the image's" Python
    stray = types.ModuleType("jax")
    stray.__file__ = "/home/user/.local/lib/python3.11/site-packages/jax/__init__.py"
    monkeypatch.setitem(sys.modules, "jax", stray)
    with pytest.raises(RuntimeError, match=r"jax was imported from /home/user/.local/lib/"
                                           r"python3.11/site-packages/jax, outside the image"):
        frameworks.check_image_imports()
