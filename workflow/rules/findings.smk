# results/FINDINGS.md: a verdict on each claim in the config, per cell, with our ratios and
# intervals, what the ablations change, stability and break-even (rnnbench/report/findings.py).
rule findings:
    input:
        summary="results/summary.csv",
        measurements="results/measurements.csv",
        # the claims and extrapolate: a changed claim re-writes FINDINGS (common.smk)
        settings=findings_settings,
        planned=planned("write_findings_settings"),
    output:
        report("results/FINDINGS.md", caption="../report/findings.rst", category="Findings"),
    log:
        "results/logs/findings.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        claims=config["claims"],
    script:
        "../scripts/findings.py"
