rule plot:
    input:
        summary="results/summary.csv",
        cumulative="results/cumulative_time.csv",
    output:
        html="results/plots/{chart}.html",
        svg=report(
            "results/plots/{chart}.svg",
            caption="../report/{chart}.rst",
            category="Figures",
            labels={"chart": "{chart}"},
        ),
    wildcard_constraints:
        chart="|".join(CHARTS),
    conda:
        "../../envs/environment.yaml"
    log:
        "results/logs/plot/{chart}.log",
    script:
        "../scripts/plot.py"
