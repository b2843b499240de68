rule aggregate:
    input:
        results=result_paths(),
        peaks=PEAKS,
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
        shared=SHARED_RUNS,
    script:
        "../scripts/aggregate.py"


# When training jobs failed (with --keep-going the rest of the grid still ran), rule aggregate
# cannot run: say which runs are missing, and why, and summarise the ones that exist, in
# results/partial/ (removed once every result exists). Not when no missing run was ever
# attempted (no log): e.g. a failed check_gpu or make_data (attempted_but_missing, common.smk).
onerror:
    if attempted_but_missing():
        missing = write_partial(
            result_paths(), result_paths(TRAIN_LOGS), "results/partial", shared=SHARED_RUNS
        )
        if len(missing):
            print(
                f"{len(missing)} of {len(result_paths())} training results are missing:",
                file=sys.stderr,
            )
            for row in missing.itertuples():
                print(
                    f"  {row.cell_id} {row.impl} repeat {row.repeat}: {row.error_line}",
                    file=sys.stderr,
                )
            print(
                "Listed in results/partial/missing.csv, with the logs; cells that completed are "
                "summarised in results/partial/summary.csv.",
                file=sys.stderr,
            )


onsuccess:
    if all(Path(result).exists() for result in result_paths()):
        shutil.rmtree("results/partial", ignore_errors=True)
    # results/plots/ shows the current config's charts: drop those an earlier config asked for
    for chart in set(CHARTS + ABLATION_CHARTS) - set(PLOTS):
        for ext in ("html", "svg"):
            Path(f"results/plots/{chart}.{ext}").unlink(missing_ok=True)
