"""The JAX model (rnnbench.measure.jax_model) computes the compat_v1 model's function from the same
weights, before and after an Adam step; its unroll factor changes nothing; padding is masked;
and it never imports TensorFlow. Then the api jax_scan end to end: a timed run of each
mode that imports no TensorFlow, and a tiny grid with api [keras_jax, jax_scan]
through the workflow (the stand-alone script: test_standalone.py). JAX is pinned in the venv (envs/requirements.txt), as TensorFlow is."""

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rnnbench.measure import data

from rnnbench.measure import jax_model  # noqa: E402

pytestmark = pytest.mark.slow  # each test builds or trains a model in a framework

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {"PYTHONPATH": str(REPO / "workflow" / "scripts")}
MAX_LEN, INPUT_DIM, NUM_UNITS, SEED = 6, 3, 8, 0


def batch_of(sequence_length, seed=1):
    return data.make_dataset(max_len=MAX_LEN, sequence_length=sequence_length,
                             input_dim=INPUT_DIM, num_classes=NUM_UNITS, num_samples=5, seed=seed)


def jax_losses(cell, batch, unroll=1):
    """Loss before and after one Adam step, through compile_step (as runners.jax builds
    api jax_scan's step), as float64 [2]."""
    params = jax_model.initial_params(cell, INPUT_DIM, NUM_UNITS, SEED)
    opt_state = jax_model.adam_init(params)
    args = (batch["inputs"], batch["sequence_length"], batch["labels"])
    compiled = jax_model.compile_step(jax_model.step_function(cell, unroll), params, opt_state,
                                      *args)
    assert compiled.trace_s > 0 and compiled.compile_s > 0
    params, _, before = compiled.step(params, opt_state, *args)
    after = jax_model.loss(params, cell, *args)
    return np.array([before, after], np.float64)


# every cell at mixed lengths (the mask at work), and one at full lengths (the mask all true:
# the same scan)
@pytest.mark.parametrize("cell, sequence_length",
                         [(cell, {"uniform": [1, MAX_LEN]}) for cell in jax_model.CELLS]
                         + [("basic_lstm", MAX_LEN)])
def test_the_jax_loss_is_compat_v1s_before_and_after_an_adam_step(cell, sequence_length):
    from test_model import losses  # the compat_v1 reference (imports TensorFlow)

    batch = batch_of(sequence_length)
    reference, names = losses("dynamic", cell, batch, NUM_UNITS, seed=SEED, adam_steps=1)
    assert sorted(jax_model.param_shapes(cell, INPUT_DIM, NUM_UNITS)) == names
    ours = jax_losses(cell, batch)
    assert np.abs(ours - reference).max() < 1e-5 * np.abs(reference).max(), (ours, reference)
    assert ours[1] < ours[0]  # Adam really trains


@pytest.mark.parametrize("cell", ["gru"])  # the scan wraps every cell alike (jax_model.rnn);
def test_every_unroll_gives_the_same_loss(cell):  # each cell's arithmetic: the test above
    batch = batch_of({"uniform": [1, MAX_LEN]})
    base = jax_losses(cell, batch, unroll=1)
    for unroll in (4, MAX_LEN):  # 4 does not divide max_len 6; max_len unrolls fully
        np.testing.assert_allclose(jax_losses(cell, batch, unroll), base, rtol=1e-6,
                                   err_msg=f"unroll {unroll}")


@pytest.mark.parametrize("cell", ["basic_lstm"])  # the masking wraps every cell alike (rnn)
def test_padding_beyond_sequence_length_changes_nothing(cell):
    import jax

    batch = batch_of({"uniform": [1, MAX_LEN - 2]}, seed=2)
    changed = {**batch, "inputs": batch["inputs"].copy()}
    for row, length in enumerate(batch["sequence_length"]):
        changed["inputs"][row, length:] = 7.0
    params = jax_model.initial_params(cell, INPUT_DIM, NUM_UNITS, SEED)

    def value_and_grads(b):
        return jax.value_and_grad(jax_model.loss)(
            params, cell, b["inputs"], b["sequence_length"], b["labels"])

    (original, grads), (padded, padded_grads) = value_and_grads(batch), value_and_grads(changed)
    assert float(original) == float(padded)
    for name in grads:
        np.testing.assert_array_equal(grads[name], padded_grads[name])
    # each sample's final state is the state after its own valid steps alone
    state = jax_model.rnn(params, cell, batch["inputs"], batch["sequence_length"])
    for row, length in enumerate(batch["sequence_length"]):
        alone = jax_model.rnn(params, cell, batch["inputs"][row:row + 1, :length],
                              np.array([length], np.int32))
        np.testing.assert_allclose(state[-1][row], alone[-1][0], rtol=1e-6, atol=1e-7)
    # and without the lengths the padding would count
    unmasked = jax_model.loss(params, cell, changed["inputs"],
                              np.full(5, MAX_LEN, np.int32), batch["labels"])
    assert abs(float(unmasked) - float(original)) > 1e-4


def test_adam_follows_tf1s_formula():
    # a gradient of 1e-7 makes sqrt(v) ~ epsilon: epsilon's place in the formula matters
    params, grads = {"w": np.float32([1.0, 0.0])}, {"w": np.float32([0.5, 1e-7])}
    state = jax_model.adam_init(params)
    for _ in range(2):
        params, state = jax_model.adam_update(params, grads, state)
    g = grads["w"].astype(np.float64)
    m1, v1 = 0.1 * g, 0.001 * g * g
    w1 = np.array([1.0, 0.0]) - 0.001 * np.sqrt(1 - 0.999) / (1 - 0.9) * m1 / (np.sqrt(v1) + 1e-8)
    m2, v2 = 0.9 * m1 + 0.1 * g, 0.999 * v1 + 0.001 * g * g
    w2 = w1 - 0.001 * np.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2) * m2 / (np.sqrt(v2) + 1e-8)
    np.testing.assert_allclose(params["w"], w2, rtol=1e-4)  # float32 rounding at 1e-7


def test_unknown_cells_are_refused():
    with pytest.raises(ValueError, match="'lstmm'"):
        jax_model.param_shapes("lstmm", 3, 4)
    with pytest.raises(ValueError, match="'lstmm'"):
        jax_model.rnn({}, "lstmm", np.zeros((1, 2, 3), np.float32), np.int32([2]))


RUN_BOTH_MODES = """
import json, sys
from rnnbench.measure import bench, data
from rnnbench.grid.axes import ABLATION_DEFAULTS
from rnnbench.grid.axes import DEFAULT_TF_VERSION
from rnnbench.measure.schema import validate_result
cell = {"cell": "gru", "batch_size": 4, "max_len": 5, "sequence_length": {"uniform": [1, 5]},
        "num_units": 4, "input_dim": 3, "api": "jax_scan", "tf_version": DEFAULT_TF_VERSION,
        **ABLATION_DEFAULTS, "unroll": 2, "dataset": "tiny"}
protocol = {"steps": 3, "min_measure_s": 0, "warmup_steps": 1, "max_warmup_steps": 1,
            "hook_every": 3, "device": "cpu", "seed": 0, "log_every": 2, "grappler_alone": False}
arrays = data.make_dataset(max_len=5, sequence_length={"uniform": [1, 5]}, input_dim=3,
                           num_classes=4, num_samples=4, seed=1)  # one batch: every step
result = bench.run(sys.argv[1], {**cell, "mode": sys.argv[2]}, arrays, protocol,
                   {"git": None, "image_sha256": None})
result.update(cell_id="tiny", repeat=1, job_threads=1, data={"path": "x", "sha256": "y"})
validate_result(result)
print(json.dumps({"tensorflow": "tensorflow" in sys.modules, "result": result}))
"""


def jax_modes(workdir):
    """Static (scan unroll 2) in each mode, each in a fresh Python as a job: {mode: the
    finished process}. A scenario: run in the background while other tests run."""
    return {mode: subprocess.run([sys.executable, "-c", RUN_BOTH_MODES, "static", mode],
                                 capture_output=True, text=True, timeout=300,
                                 env={**os.environ, **SCRIPTS})
            for mode in ("train", "inference")}


def test_a_jax_run_times_each_mode_without_tensorflow(scenarios):
    """Static (scan unroll 2) in both modes, each in a fresh Python as a job; dynamic's
    training runs go through the tiny grid below."""
    _, procs = scenarios["test_a_jax_run_times_each_mode_without_tensorflow"]
    out = {}
    for mode, proc in procs.items():
        assert proc.returncode == 0, proc.stderr
        out[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out[mode]["tensorflow"] is False  # a JAX job never imports TensorFlow
    train, inference = out["train"]["result"], out["inference"]["result"]
    meta = train["metadata"]
    assert meta["tf_version"] is None and meta["jax_version"] == jax_model.jax.__version__
    assert "intra_op_parallelism_threads=1" in meta["xla_flags"]
    timings = train["timings"]  # the compilation is part of the first step, timed alone too
    assert 0 < timings["optimisation_s"] < timings["first_step_s"]
    assert timings["graph_construction_s"] > 0 and len(timings["step_s"]) == 3
    # the same weights and batch: the same first loss; inference leaves it unchanged
    assert inference["loss"]["first"] == pytest.approx(train["loss"]["first"], rel=1e-6)
    assert inference["loss"]["last"] == pytest.approx(inference["loss"]["first"], rel=1e-6)
    assert train["loss"]["last"] < train["loss"]["first"]
    assert inference["protocol"]["fetches"] == ["loss"]
    assert inference["graph"]["node_count"] < train["graph"]["node_count"]  # no gradient
    assert inference["work"]["train_step_flop"] == pytest.approx(
        train["work"]["train_step_flop"] / 3)


def test_the_training_jobs_imports_hold_no_tensorflow():
    """The import graph of a training job of the JAX apis (workflow/scripts/train.py's
    modules, every runner's, jax_model's; keras_jax's Keras on JAX too): no TensorFlow."""
    code = ("import sys\n"
            "from rnnbench.measure import bench, data, frameworks, metadata, schema\n"
            "from rnnbench.jobs import interrupt\n"
            "from rnnbench.measure.runners import runners\n"
            "runners()  # every runner module, as bench.run imports them\n"
            "frameworks.import_jax('cpu', 1)\n"
            "from rnnbench.measure import jax_model, keras_model\n"
            "keras_model.import_keras_jax()  # api keras_jax's jobs\n"
            "assert 'tensorflow' not in sys.modules, sorted(m for m in sys.modules if 'tensorflow' in m)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **SCRIPTS})
    assert proc.returncode == 0, proc.stderr


TENSORFLOW_JOB = """
import sys
from rnnbench.measure import bench, data, frameworks
from rnnbench.grid.axes import ABLATION_DEFAULTS
from rnnbench.grid.axes import DEFAULT_TF_VERSION
from rnnbench.measure.schema import validate_result
frameworks.keep_jax_out()  # as train.py does for every api but axes.JAX_APIS
cell = {"cell": "basic_lstm", "batch_size": 4, "max_len": 5, "sequence_length": 3,
        "num_units": 4, "input_dim": 3, "api": sys.argv[1],
        "tf_version": DEFAULT_TF_VERSION, **ABLATION_DEFAULTS, "dataset": "tiny"}
protocol = {"steps": 2, "min_measure_s": 0, "warmup_steps": 1, "max_warmup_steps": 1,
            "hook_every": 2, "device": "cpu", "seed": 0, "log_every": 2, "grappler_alone": False}
arrays = data.make_dataset(max_len=5, sequence_length=3, input_dim=3, num_classes=4,
                           num_samples=4, seed=1)
result = bench.run("static", cell, arrays, protocol, {"git": None, "image_sha256": None})
result.update(cell_id="tiny", repeat=1, job_threads=1, data={"path": "x", "sha256": "y"})
validate_result(result)
assert sys.modules["jax"] is None, "jax was imported"
assert "jaxlib" not in sys.modules and "tensorflow" in sys.modules
try:
    import jax
except ImportError:
    print("refused")
"""


def tensorflow_job(workdir):
    """A compat_v1 job in a fresh Python that keeps JAX out (TENSORFLOW_JOB): the finished
    process. A scenario: run in the background while other tests run."""
    return subprocess.run([sys.executable, "-c", TENSORFLOW_JOB, "compat_v1"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **SCRIPTS})


def test_a_tensorflow_job_runs_without_jax(scenarios):
    """TensorFlow imports JAX when it can (TFLite's converter, 0.8 s of each import here): a
    TensorFlow job keeps it out (frameworks.keep_jax_out), and trains as before. (train.py does
    so for every TensorFlow api: the keras api's jobs run so in the tiny workflow.)"""
    _, proc = scenarios["test_a_tensorflow_job_runs_without_jax"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "refused"


def test_jax_cannot_be_kept_out_once_imported():
    code = "import jax\nfrom rnnbench.measure import frameworks\nframeworks.keep_jax_out()\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **SCRIPTS})
    assert proc.returncode == 1 and "jax was imported before frameworks.keep_jax_out" in proc.stderr


def jax_grid(workdir):
    """A tiny grid with api [keras_jax, jax_scan] and unroll [max_len, 2] through the
    workflow in ``workdir``: no TensorFlow job (the tiny grid of conftest runs compat_v1's;
    one FINDINGS of both frameworks: tests/report/test_behaviour.py). Run in the background."""
    import yaml

    from conftest import TINY, own_lock, snakemake

    config = {**TINY, "max_len": [4], "api": ["keras_jax", "jax_scan"],
              "unroll": ["max_len", 2], "repeats": 2}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    # what the test reads (the tiny grid of conftest makes every chart of rule all)
    targets = ["results/FINDINGS.md", "results/plots/jax_unroll.svg"]
    proc = snakemake(workdir, "--cores", "2", *targets, check=False, env=own_lock(workdir))
    return {"config": config, "proc": proc}


SCENARIOS = {"test_a_tiny_grid_with_the_jax_apis_runs_through_the_workflow": jax_grid,
             "test_a_jax_run_times_each_mode_without_tensorflow": jax_modes,
             "test_a_tensorflow_job_runs_without_jax": tensorflow_job}


def should_run():
    return True


def test_a_tiny_grid_with_the_jax_apis_runs_through_the_workflow(scenarios):
    workdir, outcome = scenarios["test_a_tiny_grid_with_the_jax_apis_runs_through_the_workflow"]
    proc = outcome["proc"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    findings = (workdir / "results" / "FINDINGS.md").read_text()
    assert "## For JAX users" in findings and "total to 100,000 steps (s)" in findings
    # where it was measured names JAX and keras_jax's Keras (no training job imported
    # TensorFlow; rule peak's matmul rate is TensorFlow's, as for every grid)
    assert re.search(r"JAX \d+\.\d+\.\d+ \(Keras \d", findings)
    assert (workdir / "results" / "plots" / "jax_unroll.svg").stat().st_size > 0
    import pandas as pd

    summary = pd.read_csv(workdir / "results" / "summary.csv", dtype={"unroll": str})
    assert set(summary["api"]) == {"keras_jax", "jax_scan"}
    # keras_jax: Keras on JAX, unroll=True against unroll=False, in For Keras users; its jobs
    # ran without TensorFlow
    assert re.search(r"- [^\n]*keras_jax[^\n]*: unroll=True takes", findings)
    runs = pd.read_csv(workdir / "results" / "measurements.csv")
    on_jax = runs[runs["api"].isin(["keras_jax", "jax_scan"])]
    assert on_jax["tensorflow_version"].isna().all() and on_jax["jax_version"].notna().all()
    keras = runs[runs["api"] == "keras_jax"]
    assert keras["keras_version"].notna().all() and len(keras) == 4  # 2 repeats x 2
    # the compilation is timed alone and is part of the first call; static's unrolled
    # program is the larger; both start from the same weights and batch
    assert (keras["optimisation_s"] > 0).all()
    assert (keras["optimisation_s"] < keras["first_step_s"]).all()
    by_impl = keras.groupby("impl")
    assert by_impl["node_count"].min()["static"] > by_impl["node_count"].max()["dynamic"]
    assert by_impl["first_loss"].max()["static"] == pytest.approx(
        by_impl["first_loss"].min()["dynamic"], rel=1e-5)
    jax = summary[summary["api"] == "jax_scan"].set_index("unroll")
    assert set(jax.index) == {"max_len", "2"}
    # unroll 2's dynamic runs are the reference cell's (the same loop), not measured again
    measured = pd.read_csv(workdir / "results" / "measurements.csv")
    u2 = measured[measured["cell_id"].str.endswith("_jaxscan_u2")]
    assert set(u2[u2["impl"] == "dynamic"]["measured_in"]) == {jax.loc["max_len", "cell_id"]}
