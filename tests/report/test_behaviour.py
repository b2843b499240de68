"""Behaviour unchanged by restructuring: re-aggregating a committed set of result JSONs gives
the tables that the workflow wrote before it, and the FINDINGS that the current writer words
from them (the shape in words, claims judged in every api, reasons for every inconclusive
verdict, the method after the results; the cost model's Why section,
which for these runs, most of them flagged busy, says why the cost model is not fitted;
each ratio decided at a practical margin of 10 %, config.json's ``margin``, with a claim that
lies within it not holding; Stability's line on what the spread between processes
follows; the Method's list of what a step ran per api and mode, and For JAX users' words for
jax_scan's train step, written for this grid's three apis: changed on purpose, and reviewed
line by line when expected/FINDINGS.md was rewritten).

tests/fixtures/behaviour/ holds the results of a small grid (config.yaml there: compat_v1,
keras and jax_scan, a loop-bound and a scan-unroll ablation, the seeds' claims; 45 training
jobs of schema 5, their benchmark files and rule peak's file), run bare with the workflow at
commit 95dce5e, and ``expected/`` the measurements.csv, summary.csv and FINDINGS.md that
commit's aggregation wrote from them, and FINDINGS.md as the current writer words them
(``config.json``: the config as the
workflow validated it, schema defaults and claims_from's claims filled in). Columns renamed
since (RENAMED) are compared under their new names.
"""

import json
from pathlib import Path

import pandas as pd
import pytest

from rnnbench.report.findings import findings_markdown
from rnnbench.results.load import load_results, read_table, share_runs
from rnnbench.stats.summary import summarize
from rnnbench.grid import cells as grid_cells, plan

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "behaviour"
RENAMED = {"session_setup_s": "init_s", "graph_optimisation_s": "optimisation_s"}
"""Result fields renamed since (generic phase names), old -> new, inside column names."""
ADDED = ("others_share", "job_start_unix_s", "job_end_unix_s", "lock_waited_s", "cpu_simd",
         "speed_python_ns", "speed_matmul_gflop_s", "cpus_ran_on", "migrations",
         "involuntary_switches", "aslr", "ld_preload", "timing_env", "others_measuring",
         "others_measuring_in", "snakemake_run")
"""measurements.csv's columns added since (the share of the run's CPUs other
processes used, the measuring lock's span; the CPU's widest vector instruction set; the
machine's speed during the run and where its process ran; the other measuring jobs seen
beside it; the timing variables set; the Snakemake run), which the fixture's results
predate: empty for them."""
RECORDED_ADDED = ("data_sha256", "initial_weights_sha256", "numpy_version", "git_dirty")
"""measurements.csv's columns added since from what every result recorded (the inputs runs of
one cell must share): filled for the fixture, one value per cell."""
SUMMARY_ADDED = {"ratio_confidence": 0.95}
"""summary.csv's columns added since, with their value for the fixture: the level of the ratio
intervals (95 %: one look; more_repeats would make it 97.5 %)."""


def renamed(column: str) -> str:
    for old, new in RENAMED.items():
        column = column.replace(old, new)
    return column


@pytest.fixture(scope="module")
def aggregated(tmp_path_factory):
    """The fixture's results aggregated by today's code, as rules aggregate and findings do,
    with the paths the workflow gave them (relative to the fixture folder)."""
    import os

    config = json.loads((FIXTURE / "config.json").read_text())
    cells = grid_cells.cells(config)
    shared = grid_cells.shared_runs(cells)
    runs_dir = next((FIXTURE / "results" / "runs").iterdir()).relative_to(FIXTURE)
    jobs = plan.job_priorities(cells, config["repeats"], shared)
    paths = [f"{runs_dir}/{cell}/{impl}/repeat{repeat}.json" for cell, impl, repeat in jobs]
    benchmarks = [p.replace("results/runs", "results/benchmarks").replace(".json", ".tsv")
                  for p in paths]
    out = tmp_path_factory.mktemp("behaviour")
    here = os.getcwd()
    os.chdir(FIXTURE)
    try:
        runs = share_runs(load_results(paths, benchmarks), shared)
        peaks = {}
        for peak in (FIXTURE / runs_dir).glob("peak_*.json"):
            record = json.loads(peak.read_text())
            peaks[(record["metadata"]["intra_op_parallelism_threads"],
                   record["tf_version"])] = record["peak"]["flop_per_s"]
        summary = summarize(runs, peak_flop_per_s=peaks)
    finally:
        os.chdir(here)
    runs.to_csv(out / "measurements.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    findings = findings_markdown(read_table(out / "summary.csv"),
                                 read_table(out / "measurements.csv"), config["claims"], config)
    return out, findings


@pytest.mark.parametrize("table", ["measurements.csv", "summary.csv"])
def test_the_tables_are_the_ones_written_before(aggregated, table):
    out, _ = aggregated
    before = read_table(FIXTURE / "expected" / table)
    before.columns = [renamed(c) for c in before.columns]
    after = read_table(out / table)
    added = [column for column in ADDED if column in after]
    assert after[added].isna().all().all()
    if table == "measurements.csv":
        assert after[list(RECORDED_ADDED)].notna().all().all()
        assert (after.groupby("measured_in")[list(RECORDED_ADDED)].nunique() == 1).all().all()
        added += list(RECORDED_ADDED)
    if table == "summary.csv":
        assert {c: set(after[c]) for c in SUMMARY_ADDED} == {c: {v} for c, v in
                                                             SUMMARY_ADDED.items()}
        added += list(SUMMARY_ADDED)
    after = after.drop(columns=added)
    assert list(after.columns) == list(before.columns)
    pd.testing.assert_frame_equal(after, before, check_exact=False, rtol=1e-12)


def test_findings_are_the_ones_written_before(aggregated):
    _, findings = aggregated
    before = (FIXTURE / "expected" / "FINDINGS.md").read_text().splitlines()
    after = findings.splitlines()
    stamp = 2  # the line that says when it was written
    assert "UTC" in before[stamp] and "UTC" in after[stamp]
    assert after[:stamp] + after[stamp + 1:] == before[:stamp] + before[stamp + 1:]


def test_the_bottom_line_reads_in_short_sentences(aggregated):
    """No sentence of FINDINGS' bottom line over about 35 words (compat_v1, keras
    and jax_scan cells, an ablation of each kind of this fixture)."""
    import re

    _, findings = aggregated
    bottom = findings[findings.index("## Bottom line"):findings.index("## Where this was")]
    sentences = [s for line in bottom.splitlines()[1:] if line.strip()
                 for s in re.split(r"(?<=\.)\s+(?=[A-Z])", line.strip(" -"))]
    assert len(sentences) > 10
    long = [s for s in sentences if len(s.split()) > 35]
    assert not long, long
