rule aggregate:
    input:
        results=result_paths(),
    output:
        measurements=report(
            "results/measurements.csv",
            caption="../report/measurements.rst",
            category="Tables",
        ),
        summary=report(
            "results/summary.csv",
            caption="../report/summary.rst",
            category="Tables",
        ),
        cumulative="results/cumulative_time.csv",
    log:
        "results/logs/aggregate.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        seed=config["seed"],
    script:
        "../scripts/aggregate.py"


# When jobs failed (with --keep-going the rest of the grid still ran), rule aggregate cannot
# run: say which runs are missing and summarise the ones that exist, in results/partial/.
onerror:
    missing = write_partial(result_paths(), "results/partial", seed=config["seed"])
    if len(missing):
        print(
            f"{len(missing)} of {len(result_paths())} training results are missing; "
            "they are listed in results/partial/missing.csv, with a summary of the others "
            "in results/partial/. Each failed job's log path is printed above.",
            file=sys.stderr,
        )
