"""The reference run behind every number of the README and docs/: run the main job, copy its
FINDINGS, summary and charts to docs/figures/, and rewrite the README's answer from them.

    rnnbench reference [--no-run [--results DIR]]

It runs ``snakemake --cores 1`` (the shipped config.yaml) in a new temporary folder (so
results/ is neither reused nor replaced) and then the tests (pytest) in the repository, each
timed (--no-run: use the results already there, results/ or --results DIR, and the times
recorded before), then writes
docs/figures/
(FINDINGS.md, summary.csv, the charts' SVGs, run.json with the main job's wall time) and
the README's block between ANSWER_BEGIN and ANSWER_END (answer()). tests/test_reference.py
fails when the README's block differs from what answer() makes of docs/figures/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from rnnbench.configfiles import load_claims
from rnnbench.formats import SPEED, breakeven_text, column_interval
from rnnbench.load import read_table
from rnnbench.tables import cell_labels, claim_table, gap_share, verdict

REPO = Path(__file__).resolve().parents[3]
FIGURES = REPO / "docs" / "figures"
ANSWER_BEGIN = "<!-- answer: written by rnnbench reference -->"
ANSWER_END = "<!-- answer end -->"


def _ratio(cell: pd.Series, metric: str) -> str:
    return column_interval(cell, f"ratio_{metric}")


def answer(summary: pd.DataFrame, measurements: pd.DataFrame, claims: list[dict],
           main_job_s: float, tests_s: float | None = None) -> str:
    """The README's answer paragraph, from the reference run's tables: static / dynamic
    setup and step ratios with their 95 % intervals per reference cell (compat_v1, no
    ablation), each cell's break-even, the cause the grid isolates (an ablation that changes
    the step verdict, with its share of the log-ratio gap to a claim's seed figure:
    tables.gap_share) and the peak-memory ratio; then the two commands with the measured
    main-job time.

    Args:
        summary: docs/figures/summary.csv (summary.summarize).
        measurements: the first rows of results/measurements.csv, for where it ran
            (device_name, tensorflow_version, threads, python_version).
        claims: the config's claims.
        main_job_s: the main job's wall time, seconds.
        tests_s: the test suite's wall time, seconds (None: not measured).
    """
    compat = summary[summary["api"] == "compat_v1"]
    labels = cell_labels(summary)
    plain = compat[compat["ablations"] == ""]
    run = measurements.iloc[0]
    setups = plain["ratio_setup_s"]
    parts = [
        f"On the reference machine ({run['device_name']} CPU, {int(run['cpus'])} cores, "
        f"TensorFlow "
        f"{run['tensorflow_version']}, {int(run['intra_op_parallelism_threads'])} thread; "
        f"{int(plain['static_repeats'].iloc[0])} fresh processes per cell; 95 % intervals), "
        f"static_rnn's setup (graph construction, session, first step) takes "
        + (f"{setups.min():.1f} to {setups.max():.1f}" if len(plain) > 1
           else f"{setups.iloc[0]:.1f}")
        + f" times dynamic_rnn's ({plain['static_setup_s'].mean():.1f} s against "
        f"{plain['dynamic_setup_s'].mean():.2f} s). Per step, static_rnn / dynamic_rnn is "]
    steps = []
    for _, cell in plain.iterrows():
        speed = SPEED[verdict("static < dynamic", cell["ratio_median_step_s_ci_low"],
                              cell["ratio_median_step_s_ci_high"])]
        breakeven = breakeven_text(cell)
        steps.append(f"{_ratio(cell, 'median_step_s')} with {labels[cell['cell_id']]} "
                     f"({'static ' * (speed != SPEED['inconclusive'])}{speed}; "
                     + ("it never pays its setup back)" if breakeven is None
                        else f"it pays its setup back after {breakeven} steps)"))
    parts.append("; ".join(steps) + ".")
    table = claim_table(summary, [c for c in claims if c["quantity"] == "median_step_s"
                                  and c.get("figure") is not None][:1])
    for _, twin in table[~table["reference"]].iterrows():
        ref = table[table["cell_id"] == twin["base_cell_id"]].iloc[0]
        if twin["verdict"] == ref["verdict"]:
            continue
        cell = summary.set_index("cell_id").loc[twin["cell_id"]]
        breakeven = breakeven_text(cell)
        parts.append(
            f" The cause the grid isolates, with {labels[ref['cell_id']]}: "
            f"{twin['ablations']} (as TensorFlow did up to 1.5). Then static_rnn's steps take "
            f"{_ratio(cell, 'median_step_s')} of dynamic_rnn's"
            + (f" (it pays back after {breakeven} steps)" if breakeven else "")
            + f"; that explains {100 * gap_share(twin['ratio'], ref['ratio'], twin['figure']):.0f}"
            f" % of the log-ratio gap to the {twin['figure']:.2f} of claim {twin['claim']} "
            "(the blog post's GPU, TF 1.x).")
    memory = plain["ratio_peak_rss_mb"]
    parts.append(f" Peak memory, static / dynamic: {memory.min():.2f}"
                 + (f" to {memory.max():.2f}" if f"{memory.max():.2f}" != f"{memory.min():.2f}"
                    else "") + ".")
    return (ANSWER_BEGIN + "\n" + "".join(parts) + "\n\n"
            "```sh\n"
            f"./install.sh && .venv/bin/snakemake --cores 1    # the main job: "
            f"{main_job_s / 60:.0f} min on the reference machine\n"
            "./install.sh && .venv/bin/pytest                 # the tests"
            + (f": {tests_s / 60:.0f} min there" if tests_s else "") + "\n"
            "```\n" + ANSWER_END)


def readme_answer(readme: str) -> str:
    """The README's answer block (ANSWER_BEGIN to ANSWER_END, both included).

    Raises:
        ValueError: if the README has no such block."""
    start, end = readme.find(ANSWER_BEGIN), readme.find(ANSWER_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md: no block between {ANSWER_BEGIN!r} and {ANSWER_END!r}")
    return readme[start:end + len(ANSWER_END)]


def expected_answer(repo: Path = REPO) -> str:
    """answer() of the committed reference run (docs/figures/) and the shipped config."""
    figures = repo / "docs" / "figures"
    run = json.loads((figures / "run.json").read_text())
    config = yaml.safe_load((repo / "config.yaml").read_text())
    load_claims(config, repo)  # the seeds' claims, from config.yaml's claims_from
    return answer(read_table(figures / "summary.csv"), pd.DataFrame([run["where"]]),
                  config["claims"], run["main_job_s"], run.get("tests_s"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``rnnbench reference``'s arguments."""
    parser.add_argument("--no-run", action="store_true",
                        help="use the results as they are, and docs/figures/run.json's times")
    parser.add_argument("--results", type=Path, default=REPO / "results",
                        help="with --no-run: the results folder to use (default: %(default)s)")


def main(args: argparse.Namespace) -> int:
    """``rnnbench reference``: run (or, --no-run, take) the reference run and rewrite
    docs/figures/ and the README's answer; returns the exit status (0)."""
    results = args.results
    if args.no_run:
        before = json.loads((FIGURES / "run.json").read_text())
        main_job_s, tests_s = before["main_job_s"], before.get("tests_s")
    else:  # a fresh run, in a folder of its own: results/ is neither reused nor replaced
        workdir = Path(tempfile.mkdtemp(prefix="rnnbench-reference-"))
        shutil.copy(REPO / "config.yaml", workdir / "config.yaml")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                        "--directory", str(workdir), "--cores", "1"], check=True)
        main_job_s = time.perf_counter() - start
        results = workdir / "results"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                       cwd=REPO, check=True)
        tests_s = time.perf_counter() - start
    for name in ("FINDINGS.md", "summary.csv"):
        shutil.copy(results / name, FIGURES / name)
    for svg in (results / "plots").glob("*.svg"):
        shutil.copy(svg, FIGURES / svg.name)
    first = read_table(results / "measurements.csv").iloc[0]
    where = {key: first[key].item() if hasattr(first[key], "item") else first[key]
             for key in ("device_name", "cpus", "tensorflow_version",
                         "intra_op_parallelism_threads", "python_version", "hostname")}
    (FIGURES / "run.json").write_text(json.dumps(
        {"main_job_s": round(main_job_s, 1), "tests_s": tests_s and round(tests_s, 1),
         "where": where}, indent=1) + "\n")
    readme = (REPO / "README.md").read_text()
    (REPO / "README.md").write_text(readme.replace(readme_answer(readme), expected_answer()))
    print(f"docs/figures/ and the README's answer rewritten from the run in {results} "
          f"({main_job_s:.0f} s; tests {tests_s or 0:.0f} s)")
    return 0
