# What the workflow does outside its jobs (rnnbench/pipeline/housekeeping.py and failures.py):
# before any job, while the Snakefile is read, and when the run starts and ends. Included
# before the rules: their inputs read BLOCKED and PLANNED.
import sys
import time
from functools import partial

from snakemake.exceptions import WorkflowError

from rnnbench.grid.axes import CELL_AXES  # noqa: E402  (on the path: config.smk)
from rnnbench.jobs import exclusive, interrupt  # noqa: E402
from rnnbench.pipeline import estimate, housekeeping  # noqa: E402
from rnnbench.pipeline.files import changed_results, listed_results  # noqa: E402
from rnnbench.results.load import LATE_COLUMNS  # noqa: E402

SAY = partial(print, file=sys.stderr)  # what the workflow has to say goes to standard error
RESULT_FILES = result_paths()  # the grid's training results, their logs and benchmarks
LOG_FILES = result_paths(TRAIN_LOGS)
BENCHMARK_FILES = result_paths(TRAIN_BENCHMARKS)
# (cell, impl, repeat, result, log) of each training job, for the partial report
JOBS = [(*job, result, log) for job, result, log in zip(PLANNED_JOBS, RESULT_FILES, LOG_FILES)]
# Every output but the training jobs': a file in the way of one stops the run before any job.
OTHER_OUTPUTS = [
    *layout.TABLES.values(),
    *CHART_FILES,
    *PEAKS,
    *(path for name in DATASETS for path in dataset_files(name).values()),
    layout.rule_log("aggregate"),
    f"{layout.PARTIAL}/missing.csv",
    layout.FINDINGS_SETTINGS,
    f".snakemake/{interrupt.OWNER}",  # this workflow's own records in Snakemake's folder
    f".snakemake/{estimate.PLAN}",
]
STARTED = time.time()  # this Snakemake's start: a log written since is this run's
LOOKED = looked_jobs()  # the jobs an earlier first look added; None before any look
BLOCKED = {}  # {result: why}: training jobs a file blocks, left out and named when the run ends
PLANNED = []  # what a run does before any job that this dry run did not (rule plan_only)
DAMAGED = []  # results not valid: set aside and measured again (by a run; a dry run plans it)
UNDRAWN = {}  # {chart: why}: with --report, the charts a run did not draw, left out of it


def report_missing():
    """Write results/partial/ and say which training runs are missing, and why."""
    from rnnbench.pipeline import failures  # pandas: only after a failure

    failures.report_missing(JOBS, SAY, SHARED_RUNS, BLOCKED, since=STARTED)


def left_out():
    """The line that ends a run whose training jobs a file blocked (BLOCKED)."""
    return (
        f"{len(BLOCKED)} training job(s) were left out: a file or folder stands in the way of "
        f"their output ({layout.PARTIAL}/missing.csv says which); move it away and run again"
    )


# Before any job, in the main Snakemake process only (not again in each job's own): a blocked
# training job is left out, any other blocked output stops the run; a damaged dataset is
# remade; results that are not valid
# and tables that no longer describe the results on disk are set aside (every listed result
# read and hashed once); FINDINGS' settings written; a report's grid checked. A command that
# runs no job changes nothing: it says what a run would do, and a dry run (-n) plans it.
if workflow.is_main_process:
    # another run in this folder, alive: Snakemake refuses this one only once its DAG is
    # built, after the steps below would have moved that run's tables and rewritten its files
    LIVE = interrupt.live_owner(".snakemake")
    if LIVE and not DRY_RUN and INVOCATION.locks:
        refuse(
            f"another Snakemake run is running in this folder (pid {LIVE['pid']}, since "
            f"{time.strftime('%H:%M', time.localtime(LIVE['since']))}): two runs in one folder "
            "write the same files; wait for it to end (a dry run, -n, may look meanwhile), "
            "then run this command again"
        )
    # the measuring lock every local measuring job takes: one it cannot open stops the run
    # now, before anything changes, not at the first training job (rnnbench/jobs/exclusive.py)
    if LOCAL and not DRY_RUN:
        try:
            os.close(exclusive.open_lock(exclusive.lock_path()))
        except OSError as error:
            refuse(f"{error}")
    try:
        BLOCKED = housekeeping.blocked_results(
            list(zip(RESULT_FILES, LOG_FILES, BENCHMARK_FILES)),
            OTHER_OUTPUTS,
            SAY,
        )
        # a dataset changed since it was made is remade from its seed, not measured again
        housekeeping.remake_damaged_datasets(
            {name: (DATASETS[name], *dataset_files(name).values()) for name in DATASETS},
            DRY_RUN,
            SAY,
        )
        LISTED = listed_results(layout.MEASUREMENTS)
        CHANGED, DAMAGED = housekeeping.set_aside_damaged_results(
            RESULT_FILES, LISTED, changed_results(LISTED), DRY_RUN, SAY, peaks=PEAKS
        )
        SKIPPED = {  # step: whether a run does it before any job and this command did not
            "set_aside_damaged_results": DRY_RUN and bool(DAMAGED),
            "set_aside_stale_tables": housekeeping.set_aside_stale_tables(
                CHANGED,
                [*CELL_AXES, *LATE_COLUMNS],
                DRY_RUN,
                SAY,
                unlooked=LOOKED is None,
                narrowed=INVOCATION.narrowed,
            ),
            "write_findings_settings": housekeeping.write_findings_settings(
                config, DRY_RUN, SAY, report=bool(INVOCATION.report)
            ),
        }
        if INVOCATION.report:
            housekeeping.check_report_grid([*RESULT_FILES, *result_paths(jobs=LOOKED or [])])
            from rnnbench.pipeline import failures  # pandas: only for a report

            # a chart whose job failed is left out (targets) and named in the report's
            # description (workflow/report/workflow.rst reads config's missing_charts)
            UNDRAWN = failures.missing_charts(PLOTS)
            config["missing_charts"] = failures.report_missing_charts(UNDRAWN, len(PLOTS), SAY)
    except housekeeping.Refused as error:
        refuse(str(error))
    # Every other training result on disk: Snakemake has nothing to do and calls no hook
    # (not onsuccess), so the jobs a file blocks are named now and the run fails, as after them.
    if BLOCKED and not DRY_RUN and all(Path(result).exists() for result in targets()):
        report_missing()
        refuse(left_out())
    # only a dry run (-n) plans them: --summary and --report take the DAG as it is on disk
    if workflow.output_settings.dryrun:
        PLANNED = [step for step, skipped in SKIPPED.items() if skipped]
    # One command resumes after any interruption: the locks of a Snakemake that was killed
    # (and so could not remove them) are removed here, before Snakemake checks them; those of
    # a run that may be alive are kept (rnnbench/jobs/interrupt.py). Hooks onerror and
    # onsuccess remove the record when the run ends; onstart writes it.
    if not DRY_RUN:
        interrupt.remove_stale_locks(".snakemake", log=SAY)
    # how long the run will take here, before any job (a dry run says it too), and which
    # other run holds the measuring lock now
    if not INVOCATION.report:
        MORE = MORE_JOBS if LOOKED is None else LOOKED
        ESTIMATE = housekeeping.estimate_line(
            CELLS,
            [  # a job a file blocks does not run
                (cell, impl, result)
                for (cell, impl, _), result in zip(PLANNED_JOBS, RESULT_FILES)
                if result not in BLOCKED
            ],
            config,
            {"dataset": [dataset_files(name)["npz"] for name in DATASETS], "peak": PEAKS},
            len(PLOTS),
            more=[  # before the first look, its cap; after it, the jobs it added
                (cell, impl, result)
                for (cell, impl, _), result in zip(MORE, result_paths(jobs=MORE))
            ],
            plan=None if DRY_RUN else ".snakemake",  # read by another run's estimate
            damaged=DAMAGED,  # measured again; a dry run has not moved them
            # targets, --until, --forcerun: other jobs than the whole workflow's missing ones
            narrowed=INVOCATION.narrowed,
            forced=INVOCATION.forced,
        )
        if ESTIMATE is not None:
            SAY(ESTIMATE)


# The run holds its locks: record who holds them (rnnbench/jobs/interrupt.py).
onstart:
    interrupt.write_owner(".snakemake")


# When a run fails or is interrupted with training results missing (with --keep-going the rest
# of the grid still ran), nothing is aggregated: say which runs are missing, and why (those
# never started in one line), and summarise the ones that exist, in results/partial/ (removed
# once every result exists, even if the run failed later); and the cause of each other rule
# that failed (its log's line).
onerror:
    interrupt.remove_owner(".snakemake")  # the run ends: its locks go
    from rnnbench.pipeline import failures

    failures.after_failure(JOBS, SAY, SHARED_RUNS, BLOCKED, since=STARTED)
    steps = failures.rule_steps(PLOTS, list(zip(PEAK_LOGS, PEAKS)), DATASETS)
    failures.report_failed_tables(steps, STARTED, SAY)


onsuccess:
    interrupt.remove_owner(".snakemake")  # the run ends: its locks go
    if BLOCKED:  # the rest of the grid is measured; what could not be written is named
        report_missing()
        refuse(left_out())  # in one line: a WorkflowError here prints this file's frames
    # results/plots/ shows the current config's charts: drop those an earlier config asked for
    housekeeping.after_success(RESULT_FILES, set(ALL_CHARTS) - set(PLOTS))
    # runs that another run's measuring job (under another lock) measured beside
    OVERLAP = housekeeping.overlap_line()
    if OVERLAP:
        SAY(OVERLAP)
