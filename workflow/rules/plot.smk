rule plot:
    input:
        summary="results/summary.csv",
        cumulative="results/cumulative_time.csv",
        measurements="results/measurements.csv",
    output:
        html="results/plots/{chart}.html",
        svg=report(
            "results/plots/{chart}.svg",
            caption="../report/plot.rst",
            category="Figures",
            labels={"chart": "{chart}"},
        ),
    log:
        "results/logs/plot/{chart}.log",
    wildcard_constraints:
        chart="|".join(CHARTS + ABLATION_CHARTS),
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    script:
        "../scripts/plot.py"
