# The training jobs' benchmark files are read, not inputs: each comes with its result (Snakemake
# checks it as the job ends), and as inputs they cost a dry run of a large grid a file each.
# A result whose benchmark was deleted since keeps its measurement, without the job's wall time
# and peak memory (rnnbench/results/load.py, job_cost).
# With more_repeats: after the planned repeats, which cells' step ratios are undecided, and
# the training jobs that add more repeats to them (rnnbench/pipeline/looks.py).
checkpoint first_look:
    input:
        results=result_paths(),
    output:
        layout.first_look_path(RUNS),
    log:
        layout.rule_log("first_look"),
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        benchmarks=result_paths(TRAIN_BENCHMARKS),
        shared=SHARED_RUNS,
        cells=CELLS,
        protocol={key: config[key] for key in PROTOCOL_KEYS},
        jobs=list(PRIORITIES),
        repeats=config["repeats"],
        margin=config["margin"],
        confidence=LOOK_CONFIDENCE,
    script:
        "../scripts/first_look.py"


rule aggregate:
    input:
        results=measured_results,
        peaks=PEAKS,
        planned=housekeeping.planned("set_aside_stale_tables", PLANNED),
    output:
        measurements=report(
            layout.MEASUREMENTS,
            caption="../report/measurements.rst",
            category="Tables",
        ),
        summary=report(
            layout.SUMMARY,
            caption="../report/summary.rst",
            category="Tables",
        ),
        cumulative=layout.CUMULATIVE,
        costmodel=layout.COSTMODEL,
    log:
        layout.rule_log("aggregate"),
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        benchmarks=measured_benchmarks,
        shared=SHARED_RUNS,
        cells=CELLS,
        protocol={key: config[key] for key in PROTOCOL_KEYS},
        confidence=LOOK_CONFIDENCE,
    script:
        "../scripts/aggregate.py"


# Stands in a dry run's plan for what a run does before any job and the dry run did not
# (hooks.smk's PLANNED): the rules after it show in the plan as they will run.
rule plan_only:
    output:
        layout.DRY_RUN_STEP,
    log:
        layout.rule_log("plan_only", "{step}"),
    run:
        raise WorkflowError(
            f"{output[0]} stands for a step of a dry run's plan; a run does {wildcards.step} "
            "before any job: run the workflow without -n"
        )
