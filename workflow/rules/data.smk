rule make_data:
    output:
        npz="results/data/{dataset}.npz",
        sidecar="results/data/{dataset}.json",
    params:
        dataset=lambda wildcards: DATASETS[wildcards.dataset],
    conda:
        "../../envs/environment.yaml"
    log:
        "results/logs/make_data/{dataset}.log",
    script:
        "../scripts/make_data.py"
