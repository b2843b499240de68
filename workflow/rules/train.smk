# One job per (cell, implementation, repeat): every measurement is a fresh process.
# The job's threads are TensorFlow's intra/inter-op threads unless the config sets them.
# mem_mb and runtime (minutes) grow with the cell: see rnnbench/resources.py for the formulas.
rule train_static:
    input:
        unpack(dataset_of),
    output:
        result=f"{RUNS}/{{cell}}/static/repeat{{repeat}}.json",
    log:
        TRAIN_LOGS.replace("{impl}", "static"),
    benchmark:
        f"results/benchmarks/{PROTOCOL}/{{cell}}/static/repeat{{repeat}}.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: config["threads"]
    resources:
        mem_mb=mem_mb_of("static"),
        runtime=runtime_of("static"),
    params:
        impl="static",
        workflow_meta=WORKFLOW_META,
        cell=lambda wildcards: CELLS[wildcards.cell],
        protocol={
            key: config[key]
            for key in (
                "steps",
                "warmup_steps",
                "fetch_loss",
                "device",
                "seed",
                "intra_op_parallelism_threads",
                "inter_op_parallelism_threads",
                "parallel_iterations",
            )
        },
    script:
        "../scripts/train.py"


use rule train_static as train_dynamic with:
    output:
        result=f"{RUNS}/{{cell}}/dynamic/repeat{{repeat}}.json",
    log:
        TRAIN_LOGS.replace("{impl}", "dynamic"),
    benchmark:
        f"results/benchmarks/{PROTOCOL}/{{cell}}/dynamic/repeat{{repeat}}.tsv"
    resources:
        mem_mb=mem_mb_of("dynamic"),
        runtime=runtime_of("dynamic"),
    params:
        impl="dynamic",
        workflow_meta=WORKFLOW_META,
        cell=lambda wildcards: CELLS[wildcards.cell],
        protocol=rules.train_static.params.protocol,


# The device's float32 matmul rate with TensorFlow, in the same run, with the training jobs'
# threads and device: the peak each result's achieved FLOP/s is compared with (roofline.py).
rule peak:
    output:
        f"{RUNS}/peak.json",
    log:
        f"results/logs/{PROTOCOL}/peak.log",
    conda:
        "../../envs/environment.yaml"
    threads: config["threads"]
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        protocol=rules.train_static.params.protocol,
        workflow_meta=WORKFLOW_META,
    script:
        "../scripts/peak.py"
