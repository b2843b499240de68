# The config validated, the grid's constants, localrules, wildcard constraints, and the rules'
# input, param and resource functions. What runs before any job and when the run ends is
# hooks.smk's; every path comes from rnnbench/grid/layout.py.
import functools
import os
import sys
from pathlib import Path

from snakemake.common import get_function_params, overwrite_function_params

from rnnbench.grid import layout  # noqa: E402  (on the path: config.smk)
from rnnbench.grid.axes import PROTOCOL_KEYS  # noqa: E402
from rnnbench.grid.cells import datasets, protocol_id, shared_runs  # noqa: E402
from rnnbench.grid.configcheck import check_config_files, config_warnings  # noqa: E402
from rnnbench.grid.configfiles import sources_of  # noqa: E402
from rnnbench.grid.plan import job_priorities, job_threads  # noqa: E402
from rnnbench.report.chartlist import ALL_CHARTS, plots  # noqa: E402
from rnnbench.stats.intervals import look_confidence  # noqa: E402
from rnnbench.jobs.command import TRAIN_COMMAND, as_json  # noqa: E402
from rnnbench.grid.resources import (  # noqa: E402
    check_overrides,
    dataset_mem_mb,
    machine_mem_mb,
    training_mem_mb,
    training_runtime_min,
)
from rnnbench.measure import metadata  # noqa: E402
from rnnbench.measure.metadata import git_commit  # noqa: E402
from rnnbench.pipeline import container as images  # noqa: E402
from rnnbench.pipeline import hardware  # noqa: E402
from rnnbench.pipeline import looks  # noqa: E402

# Validate once, before any job (rnnbench/grid/configcheck.py): YAML, schema (defaults filled
# in), cross-field checks, and for a local run the machine's memory and GPU. While the
# Snakefile is read, Snakemake has not chosen its executor: LOCAL is the one the command line or
# profile asks for, DRY_RUN a command that runs no job (rnnbench/pipeline/hardware.py).
INVOCATION = hardware.invocation(sys.argv)
LOCAL = INVOCATION.executor in hardware.LOCAL_EXECUTORS
DRY_RUN = workflow.output_settings.dryrun or not INVOCATION.executes
# Measuring jobs never run side by side on this machine (rules train_*, peak: measuring=1),
# whatever --cores or --resources say; on a cluster each job has its own node or cores.
if LOCAL:
    workflow.register_resource("measuring", 1)
NOTES = []
try:
    hardware.check_cores(INVOCATION)
    hardware.check_threads(INVOCATION)
    hardware.check_config_keys(INVOCATION)
    hardware.check_report_folder(INVOCATION)
    CELLS = check_config_files(
        workflow.configfiles,
        config,
        machine_mem_mb() if LOCAL else None,
        workflow.basedir,
        NOTES,
        CONFIG_YAML,
        dict(workflow.config_settings.config or {}),  # --config's keys, which win over files
    )
    hardware.check_device(config["device"], LOCAL)
    check_overrides(INVOCATION.set_resources, machine_mem_mb() if LOCAL else None)
except ValueError as error:  # and which file set each key it names
    refuse(
        f"config: {error}"
        + sources_of(str(error), workflow.configfiles, dict(workflow.config_settings.config or {}))
    )
OVERSUBSCRIBED = hardware.oversubscribed(CELLS) if LOCAL else None
if OVERSUBSCRIBED:
    NOTES.append(OVERSUBSCRIBED)
for note in NOTES:
    print(f"config: {note}", file=sys.stderr)
# the TensorFlow versions the grid's cells run at (no image, peak or check for another)
TF_VERSIONS = sorted({cell["tf_version"] for cell in CELLS.values()}, key=images.tf_version_key)

# With --use-singularity (--sdm apptainer) every rule runs in an image containers/build.sh
# builds for the config's device, each checked here, before any job; without containers the
# installed TensorFlow runs every job (rnnbench/pipeline/container.py, deployment_images).
FLAVOR = images.FLAVOR_OF_DEVICE[config["device"]]
# Snakemake's deployment methods: their str() is "apptainer", "conda" or "env-modules"
DEPLOYMENT = {str(method) for method in workflow.deployment_settings.deployment_method}
try:
    IMAGE, IMAGES, IMAGE_SHA256 = images.deployment_images(
        DEPLOYMENT,
        workflow.basedir,
        FLAVOR,
        config["device"],
        TF_VERSIONS,
        os.environ,
    )
except ValueError as error:
    refuse(str(error))
# The Python a training job's shell command runs, as Snakemake's script: directive chooses it:
# the image's or the conda environment's own, else this Snakemake's (a venv's, not the PATH's).
TRAIN_PYTHON = "python" if IMAGES or "conda" in DEPLOYMENT else sys.executable
TRAIN_SCRIPT = str(SCRIPTS / "train.py")
if IMAGES:
    # the image must see train.py at that path: Snakemake mounts it only for script: jobs
    try:
        # set, not read (no envvars: directive: the variable may be unset)
        os.environ.update(APPTAINER_BIND=images.scripts_bind(SCRIPTS, os.environ))
    except ValueError as error:
        refuse(str(error))
# Runs in images go to a folder of their own, named by the set of images the flavor has:
# another software environment, another timing; a changed definition or lock re-measures.
CONTAINERS = Path(workflow.basedir) / "containers"
PROTOCOL = protocol_id(
    config, image=f"apptainer-{FLAVOR}-{images.images_key(CONTAINERS, FLAVOR)}" if IMAGES else None
)
# runs a cell takes from another cell instead of measuring them ((cell, impl) -> that cell)
SHARED_RUNS = shared_runs(CELLS)
# static and dynamic runs of a repeat next to each other, repeat by repeat: the planned
# repeats' jobs, and the cap of those checkpoint first_look may add (more_repeats)
PRIORITIES = job_priorities(CELLS, config["repeats"] + config["more_repeats"], SHARED_RUNS)
PLANNED_JOBS = [job for job in PRIORITIES if job[2] <= config["repeats"]]
MORE_JOBS = [job for job in PRIORITIES if job[2] > config["repeats"]]
# each look's ratio intervals: 95 % with one look, 97.5 % at each of two (more_repeats > 0)
LOOK_CONFIDENCE = look_confidence(config["more_repeats"])
for warning in config_warnings(config, CELLS):
    print(f"config: {warning}", file=sys.stderr)
DATASETS = datasets(config)

# where the runs, their logs and their benchmarks go (rnnbench/grid/layout.py lays out each)
RUNS = layout.runs_folder(PROTOCOL)
LOGS = layout.logs_folder(PROTOCOL)
BENCHMARKS = layout.benchmarks_folder(PROTOCOL)
TRAIN_RESULTS = layout.result_pattern(RUNS)
TRAIN_LOGS = layout.result_pattern(LOGS, ".log")
TRAIN_BENCHMARKS = layout.result_pattern(BENCHMARKS, ".tsv")
# the most steps a job takes but for min_measure_s (resources.training_runtime_min)
TOTAL_STEPS = 1 + config["max_warmup_steps"] + config["steps"]
# The charts of this grid (rnnbench/grid/plan.py): every grid's, and one per thing it varies.
PLOTS = plots(CELLS.values(), TF_VERSIONS, config["api"])
CHART_FILES = layout.chart_files(PLOTS)
# the outputs and logs of the peak jobs, one per intra-op thread count and TensorFlow version
PEAKS, PEAK_LOGS = (
    [
        layout.peak_path(folder, threads, tf_version, suffix)
        for threads in config["intra_op_parallelism_threads"]
        for tf_version in TF_VERSIONS
    ]
    for folder, suffix in ((RUNS, ".json"), (LOGS, ".log"))
)
GIT_COMMIT = git_commit(workflow.basedir)
# which Snakemake run measured a result: set by the main process, inherited by its jobs (a
# cluster job's Snakemake, an image); FINDINGS says when a grid's runs come from several
if workflow.is_main_process or metadata.SNAKEMAKE_RUN not in os.environ:
    os.environ[metadata.SNAKEMAKE_RUN] = metadata.snakemake_run_id()


def result_paths(pattern=TRAIN_RESULTS, jobs=None):
    """Every training result of the planned repeats (or, given TRAIN_LOGS or
    TRAIN_BENCHMARKS, their logs or benchmarks): one per job of PLANNED_JOBS (or ``jobs``), so
    not the runs a cell shares with another (SHARED_RUNS)."""
    return [
        pattern.format(cell=cell, impl=impl, repeat=repeat)
        for cell, impl, repeat in (PLANNED_JOBS if jobs is None else jobs)
    ]


def looked_jobs():
    """The jobs an earlier first look added (its output, where it exists), or None before
    the first look (and [] without more_repeats)."""
    path = Path(layout.first_look_path(RUNS))
    if not config["more_repeats"]:
        return []
    if not path.exists():
        return None
    return looks.looked_jobs(path)


def measured_paths(pattern=TRAIN_RESULTS):
    """result_paths, and with more_repeats the results of the jobs checkpoint first_look adds
    (its output lists them; Snakemake runs the look first where it has not run)."""
    more = []
    if config["more_repeats"]:
        more = looks.looked_jobs(checkpoints.first_look.get().output[0])
    return result_paths(pattern) + result_paths(pattern, more)


def measured_results(wildcards):
    """Every training result that aggregation reads (measured_paths): an input function."""
    return measured_paths()


def measured_benchmarks(wildcards):
    """The benchmark file of each result aggregation reads (measured_paths): a params
    function (each comes with its result, so it is no input)."""
    return measured_paths(TRAIN_BENCHMARKS)


def train_outputs(impl):
    """The result, log and benchmark patterns of ``impl``'s training rule ({cell} and
    {repeat} left as wildcards)."""
    return {
        "result": layout.result_path(RUNS, "{cell}", impl, "{repeat}"),
        "log": TRAIN_LOGS.replace("{impl}", impl),
        "benchmark": TRAIN_BENCHMARKS.replace("{impl}", impl),
    }


def dataset_files(name):
    """The .npz and sidecar of dataset ``name`` (rule make_data's outputs)."""
    return {"npz": layout.dataset_path(name), "sidecar": layout.dataset_path(name, "json")}


def workflow_meta(tf_version):
    """Recorded in every result: what the job may not see (git, the repository, the image,
    the Snakemake run)."""
    return {
        "git": GIT_COMMIT,
        "image_sha256": IMAGE_SHA256.get(tf_version),
        "snakemake_run": os.environ[metadata.SNAKEMAKE_RUN],
    }


# a training job's workflow record as JSON (params.workflow_meta), per TensorFlow version
WORKFLOW_META_JSON = {version: as_json(workflow_meta(version)) for version in TF_VERSIONS}


@functools.cache
def cell_json(cell_id):
    """A cell as a training job's params.cell holds it (JSON), made once for its jobs."""
    return as_json(CELLS[cell_id])


def image_of(tf_version):
    """container: of a job at tf_version (the wildcard of rule peak, a cell's for training);
    None without --use-singularity (Snakemake refuses an image path with whitespace even when
    no image is used: a clone under such a path must still run bare)."""
    return str(IMAGES.get(tf_version, IMAGE)) if IMAGES else None


container: image_of(images.DEFAULT_TF_VERSION)


# Short jobs run in the main Snakemake process, never on a cluster node.
localrules:
    all,
    plan_only,
    make_data,
    first_look,
    aggregate,
    plot,
    findings,


# One path segment each, not an alternation of every cell id: Snakemake copies a constraint
# into each output pattern it fills in, and 1000 cells' ids there made a dry run 4x slower. A
# cell or dataset not in the grid is refused by CELLS[...] / DATASETS[...] when asked for.
wildcard_constraints:
    cell=r"[A-Za-z0-9_.-]+",
    tf_version=r"[0-9]+\.[0-9]+",
    dataset=r"[A-Za-z0-9_.-]+",
    repeat=r"\d+",


def targets():
    """The targets of rule all, the tables and charts (for --report, the charts drawn, not
    those in UNDRAWN, hooks.smk); or, when some training jobs are blocked (BLOCKED,
    hooks.smk), every other training result (aggregation needs them all)."""
    if BLOCKED:
        return [result for result in result_paths() if result not in BLOCKED]
    drawn = [chart for chart in PLOTS if chart not in UNDRAWN]
    return [*layout.TABLES.values(), *layout.chart_files(drawn)]


def of_wildcards(function):
    """``function`` (of a job's wildcards), its signature read once instead of for every job
    (Snakemake's overwrite_function_params, as its ioutils use it)."""
    overwrite_function_params(function, get_function_params(function))
    return function


def of_cell(value):
    """A per-job function of the job's cell: value(CELLS[cell]) (of_wildcards)."""
    return of_wildcards(lambda wildcards: value(CELLS[wildcards.cell]))


dataset_of = of_cell(lambda cell: dataset_files(cell["dataset"]))


def training_inputs(impl):
    """Input function of ``impl``'s training rule: its dataset (dataset_of). In a dry run
    that found results a run sets aside (hooks.smk's DAMAGED), those jobs also take rule
    plan_only's placeholder, so that the plan lists them as the run will measure them again;
    otherwise dataset_of itself (no other input: each costs every job of a dry run)."""
    step = housekeeping.planned("set_aside_damaged_results", PLANNED)
    if not step:
        return dataset_of
    pattern, damaged = train_outputs(impl)["result"], set(DAMAGED)

    def inputs(wildcards):
        files = dataset_of(wildcards)
        result = pattern.format(cell=wildcards.cell, repeat=wildcards.repeat)
        return {**files, "planned": step} if result in damaged else files

    return of_wildcards(inputs)


def priority_of(impl):
    """priority of a training job (PRIORITIES); a run the grid does not measure cannot be
    asked for (its cell takes it from another, SHARED_RUNS)."""
    return of_wildcards(lambda wildcards: PRIORITIES[(wildcards.cell, impl, int(wildcards.repeat))])


def mem_mb_of(impl):
    """mem_mb of a training job, from its cell (see rnnbench/grid/resources.py)."""
    return of_cell(
        lambda cell: training_mem_mb(cell, impl, config["num_samples"], config["device"])
    )


def runtime_of(impl):
    """runtime (minutes) of a training job, from its cell (see rnnbench/grid/resources.py)."""
    return of_cell(
        lambda cell: training_runtime_min(cell, impl, TOTAL_STEPS, config["min_measure_s"])
    )
