import json
import os
import re
import shutil
import socket
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

from rnnbench.pipeline import container as images  # noqa: E402  (on the path: config.smk)
from rnnbench.pipeline import estimate, hardware  # noqa: E402
from rnnbench.jobs import interrupt  # noqa: E402
from rnnbench.grid.axes import CELL_AXES, PROTOCOL_KEYS  # noqa: E402
from rnnbench.grid.cells import datasets, protocol_id, shared_runs  # noqa: E402
from rnnbench.grid.configcheck import check_config_files, config_warnings  # noqa: E402
from rnnbench.grid.layout import peak_path, result_path, result_pattern  # noqa: E402
from rnnbench.grid.plan import ABLATION_CHARTS, CHARTS, job_priorities, job_threads, plots  # noqa: E402
from rnnbench.grid.resources import (  # noqa: E402
    check_overrides,
    dataset_mem_mb,
    machine_mem_mb,
    training_mem_mb,
    training_runtime_min,
)
from rnnbench.measure.metadata import git_commit  # noqa: E402
from rnnbench.results.load import LATE_COLUMNS  # noqa: E402
from rnnbench.pipeline.files import (  # noqa: E402
    changed_results,
    damaged_results,
    listed_results,
    missing_columns,
    obstacles,
    stale_records,
    write_if_changed,
)

# Validate once, before any job (rnnbench/grid/configcheck.py): the files' YAML, the schema (which fills
# in defaults and rejects bad values and unknown keys), the cross-field checks (e.g.
# sequence_length <= max_len), and, for a local run, that the largest job fits this machine's
# memory (a cluster's nodes are sized by the jobs' mem_mb requests) and that device: gpu finds
# a GPU here. While the Snakefile is read, Snakemake has not chosen its executor yet
# (workflow.local_exec is always true, workflow.dryrun always false): LOCAL is the executor the
# command line or its profile asks for (rnnbench/pipeline/hardware.py), DRY_RUN a command that runs no
# job (-n, --summary, --dag, --report, ...).
INVOCATION = hardware.invocation(sys.argv)
LOCAL = INVOCATION.executor in hardware.LOCAL_EXECUTORS
# a dry run, or --summary, --dag, --report...: nothing under results/ changes (set_aside...)
DRY_RUN = workflow.output_settings.dryrun or not INVOCATION.executes
# Measuring jobs never run side by side on this machine (rules train_*, peak: measuring=1),
# whatever --cores or --resources say; on a cluster each job has its own node or cores.
if LOCAL:
    workflow.register_resource("measuring", 1)
NOTES = []
try:
    CELLS = check_config_files(
        workflow.configfiles,
        config,
        machine_mem_mb() if LOCAL else None,
        workflow.basedir,
        NOTES,
        CONFIG_YAML,
    )
    hardware.check_device(config["device"], LOCAL)
    check_overrides(INVOCATION.set_resources, machine_mem_mb() if LOCAL else None)
except ValueError as error:
    refuse(f"config: {error}")
for note in NOTES:
    print(f"config: {note}", file=sys.stderr)
if workflow.is_main_process and Path(CONFIG_YAML).is_absolute():
    READ_FROM = [CONFIG_YAML, *(str(f) for f in workflow.configfiles if str(f) != CONFIG_YAML)]
    print(
        "config: this working directory has no config.yaml: the grid is read from "
        f"{', then '.join(READ_FROM)} (each later file's keys win)",
        file=sys.stderr,
    )
# the TensorFlow versions the grid's cells run at (a version whose every cell is left out,
# e.g. a JAX api's, needs no image, no peak and no check)
TF_VERSIONS = sorted({cell["tf_version"] for cell in CELLS.values()}, key=images.tf_version_key)

# With --use-singularity (--sdm apptainer) every rule runs in an image containers/build.sh
# builds for the config's device (cpu: TensorFlow CPU-only; gpu: with CUDA and cuDNN), named by
# an absolute path so that --directory cannot break it: the training and peak jobs in the image
# of their cell's tf_version, every other rule in the image of the venv's TensorFlow (which
# holds the whole workflow). Checked here, before any job: each image is there and starts, and
# no host variable would make its Python load the host's packages. Without containers the
# installed TensorFlow runs every job: the config may list its version only.
FLAVOR = images.FLAVOR_OF_DEVICE[config["device"]]
CONTAINERS = Path(workflow.basedir) / "containers"
IMAGE = None  # the image of the venv's TensorFlow (every rule but training and peak jobs)
IMAGES = {}  # tf_version: image, with --use-singularity
IMAGE_SHA256 = {}  # tf_version: the image's sha256, with --use-singularity
try:
    if DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method:
        # the images of this Snakemake's Python; ValueError for a Python or version without one
        IMAGE = images.image_path(workflow.basedir, FLAVOR)
        IMAGES = {v: images.image_path(workflow.basedir, FLAVOR, v) for v in TF_VERSIONS}
        used = {images.DEFAULT_TF_VERSION: IMAGE, **IMAGES}  # the 2.21 image: the other rules
        images.check_deployment(used, FLAVOR, config["device"], workflow.basedir, os.environ)
        IMAGE_SHA256 = {v: images.image_sha256(image) for v, image in used.items()}
    elif DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        # envs/environment.yaml pins the venv's TensorFlow
        images.check_bare_tf_versions(
            TF_VERSIONS,
            images.DEFAULT_TF_VERSION,
            CONTAINERS,
            FLAVOR,
            "with --use-conda, envs/environment.yaml's",
        )
    else:
        images.check_bare_tf_versions(
            TF_VERSIONS, images.installed_tf_version(), CONTAINERS, FLAVOR
        )
except ValueError as error:
    refuse(str(error))
# Runs in images go to a folder of their own, named by the set of images the flavor has:
# another software environment, another timing; a changed definition or lock re-measures.
PROTOCOL = protocol_id(
    config, image=f"apptainer-{FLAVOR}-{images.images_key(CONTAINERS, FLAVOR)}" if IMAGES else None
)
# runs a cell takes from another cell instead of measuring them ((cell, impl) -> that cell)
SHARED_RUNS = shared_runs(CELLS)
# static and dynamic runs of a repeat next to each other in time, repeat by repeat
PRIORITIES = job_priorities(CELLS, config["repeats"], SHARED_RUNS)
for warning in config_warnings(config, CELLS):
    print(f"config: {warning}", file=sys.stderr)
DATASETS = datasets(config)


def dataset_files(name):
    """The .npz and sidecar of dataset ``name`` (rule make_data's outputs)."""
    return {"npz": f"results/data/{name}.npz", "sidecar": f"results/data/{name}.json"}


# where the runs, their logs and their benchmarks go (rnnbench/grid/layout.py lays out each)
RUNS = f"results/runs/{PROTOCOL}"
LOGS = f"results/logs/{PROTOCOL}"
BENCHMARKS = f"results/benchmarks/{PROTOCOL}"
# the most steps a training job can take: the first, the longest warm-up, the measured ones
# (and, for short steps, more of them until min_measure_s: resources.training_runtime_min)
TOTAL_STEPS = 1 + config["max_warmup_steps"] + config["steps"]
# The charts of this grid (rnnbench/grid/plan.py): every grid's, and one per thing it varies.
PLOTS = plots(CELLS.values(), TF_VERSIONS, config["api"])
PEAKS = expand(
    peak_path(RUNS, "{threads}", "{tf_version}"),
    threads=config["intra_op_parallelism_threads"],
    tf_version=TF_VERSIONS,
)
GIT_COMMIT = git_commit(workflow.basedir)


def workflow_meta(tf_version):
    """Recorded in every result: what the job may not see (git, the repository, the image)."""
    return {"git": GIT_COMMIT, "image_sha256": IMAGE_SHA256.get(tf_version)}


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


TRAIN_RESULTS = result_pattern(RUNS)
TRAIN_LOGS = result_pattern(LOGS, ".log")
TRAIN_BENCHMARKS = result_pattern(BENCHMARKS, ".tsv")


def result_paths(pattern=TRAIN_RESULTS):
    """Every training result the grid measures (or, given TRAIN_LOGS or TRAIN_BENCHMARKS,
    their logs or benchmarks): one per job of PRIORITIES, so not the runs a cell shares with
    another (SHARED_RUNS)."""
    return [
        pattern.format(cell=cell, impl=impl, repeat=repeat) for cell, impl, repeat in PRIORITIES
    ]


def train_outputs(impl):
    """The result, log and benchmark patterns of ``impl``'s training rule ({cell} and
    {repeat} left as wildcards)."""
    return {
        "result": result_path(RUNS, "{cell}", impl, "{repeat}"),
        "log": TRAIN_LOGS.replace("{impl}", impl),
        "benchmark": TRAIN_BENCHMARKS.replace("{impl}", impl),
    }


FINDINGS_SETTINGS = "results/findings_settings.json"
TABLES = {
    "measurements": "results/measurements.csv",
    "summary": "results/summary.csv",
    "cumulative": "results/cumulative_time.csv",
    "findings": "results/FINDINGS.md",
}
CHART_FILES = expand("results/plots/{chart}.{ext}", chart=PLOTS, ext=["html", "svg"])


def blocked_results():
    """Filesystem obstacles (a plain file where an output folder must be), found before any
    job: Snakemake itself stops with a traceback on one, even with --keep-going. A training
    job whose result, log or benchmark is blocked is left out, and named: the rest of the
    grid is measured, and the run ends with a partial report (onsuccess, aggregate.smk).
    Any other blocked output stops the run here. Returns {result: why}."""
    jobs = list(zip(result_paths(), result_paths(TRAIN_LOGS), result_paths(TRAIN_BENCHMARKS)))
    others = [
        *TABLES.values(),
        *CHART_FILES,
        *PEAKS,
        *(path for name in DATASETS for path in dataset_files(name).values()),
        "results/logs/aggregate.log",
        "results/partial/missing.csv",
        FINDINGS_SETTINGS,
    ]
    found = obstacles([path for job in jobs for path in job] + others)
    stopped = [f"{path}: {found[path]}" for path in others if path in found]
    if stopped:
        refuse(
            f"results: {len(stopped)} output(s) cannot be written, e.g. {stopped[0]}; "
            "move it away (or mend the link) and run again"
        )
    return {
        result: next(found[path] for path in (result, log, bench) if path in found)
        for result, log, bench in jobs
        if {result, log, bench} & set(found)
    }


BLOCKED = blocked_results() if workflow.is_main_process else {}
if BLOCKED:
    first, why = next(iter(BLOCKED.items()))
    print(
        f"results: {len(BLOCKED)} training job(s) cannot write their result, log or benchmark "
        f"and are left out, e.g. {first} ({why}); the rest of the grid is measured, then "
        "results/partial/ lists what is missing. Move that file away and run again.",
        file=sys.stderr,
    )


def targets():
    """The targets of rule all, the tables and charts; or, when some training jobs are
    blocked (BLOCKED), every other training result (aggregation needs them all)."""
    if BLOCKED:
        return [result for result in result_paths() if result not in BLOCKED]
    return [*TABLES.values(), *CHART_FILES]


def stale_tables(changed):
    """Why the tables no longer describe the results on disk ([] while they do): when
    measurements.csv lists a result file that is gone (deleted by hand) or changed since
    (``changed``: rnnbench.pipeline.files.changed_results; stale_records), or is itself missing beside
    other tables (a failed aggregation), or lacks a column of an axis or of load.LATE_COLUMNS
    (written before it existed). Snakemake alone may then say "Nothing to be done" or leave
    them in place. Tables of another grid are not stale (a run of this grid rewrites them)."""
    why = stale_records(changed)
    older = missing_columns(TABLES["measurements"], [*CELL_AXES, *LATE_COLUMNS])
    if older:  # the tables of an older workflow, before these axes existed
        why = [f"{TABLES['measurements']} has no column {', '.join(older)} (an older workflow's)"]
    if not Path(TABLES["measurements"]).exists() and any(
        Path(table).exists() for table in TABLES.values()
    ):
        why = [f"{TABLES['measurements']} is missing (a failed aggregation?)"]
    return why


def set_aside_damaged_results(listed, changed, folder="results/stale"):
    """A result file that holds no result record (rnnbench.pipeline.files.damaged_results: cut short,
    overwritten) is handled as a missing one: moved to ``folder`` (same path below it, never
    deleted) so that the run measures it again; a listed one is then ``gone`` in ``changed``
    (the tables that listed it are set aside: stale_tables). A command that runs no job moves
    nothing and says so."""
    damaged = damaged_results(result_paths(), listed, changed)
    for path, why in damaged.items():
        target = Path(folder) / path
        if DRY_RUN:
            print(
                f"results: {path} is not a valid result ({why}): a run moves it to {target} "
                "and measures it again (this command runs no job: nothing moved)",
                file=sys.stderr,
            )
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, target)
        if path in listed:
            changed[path] = "gone"
        print(
            f"results: {path} was not a valid result ({why}): moved to {target}; it is "
            "measured again",
            file=sys.stderr,
        )


def set_aside_stale_tables(changed, folder="results/stale"):
    """The tables must never report a run that is not on disk as it was read: where
    stale_tables says why (``changed``: rnnbench.pipeline.files.changed_results), the tables and
    charts move to ``folder``, so that the run measures what is missing and aggregates again.
    A dry run moves nothing: it says what a run would set aside (snakemake -n changes nothing
    on disk)."""
    why = stale_tables(changed)
    if not why:
        return
    what = f"results: the tables no longer describe the results on disk ({len(why)}: {why[0]})"
    if DRY_RUN:
        print(
            f"{what}: a run moves them and the charts to {folder}/, measures what is missing "
            "and rebuilds them (this command runs no job: nothing moved)",
            file=sys.stderr,
        )
        plan_as_a_run("set_aside_stale_tables")
        return
    if Path(folder).exists() and not Path(folder).is_dir():
        refuse(f"results: {folder} is a file where the stale tables must go: move it away")
    Path(folder, "plots").mkdir(parents=True, exist_ok=True)
    for table in TABLES.values():
        if Path(table).exists():
            shutil.move(table, Path(folder) / Path(table).name)
    for chart in Path("results/plots").glob("*.*"):
        shutil.move(chart, Path(folder, "plots", chart.name))
    print(
        f"{what}: they and the charts are moved to {folder}/; what is missing is measured "
        "again and the tables rebuilt",
        file=sys.stderr,
    )


def write_findings_settings():
    """FINDINGS depends on settings that change no measurement (the claims, extrapolate): the
    profile re-runs a rule on changed inputs only (not params, which would re-measure), so
    they are rule findings' input file, rewritten only when they change. A dry run writes
    nothing: a changed file is named, a missing one left out of rule findings' inputs
    (findings_settings)."""
    settings = {key: config.get(key) for key in ("claims", "extrapolate")}
    text = f"{json.dumps(settings, indent=1)}\n"
    if not DRY_RUN:
        write_if_changed(FINDINGS_SETTINGS, text)
    elif Path(FINDINGS_SETTINGS).exists() and Path(FINDINGS_SETTINGS).read_text() != text:
        print(
            "results: the claims or extrapolate changed since FINDINGS.md was written: a run "
            f"rewrites {FINDINGS_SETTINGS} and FINDINGS.md (this command runs no job: nothing "
            "written)",
            file=sys.stderr,
        )
        plan_as_a_run("write_findings_settings")


PLANNED = []  # what a run would do before any job, which this dry run did not (plan_as_a_run)


def plan_as_a_run(step):
    """In a dry run that changed nothing on disk where a run would (set_aside_stale_tables,
    write_findings_settings), plan what follows ``step`` as the run would: the rule that
    needs it takes planned(step) as an input, which rule plan_only stands for (Snakemake has
    no --forcerun to set while the Snakefile is read). Only in a dry run (-n): other commands
    that run no job (--summary, --report) take the DAG as it is on disk."""
    if workflow.output_settings.dryrun:
        PLANNED.append(step)


def planned(step):
    """The placeholder input of a rule that a run redoes after ``step`` (plan_as_a_run);
    [] but in a dry run that planned it."""
    return [f"results/.dry-run/{step}"] if step in PLANNED else []


def findings_settings(wildcards):
    """Rule findings' settings input: FINDINGS_SETTINGS, but [] in a dry run of a folder
    without it (write_findings_settings writes it only in a real run)."""
    if DRY_RUN and not Path(FINDINGS_SETTINGS).exists():
        return []
    return FINDINGS_SETTINGS


def check_report_grid(partial="results/partial"):
    """With --report: refuse to embed tables that are not this config's (a run with
    --configfile F, a report without it: Snakemake would put F's results beside this grid's
    job graph), or that do not exist because the run did not finish, naming the fix.

    Stops the run (refuse), naming the table, a run it lacks or holds, and the fix.
    """
    table = TABLES["measurements"]
    planned = set(result_paths())
    missing = sorted(result for result in planned if not Path(result).exists())
    listed = set(listed_results(table))
    if missing and (len(missing) < len(planned) or not listed):
        refuse(
            f"report: the run of this config did not finish: {len(missing)} of "
            f"{len(planned)} training results are missing (e.g. {missing[0]})"
            + (
                f"; {partial}/ says why, and summarises what was measured"
                if Path(partial).is_dir()
                else ""
            )
            + ". Run the same command again to finish it, then build the report. A cell "
            "that fails every time (out of memory, say) is left out by removing one of its "
            "axis values from the config (--configfile F, or --config max_len=[...]): the "
            "run then finishes without it, and the report describes the rest"
        )
    if not Path(table).exists():
        refuse(
            f"report: the run of this config did not finish: {table} does not exist; run the "
            "same command without --report to finish it, then build the report"
        )
    if listed != planned:
        other = sorted(listed - planned) or [f"not {path}" for path in sorted(planned - listed)]
        refuse(
            f"report: {table} holds the results of another grid than this config's ({len(listed)}"
            f" runs, e.g. {other[0]}; this config has {len(planned)}): build the report with "
            "the options of the run it describes, e.g. snakemake --report results/report.html "
            "--configfile F"
        )


if workflow.is_main_process:  # not again in each job's own Snakemake process
    # every listed result read and hashed once (rnnbench/pipeline/files.py), for both checks
    LISTED = listed_results(TABLES["measurements"])
    CHANGED = changed_results(LISTED)
    set_aside_damaged_results(LISTED, CHANGED)
    set_aside_stale_tables(CHANGED)
    write_findings_settings()
    if INVOCATION.report:
        check_report_grid()
    # One command resumes after any interruption: the locks of a Snakemake that was killed
    # (and so could not remove them) are removed here, before Snakemake checks them; those of
    # a run that may be alive are kept (rnnbench/jobs/interrupt.py). Hooks onerror and onsuccess
    # (aggregate.smk) remove the record when the run ends; onstart writes it.
    if not DRY_RUN:
        interrupt.remove_stale_locks(".snakemake", log=lambda line: print(line, file=sys.stderr))
    # how long the run will take here, before any job (a dry run says it too)
    PENDING = [
        (cell, impl)
        for (cell, impl, _), path in zip(PRIORITIES, result_paths())
        if not Path(path).exists()
    ]
    if not INVOCATION.report and (PENDING or not Path(TABLES["findings"]).exists()):
        print(
            estimate.run_line(
                CELLS,
                PENDING,
                config,
                {
                    "dataset": sum(
                        not Path(dataset_files(name)["npz"]).exists() for name in DATASETS
                    ),
                    "peak": sum(not Path(path).exists() for path in PEAKS),
                    "aggregate": 1,
                    "findings": 1,
                    "chart": len(PLOTS),
                },
                TABLES["measurements"],
                socket.gethostname(),
            ),
            file=sys.stderr,
        )


def report_missing(blocked):
    """After a run that could not measure every result (failed or blocked jobs): write
    results/partial/ (rnnbench.pipeline.failures.write_partial) and say on stderr which runs are
    missing and why (the job's error, or what blocked it)."""
    jobs = [
        (*job, result, log)
        for job, result, log in zip(PRIORITIES, result_paths(), result_paths(TRAIN_LOGS))
    ]
    from rnnbench.pipeline.failures import NOT_STARTED, write_partial  # pandas: only after a failure

    missing = write_partial(jobs, "results/partial", SHARED_RUNS, blocked)
    if len(missing):
        print(
            f"{len(missing)} of {len(result_paths())} training results are missing:",
            file=sys.stderr,
        )
        started = missing[missing["error_line"] != NOT_STARTED]
        for row in started.itertuples():
            print(
                f"  {row.cell_id} {row.impl} repeat {row.repeat}: {row.error_line}", file=sys.stderr
            )
        if len(started) < len(missing):
            print(
                f"  {len(missing) - len(started)} {'other ' if len(started) else ''}"
                f"run(s): {NOT_STARTED}",
                file=sys.stderr,
            )
        print(
            "Listed in results/partial/missing.csv, with the logs"
            + (
                "; cells that completed are summarised in results/partial/summary.csv."
                if Path("results/partial/summary.csv").exists()
                else "; no cell has completed yet."
            ),
            file=sys.stderr,
        )


STARTED = time.time()  # this Snakemake's start: a log written since is this run's


def report_failed_tables():
    """After a failed run: the cause of each dataset, peak, table or chart rule that failed in
    it (its log written since STARTED, its output missing), in one line on the terminal, where
    Snakemake only says there was an error and names the log. The line is
    rnnbench.pipeline.failures.error_line's, e.g. runs of two environments, or a result that is not
    valid JSON, with the fix."""
    from rnnbench.pipeline.failures import error_line

    steps = {
        "aggregate": ("results/logs/aggregate.log", TABLES["measurements"]),
        "findings": ("results/logs/findings.log", TABLES["findings"]),
    }
    for chart in PLOTS:
        steps[f"plot {chart}"] = (f"results/logs/plot/{chart}.log", f"results/plots/{chart}.svg")
    for threads in config["intra_op_parallelism_threads"]:
        for tf_version in TF_VERSIONS:
            peak = peak_path(RUNS, threads, tf_version)
            steps[f"peak {Path(peak).stem}"] = (peak_path(LOGS, threads, tf_version, ".log"), peak)
    for name in DATASETS:
        steps[f"make_data {name}"] = (
            f"results/logs/make_data/{name}.log",
            dataset_files(name)["npz"],
        )
    for name, (log, output) in steps.items():
        if (
            Path(log).exists()
            and Path(log).stat().st_mtime >= STARTED
            and not Path(output).exists()
        ):
            line = error_line(Path(log).read_text(errors="replace").splitlines())
            print(f"{name} failed: {line} (its log: {log})", file=sys.stderr)


def some_result_missing():
    """True when some training result of the grid is missing."""
    return not all(Path(result).exists() for result in result_paths())


def dataset_of(wildcards):
    """The .npz and sidecar of the dataset a cell reads."""
    return dataset_files(CELLS[wildcards.cell]["dataset"])


def priority_of(impl):
    """priority of a training job (PRIORITIES); a run the grid does not measure cannot be
    asked for (its cell takes it from another, SHARED_RUNS)."""
    return lambda wildcards: PRIORITIES[(wildcards.cell, impl, int(wildcards.repeat))]


def mem_mb_of(impl):
    """mem_mb of a training job, from its cell (see rnnbench/grid/resources.py)."""
    return lambda wildcards: training_mem_mb(
        CELLS[wildcards.cell], impl, config["num_samples"], config["device"]
    )


def runtime_of(impl):
    """runtime (minutes) of a training job, from its cell (see rnnbench/grid/resources.py)."""
    return lambda wildcards: training_runtime_min(
        CELLS[wildcards.cell], impl, TOTAL_STEPS, config["min_measure_s"]
    )
