rule make_data:
    output:
        npz="results/data/{dataset}.npz",
        sidecar="results/data/{dataset}.json",
    log:
        "results/logs/make_data/{dataset}.log",
    conda:
        "../../envs/environment.yaml"
    params:
        dataset=lambda wildcards: DATASETS[wildcards.dataset],
    script:
        "../scripts/make_data.py"
