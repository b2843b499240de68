rule plot:
    input:
        summary=layout.SUMMARY,
        cumulative=layout.CUMULATIVE,
        measurements=layout.MEASUREMENTS,
        costmodel=layout.COSTMODEL,
    output:
        html=layout.chart_path("{chart}", "html"),
        svg=report(
            layout.chart_path("{chart}", "svg"),
            caption="../report/plot.rst",
            category="Figures",
            labels={"chart": "{chart}"},
        ),
    log:
        layout.rule_log("plot", "{chart}"),
    wildcard_constraints:
        chart="|".join(ALL_CHARTS),
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    script:
        "../scripts/plot.py"
