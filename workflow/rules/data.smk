rule make_data:
    output:
        npz=layout.dataset_path("{dataset}"),
        sidecar=layout.dataset_path("{dataset}", "json"),
    log:
        layout.rule_log("make_data", "{dataset}"),
    # before every training job, so that the grid runs repeat by repeat (plan.job_priorities)
    priority: max(PRIORITIES.values()) + 1
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards: dataset_mem_mb(DATASETS[wildcards.dataset]),
        runtime=10,
    params:
        dataset=lambda wildcards: DATASETS[wildcards.dataset],
    script:
        "../scripts/make_data.py"
