"""The tiny grid through the SLURM profiles, on a live cluster (.ci/slurm-up.sh starts one).

Skipped where no cluster is reachable, unless RNNBENCH_REQUIRE_SLURM=1 (set by .ci/run),
which turns the skip into a failure. The CI cluster has no accounting database, so the runs
use the plugin's squeue status checks and an empty account, as a site without accounting would.
The GPU profile deploys with Apptainer, so its test also needs the CPU image (test_container).
"""

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from conftest import REPO, TINY
from rnnbench.grid import cells as grid_cells
from rnnbench.pipeline import container
from rnnbench.grid.configcheck import validate_config
from rnnbench.grid.layout import IMPLEMENTATIONS
from test_container import CPU_IMAGE, needs_image

CI_FLAGS = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks",
            "1", "--seconds-between-status-checks", "2"]


def should_run():
    """True where the SLURM tests run: a cluster answers, or CI requires one."""
    return os.environ.get("RNNBENCH_REQUIRE_SLURM") == "1" or cluster_up()


def cluster_up():
    if not shutil.which("sinfo"):
        return False
    return subprocess.run(["sinfo", "-h"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(
    not should_run(),
    reason="no SLURM cluster here (.ci/slurm-up.sh starts one)",
)


def run_profile(workdir, profile, *args):
    env = {**os.environ, "RNNBENCH_SLURM_PARTITION": "cpu", "RNNBENCH_SLURM_ACCOUNT": "",
           "RNNBENCH_SLURM_GPU_PARTITION": "gpu"}
    cmd = ["timeout", "-s", "INT", "600", sys.executable, "-m", "snakemake",
           "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--profile", str(REPO / "profiles" / profile), *CI_FLAGS, *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def results_of(workdir, config):
    config = dict(config)
    validate_config(config)
    found = {}
    for path in (workdir / "results" / "runs" / grid_cells.protocol_id(config)).rglob("repeat*.json"):
        found[path] = json.loads(path.read_text())
    return found


def failing_cell_scenario(workdir):
    """The tiny grid through profiles/slurm, one cell's dataset corrupted after rule make_data
    (its bytes and its sidecar's sha256).
    Returns what the test checks; run in the background from the session's start (conftest)."""
    config = {**TINY, "repeats": 1, "api": ["compat_v1"]}  # 4 SLURM jobs: 2 cells x 2 impls
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    validate_config(config)
    cells = grid_cells.cells(config)
    bad_cell = next(c for c in cells if cells[c]["max_len"] == 8)
    # make the data locally (a localrule), then corrupt the dataset of one cell
    data = [f"results/data/{cells[c]['dataset']}.npz" for c in cells]
    prep = run_profile(workdir, "slurm", *data)
    if prep.returncode != 0:
        return {"prep": prep}
    npz = workdir / f"results/data/{cells[bad_cell]['dataset']}.npz"
    raw = bytearray(npz.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    npz.write_bytes(bytes(raw))
    # ... and its sidecar's sha256 with it: a dataset whose sha256 is not its sidecar's is
    # remade from its seed before any job; this one passes that check and fails in its jobs
    sidecar = npz.with_suffix(".json")
    record = json.loads(sidecar.read_text())
    record["sha256"] = __import__("hashlib").sha256(bytes(raw)).hexdigest()
    sidecar.write_text(json.dumps(record))
    # the training results only: aggregation cannot run anyway, and rule peak would be one
    # more SLURM job to wait for
    protocol = grid_cells.protocol_id(config)
    targets = [f"results/runs/{protocol}/{c}/{impl}/repeat1.json" for c in cells
               for impl in IMPLEMENTATIONS]
    return {"prep": prep, "proc": run_profile(workdir, "slurm", "--", *targets),
            "config": config, "cells": cells, "bad_cell": bad_cell}


def gpu_profile_scenario(workdir):
    """One training job through profiles/slurm-gpu (Apptainer, --nv) with device=cpu, so it
    runs in the CPU image on the fake GPU GRES. Run in the background (conftest)."""
    if CPU_IMAGE is None or not CPU_IMAGE.exists():
        return {"proc": None}  # the test is skipped, or fails on the missing image
    # compat_v1 in the image here; test_container runs the keras api in it
    config = {**TINY, "max_len": [4], "repeats": 1, "api": ["compat_v1"]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    validated = {**config, "device": "cpu"}
    validate_config(validated)
    (cell,) = grid_cells.cells(validated)
    # runs in the image: a folder of their own
    protocol = grid_cells.protocol_id(
        validated, image=f"apptainer-cpu-{container.images_key(REPO / 'containers', 'cpu')}")
    target = f"results/runs/{protocol}/{cell}/static/repeat1.json"
    # the CI node's GPU is a fake GRES: TensorFlow still runs on the CPU
    proc = run_profile(workdir, "slurm-gpu", "--config", "device=cpu", "--", target)
    return {"proc": proc, "result": workdir / target}


# test name -> scenario: conftest starts those of the selected tests when the session starts,
# since they mostly wait for the cluster's queue and so overlap the other tests
SCENARIOS = {"test_grid_on_slurm_with_one_failing_cell": failing_cell_scenario,
             "test_gpu_profile_requests_a_gpu_and_runs_in_the_image": gpu_profile_scenario}


def test_grid_on_slurm_with_one_failing_cell(scenarios):
    assert cluster_up(), "RNNBENCH_REQUIRE_SLURM=1 but sinfo cannot reach a cluster"
    workdir, outcome = scenarios["test_grid_on_slurm_with_one_failing_cell"]
    assert outcome["prep"].returncode == 0, outcome["prep"].stderr
    proc, config, cells, bad_cell = (outcome[k] for k in ("proc", "config", "cells", "bad_cell"))
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output  # the bad cell failed ...
    assert ".snakemake/slurm_logs/rule_train_static" in output  # ... naming its SLURM log

    runs = results_of(workdir, config)
    good = [r for r in runs.values() if r["cell_id"] != bad_cell]
    assert len(good) == 2  # ... and the rest of the grid completed
    job_ids = [r["metadata"]["slurm_job_id"] for r in good]
    assert all(job_ids) and len(set(job_ids)) == len(job_ids)  # each run its own SLURM job
    assert {r["metadata"]["slurm_job_partition"] for r in good} == {"cpu"}
    # each SLURM job records the Snakemake run that submitted it, not one of its own
    assert len({r["metadata"]["snakemake_run"] for r in good}) == 1
    assert good[0]["metadata"]["snakemake_run"] is not None
    assert {r["cell_id"] for r in runs.values()} == set(cells) - {bad_cell}
    assert all(r["job_threads"] == r["metadata"]["intra_op_parallelism_threads"] for r in good)

    missing = pd.read_csv(workdir / "results/partial/missing.csv")
    assert set(missing["cell_id"]) == {bad_cell} and len(missing) == 2
    summary = pd.read_csv(workdir / "results/partial/summary.csv")
    assert summary["cell_id"].tolist() == [c for c in cells if c != bad_cell]
    log = next((workdir / "results/logs").rglob(f"{bad_cell}/static/repeat1.log")).read_text()
    assert "not a whole dataset" in log  # the corrupted data were caught on reading
    assert f"{bad_cell} static repeat 1: ValueError" in output  # and the terminal says why
    assert missing["error_line"].str.contains("not a whole dataset").all()


@needs_image
def test_gpu_profile_requests_a_gpu_and_runs_in_the_image(scenarios):
    # profiles/slurm-gpu deploys with Apptainer: with device=cpu the job runs in the CPU image
    assert cluster_up(), "RNNBENCH_REQUIRE_SLURM=1 but sinfo cannot reach a cluster"
    assert CPU_IMAGE.exists(), f"RNNBENCH_REQUIRE_CONTAINER=1 but {CPU_IMAGE} is missing"
    _, outcome = scenarios["test_gpu_profile_requests_a_gpu_and_runs_in_the_image"]
    proc = outcome["proc"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads(outcome["result"].read_text())["metadata"]
    assert meta["slurm_job_id"] and meta["slurm_job_partition"] == "gpu"
    assert meta["cuda_visible_devices"] == "0"  # SLURM granted the requested GPU
    assert meta["apptainer_container"] == str(CPU_IMAGE)  # ... to a job in the image
    assert meta["python_prefix"] == "/opt/rnnbench"
