"""Shared fixtures: the repository root, a tiny cell, a factory of valid result records, and
one finished bare run of the tiny grid (tests/tiny.yaml) that several test files inspect."""

import copy
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from rnnbench.grid.axes import ABLATION_DEFAULTS
from rnnbench.grid.axes import DEFAULT_TF_VERSION
from rnnbench.jobs.exclusive import LOCK_VARIABLE
from rnnbench.commands.scale import synthetic_result

REPO = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((REPO / "tests" / "tiny.yaml").read_text())


def snakemake(workdir, *args, check=True, path=None, env=None):
    """Run the repository's Snakefile in ``workdir`` with the current Python's Snakemake
    (``path``: the PATH after the venv's bin folder, default this process's PATH; ``env``:
    more environment variables)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
           "--directory", str(workdir), *args]
    env = {**os.environ, **(env or {}),
           "PATH": f"{Path(sys.executable).parent}:{path or os.environ['PATH']}"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def own_lock(workdir):
    """The environment that gives a workflow run in ``workdir`` its own measuring lock
    (rnnbench.jobs.exclusive): the suite's concurrent workflows take turns within each run only."""
    return {LOCK_VARIABLE: str(workdir / "measuring.lock")}


def run_tiny_grid(workdir):
    """Run the tiny grid to the end in ``workdir``, bare (no container), with --cores 4 (its
    training jobs still take turns: test_workflow checks their spans); return workdir."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(TINY))
    stale = workdir / "results" / "partial" / "missing.csv"  # as left by an earlier failure
    stale.parent.mkdir(parents=True)
    stale.write_text("cell_id,impl,repeat\n")
    snakemake(workdir, "--cores", "4", env=own_lock(workdir))
    return workdir


WAITS = {"finished_run", "scenarios", "keras_side"}
"""The fixtures of runs made in the background (the tiny grid, the scenarios)."""


def pytest_collection_modifyitems(items):
    """Mark e2e the tests of tests/e2e/ and those that wait for a background run, and run the
    latter after the others, in their order, so that the session's first minutes do unit
    tests while those runs proceed instead of waiting for them."""
    for item in items:
        if "e2e" in item.path.parent.name or WAITS & set(item.fixturenames):
            item.add_marker(pytest.mark.e2e)
    waits = [item for item in items if WAITS & set(item.fixturenames)]
    items[:] = [item for item in items if item not in waits] + waits


@pytest.fixture(scope="session", autouse=True)
def start_tiny_grid(request, tmp_path_factory):
    """Start the tiny grid (run_tiny_grid) in a background thread when the session starts,
    if a selected test uses finished_run: its jobs spend much of their time starting Python
    and importing TensorFlow, which the unit tests overlap."""
    if not any("finished_run" in item.fixturenames for item in request.session.items):
        request.config.tiny_grid = None
        yield
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        request.config.tiny_grid = pool.submit(run_tiny_grid, tmp_path_factory.mktemp("tiny"))
        yield


@pytest.fixture(scope="session")
def finished_run(request):
    """A working directory where the tiny grid ran to the end, bare (no container)."""
    return request.config.tiny_grid.result()

TINY_CELL = {
    "cell": "basic_lstm", "batch_size": 4, "max_len": 6, "sequence_length": {"uniform": [2, 6]},
    "num_units": 8, "input_dim": 3, "api": "compat_v1", "tf_version": DEFAULT_TF_VERSION,
    **ABLATION_DEFAULTS,
    "dataset": "tiny",
}
TINY_PROTOCOL = {"steps": 4, "min_measure_s": 0, "warmup_steps": 1, "max_warmup_steps": 1,
                 "hook_every": 3,
                 "device": "cpu", "seed": 0, "log_every": 2, "grappler_alone": True}


@pytest.fixture
def tiny_cell():
    return copy.deepcopy(TINY_CELL)


@pytest.fixture
def tiny_protocol():
    return copy.deepcopy(TINY_PROTOCOL)


def make_result(impl="static", cell_id="c1", repeat=1, **changes):
    """A schema-valid result record (rnnbench.commands.scale.synthetic_result, with the tiny protocol)
    with chosen timings and ablations, for aggregation tests."""
    return synthetic_result(impl, cell_id, repeat, protocol=TINY_PROTOCOL, **changes)


def reference_columns(tmp_path):
    """The columns of measurements.csv and summary.csv as rule aggregate writes them for any
    valid results (hand-made ones here), by table name."""
    import json

    from rnnbench.results.load import load_results
    from rnnbench.stats.summary import summarize

    paths = []
    for i, (impl, repeat) in enumerate((i, r) for i in ("static", "dynamic") for r in (1, 2)):
        paths.append(tmp_path / f"reference{i}.json")
        paths[-1].write_text(json.dumps(make_result(impl, "c1", repeat)))
    runs = load_results(paths)
    summary = summarize(runs, peak_flop_per_s={(1, "2.21"): 1e9})
    return {"measurements.csv": list(runs.columns), "summary.csv": list(summary.columns)}


class Scenarios(dict):
    """test name -> (workdir, future) of the background scenarios; indexing waits for that
    scenario only and returns (workdir, outcome)."""

    def __getitem__(self, name):
        workdir, future = super().__getitem__(name)
        return workdir, future.result()


@pytest.fixture(scope="session")
def scenarios(request):
    """The background scenarios of the selected tests (a Scenarios): see start_scenarios."""
    return request.config.scenarios


@pytest.fixture(scope="session", autouse=True)
def start_scenarios(request, tmp_path_factory):
    """Start the scenarios of the selected tests in background threads when the session
    starts, where their module's should_run() says so: test_slurm.SCENARIOS (runs through the
    SLURM cluster), test_container.SCENARIOS (the tiny grid in the images),
    test_keras_model.SCENARIOS (the Keras side of the loss checks, in a fresh Python),
    test_jax_model.SCENARIOS (a tiny grid with the JAX apis, jobs of each framework without the
    other), test_standalone.SCENARIOS (rnnbench jax), test_interrupt.SCENARIOS (a Snakemake
    killed mid-job, and the same command again). They
    mostly wait (for the cluster's queue, for Apptainer starting an image, for a job
    importing TensorFlow or XLA compiling), so they overlap the other tests instead of
    adding to the suite's time. Tests that share a scenario share one run of it."""
    import test_container
    import test_interrupt
    import test_jax_model
    import test_keras_model
    import test_slurm
    import test_standalone

    selected = {item.name for item in request.session.items}
    chosen = {name: module.SCENARIOS[name]
              for module in (test_slurm, test_container, test_keras_model, test_jax_model,
                             test_standalone, test_interrupt)
              if selected & set(module.SCENARIOS) and module.should_run()
              for name in sorted(selected & set(module.SCENARIOS))}
    request.config.scenarios = Scenarios()
    if not chosen:
        yield
        return
    started = {}
    with ThreadPoolExecutor(max_workers=len(set(chosen.values()))) as pool:
        for name, scenario in chosen.items():
            if scenario not in started:
                workdir = tmp_path_factory.mktemp(name[:30])
                started[scenario] = (workdir, pool.submit(scenario, workdir))
            request.config.scenarios[name] = started[scenario]
        yield
