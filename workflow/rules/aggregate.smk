rule aggregate:
    input:
        results=result_paths(),
        benchmarks=result_paths(TRAIN_BENCHMARKS),
        peaks=PEAKS,
        planned=planned("set_aside_stale_tables"),
    output:
        measurements=report(
            "results/measurements.csv",
            caption="../report/measurements.rst",
            category="Tables",
        ),
        summary=report(
            "results/summary.csv",
            caption="../report/summary.rst",
            category="Tables",
        ),
        cumulative="results/cumulative_time.csv",
    log:
        "results/logs/aggregate.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        shared=SHARED_RUNS,
        cells=CELLS,
    script:
        "../scripts/aggregate.py"


# The run holds its locks: record who holds them (rnnbench/jobs/interrupt.py, common.smk).
onstart:
    interrupt.write_owner(".snakemake")


# When a run fails or is interrupted with training results missing (with --keep-going the rest
# of the grid still ran), rule aggregate cannot run: say which runs are missing, and why (those
# never started in one line), and summarise the ones that exist, in results/partial/ (removed
# once every result exists); and the cause of each other rule that failed (its log's line).
onerror:
    interrupt.remove_owner(".snakemake")  # the run ends: its locks go (common.smk)
    if some_result_missing() or BLOCKED:
        report_missing(BLOCKED)
    report_failed_tables()


onsuccess:
    interrupt.remove_owner(".snakemake")  # the run ends: its locks go (common.smk)
    if BLOCKED:  # the rest of the grid is measured; what could not be written is named
        report_missing(BLOCKED)
        raise WorkflowError(
            f"{len(BLOCKED)} training job(s) were left out: a file stands where their output "
            "folder must be (results/partial/missing.csv says which); move it away and run again"
        )
    if not some_result_missing():
        shutil.rmtree("results/partial", ignore_errors=True)
    # results/plots/ shows the current config's charts: drop those an earlier config asked for
    for chart in set(CHARTS + ABLATION_CHARTS) - set(PLOTS):
        for ext in ("html", "svg"):
            Path(f"results/plots/{chart}.{ext}").unlink(missing_ok=True)


# Stands in a dry run's plan for what a run does before any job and the dry run did not
# (common.smk's plan_as_a_run): the rules after it show in the plan as they will run.
rule plan_only:
    output:
        "results/.dry-run/{step}",
    log:
        "results/logs/plan_only/{step}.log",
    run:
        raise WorkflowError(
            f"{output[0]} stands for a step of a dry run's plan; a run does {wildcards.step} "
            "before any job: run the workflow without -n"
        )
