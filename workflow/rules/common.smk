import os
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from rnnbench import container as images  # noqa: E402
from rnnbench import grid  # noqa: E402
from rnnbench.charts import ABLATION_CHARTS, CHARTS  # noqa: E402
from rnnbench.resources import (  # noqa: E402
    dataset_mem_mb,
    training_mem_mb,
    training_runtime_min,
)
from rnnbench.metadata import git_commit  # noqa: E402
from rnnbench.results import write_partial  # noqa: E402

# Validate once, before any job: the schema fills in defaults and rejects bad values and
# unknown keys; check_config does the cross-field checks (e.g. sequence_length <= max_len).
try:
    grid.validate_config(config)
except ValueError as error:
    raise WorkflowError(f"config: {error}")

# With --use-singularity (--sdm apptainer) every rule runs in the image containers/build.sh
# builds for the config's device (cpu: TensorFlow CPU-only; gpu: with CUDA and cuDNN), named by
# an absolute path so that --directory cannot break it. Checked here, before any job: the image
# is there and starts, and no host variable would make its Python load the host's packages.
FLAVOR = images.FLAVOR_OF_DEVICE[config["device"]]
IMAGE = images.image_path(workflow.basedir, FLAVOR)
IMAGE_SHA256 = None
if DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method:
    try:
        images.check_deployment(IMAGE, FLAVOR, config["device"], workflow.basedir, os.environ)
    except ValueError as error:
        raise WorkflowError(str(error))
    IMAGE_SHA256 = images.image_sha256(IMAGE)
# Runs in an image go to a folder of their own: another software environment, another timing.
PROTOCOL = grid.protocol_id(config, image=IMAGE.stem if IMAGE_SHA256 else None)
CELLS = grid.cells(config)
for warning in grid.config_warnings(config):
    print(f"config: {warning}", file=sys.stderr)
DATASETS = grid.datasets(config)
RUNS = f"results/runs/{PROTOCOL}"
TOTAL_STEPS = 1 + config["warmup_steps"] + config["steps"]
# A chart per ablation axis the grid varies (charts.ablation_chart), one for the apis.
PLOTS = (
    list(CHARTS)
    + [f"ablation_{axis}" for axis in grid.charted_ablation_axes(list(CELLS.values()))]
    + (["api"] if len({c["api"] for c in CELLS.values() if not grid.ablated_axes(c)}) > 1 else [])
)
PEAKS = expand(f"{RUNS}/peak_intra{{threads}}.json", threads=config["intra_op_parallelism_threads"])

# Recorded in every result (the job may run where git or the repository is not visible).
WORKFLOW_META = {"git": git_commit(workflow.basedir), "image_sha256": IMAGE_SHA256}


container: str(IMAGE)


# Short jobs run in the main Snakemake process, never on a cluster node.
localrules:
    all,
    make_data,
    aggregate,
    plot,
    findings,


wildcard_constraints:
    cell="|".join(CELLS),
    dataset="|".join(DATASETS),
    repeat=r"\d+",


def result_paths(pattern=f"{RUNS}/{{cell}}/{{impl}}/repeat{{repeat}}.json"):
    """Every training result the grid asks for (or, given the log pattern, their logs)."""
    return expand(
        pattern,
        cell=CELLS,
        impl=grid.IMPLEMENTATIONS,
        repeat=range(1, config["repeats"] + 1),
    )


TRAIN_LOGS = f"results/logs/{PROTOCOL}/{{cell}}/{{impl}}/repeat{{repeat}}.log"


def attempted_but_missing():
    """True when some result of the grid is missing and its training job left a log."""
    return any(
        not Path(result).exists() and Path(log).exists()
        for result, log in zip(result_paths(), result_paths(TRAIN_LOGS))
    )


def dataset_of(wildcards):
    """The .npz and sidecar of the dataset a cell reads."""
    name = CELLS[wildcards.cell]["dataset"]
    return {"npz": f"results/data/{name}.npz", "sidecar": f"results/data/{name}.json"}


def mem_mb_of(impl):
    """mem_mb of a training job, from its cell (see rnnbench/resources.py)."""
    return lambda wildcards: training_mem_mb(CELLS[wildcards.cell], impl, config["num_samples"])


def runtime_of(impl):
    """runtime (minutes) of a training job, from its cell (see rnnbench/resources.py)."""
    return lambda wildcards: training_runtime_min(CELLS[wildcards.cell], impl, TOTAL_STEPS)
