# results/FINDINGS.md: a verdict on each claim in the config, per cell, with our ratios and
# intervals, what the ablations change, stability and break-even (rnnbench/report/findings.py).
rule findings:
    input:
        summary=layout.SUMMARY,
        measurements=layout.MEASUREMENTS,
        costmodel=layout.COSTMODEL,
        # the machine's unit costs, probed in rule peak's job
        peaks=PEAKS,
        # the claims and extrapolate: a changed claim re-writes FINDINGS (hooks.smk)
        settings=housekeeping.findings_settings(DRY_RUN),
        planned=housekeeping.planned("write_findings_settings", PLANNED),
    output:
        report(layout.FINDINGS, caption="../report/findings.rst", category="Findings"),
    log:
        layout.rule_log("findings"),
    # before the charts (priority 0): FINDINGS needs none, and a chart that fails stops the run
    priority: 1
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
