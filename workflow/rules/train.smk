# One job per (cell, implementation, repeat): every measurement is a fresh process. Jobs run
# repeat by repeat through the grid, the static and dynamic runs of a cell and repeat next to
# each other (priority: plan.job_priorities); an ablation that changes dynamic_rnn only
# re-uses its reference's static runs (cells.shared_runs): no job for those.
# The job asks for as many threads as the cell gives TensorFlow (the larger of its intra- and
# inter-op threads; Snakemake lowers it to --cores).
# mem_mb and runtime (minutes) grow with the cell: see rnnbench/grid/resources.py for the formulas.
# The job runs workflow/scripts/train.py as a shell command (rnnbench/jobs/command.py says why
# not script:), its cell, protocol and workflow record as JSON.
# measuring=1: one measuring job (training or peak) at a time on this machine, whatever --cores
# says (common.smk registers the resource for a local run; the job's lock, rnnbench/jobs/exclusive.py,
# holds it apart from other runs too).
rule train_static:
    input:
        unpack(training_inputs("static")),
    output:
        result=train_outputs("static")["result"],
    log:
        train_outputs("static")["log"],
    benchmark:
        train_outputs("static")["benchmark"]
    priority: priority_of("static")
    conda:
        "../../envs/environment.yaml"
    container:
        of_cell(lambda cell: image_of(cell["tf_version"]))
    threads: of_cell(job_threads)
    resources:
        mem_mb=mem_mb_of("static"),
        runtime=runtime_of("static"),
        measuring=1,
    params:
        python=TRAIN_PYTHON,
        script=TRAIN_SCRIPT,
        rule="train_static",
        log_every=config["log_every"],
        impl="static",
        workflow_meta=of_cell(lambda cell: WORKFLOW_META_JSON[cell["tf_version"]]),
        cell=of_wildcards(lambda wildcards: cell_json(wildcards.cell)),
        protocol=as_json({key: config[key] for key in PROTOCOL_KEYS}),
    shell:
        TRAIN_COMMAND


use rule train_static as train_dynamic with:
    input:
        unpack(training_inputs("dynamic")),
    output:
        result=train_outputs("dynamic")["result"],
    log:
        train_outputs("dynamic")["log"],
    benchmark:
        train_outputs("dynamic")["benchmark"]
    priority: priority_of("dynamic")
    resources:
        mem_mb=mem_mb_of("dynamic"),
        runtime=runtime_of("dynamic"),
        measuring=1,
    params:
        python=rules.train_static.params.python,
        script=rules.train_static.params.script,
        rule="train_dynamic",
        log_every=rules.train_static.params.log_every,
        impl="dynamic",
        workflow_meta=rules.train_static.params.workflow_meta,
        cell=rules.train_static.params.cell,
        protocol=rules.train_static.params.protocol,


# The device's float32 matmul rate with TensorFlow, in the same run, on the training jobs'
# device, once per intra-op thread count of the grid (a single matmul has no inter-op
# parallelism) and TensorFlow version: the peak each result's achieved FLOP/s is compared with
# (roofline.py).
rule peak:
    output:
        layout.peak_path(RUNS, "{threads}", "{tf_version}"),
    log:
        layout.peak_path(LOGS, "{threads}", "{tf_version}", ".log"),
    wildcard_constraints:
        threads=r"\d+",
    conda:
        "../../envs/environment.yaml"
    container:
        lambda wildcards: image_of(wildcards.tf_version)
    threads: lambda wildcards: int(wildcards.threads)
    resources:
        mem_mb=2048,
        runtime=10,
        measuring=1,
    params:
        device=config["device"],
        workflow_meta=lambda wildcards: workflow_meta(wildcards.tf_version),
    script:
        "../scripts/peak.py"
