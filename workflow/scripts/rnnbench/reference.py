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
from rnnbench.formats import breakeven_text, column_interval
from rnnbench.load import read_table
from rnnbench.tables import claim_table, gap_share, verdict

REPO = Path(__file__).resolve().parents[3]
FIGURES = REPO / "docs" / "figures"
ANSWER_BEGIN = "<!-- answer: written by rnnbench reference -->"
ANSWER_END = "<!-- answer end -->"


def _ratio(cell: pd.Series, metric: str) -> str:
    return column_interval(cell, f"ratio_{metric}")


def shape_words(cell: pd.Series) -> str:
    """A cell's shape in words: 'a basic_lstm of 32 units, batch 32, 16 inputs, padded to
    max_len 24'."""
    return (f"a {cell['cell']} of {int(cell['num_units'])} units, batch "
            f"{int(cell['batch_size'])}, {int(cell['input_dim'])} inputs, padded to max_len "
            f"{int(cell['max_len'])}")


def _length_words(cell: pd.Series, clause: bool = False) -> str:
    """A cell's sequence lengths in words: 'sequences that fill max_len' ('sequences fill
    max_len' as a ``clause``), 'sequences of 2 of 24 steps' ('sequences are 2 of 24 steps
    long')."""
    value = str(cell["sequence_length"])
    if value == "full":
        return "sequences fill max_len" if clause else "sequences that fill max_len"
    length = value[1:].replace("-", " to ") if value.startswith("u") else value
    return (f"sequences are {length} of {int(cell['max_len'])} steps long" if clause
            else f"sequences of {length} of {int(cell['max_len'])} steps")


def _step_ms(cell: pd.Series) -> str:
    """The two median steps in ms: '2.6 against 3.3 ms'."""
    return (f"{1e3 * cell['static_median_step_s']:.2g} against "
            f"{1e3 * cell['dynamic_median_step_s']:.2g} ms")


def _breakeven_seconds(cell: pd.Series) -> float:
    """Seconds of training (setup included) at the break-even: dynamic's setup plus the
    break-even steps at dynamic's median step, where both lines meet."""
    return cell["dynamic_setup_s"] + cell["breakeven_steps"] * cell["dynamic_median_step_s"]


def _cause_sentences(summary: pd.DataFrame, claims: list[dict]) -> list[str]:
    """The cause the grid isolates, in two sentences: an ablation cell whose step verdict (on
    the first step claim with a seed figure) differs from its reference's, both conclusive,
    and its share of the log-ratio distance to that figure (tables.gap_share)."""
    table = claim_table(summary, [c for c in claims if c["quantity"] == "median_step_s"
                                  and c.get("figure") is not None][:1])
    sentences = []
    for _, twin in table[~table["reference"]].iterrows():
        ref = table[table["cell_id"] == twin["base_cell_id"]].iloc[0]
        if twin["verdict"] == ref["verdict"] or "inconclusive" in (twin["verdict"],
                                                                     ref["verdict"]):
            continue
        cell = summary.set_index("cell_id").loc[twin["cell_id"]]
        share = 100 * gap_share(twin["ratio"], ref["ratio"], twin["figure"])
        sentences += [
            f"Why the blog post found static faster: up to TensorFlow 1.5, {twin['ablations']}."
            f" Measured so, static's steps take {_ratio(cell, 'median_step_s')} of dynamic's.",
            f"That old loop closes {share:.0f} % of the distance, on a log scale, between our "
            f"{ref['ratio']:.2f} and the post's own {twin['figure']:.2f} (its GPU, TF 1.x)."]
    return sentences


def answer(summary: pd.DataFrame, measurements: pd.DataFrame, claims: list[dict],
           main_job_s: float, tests_s: float | None = None) -> str:
    """The README's answer, in short sentences (each under about 35 words), from the reference
    run's tables: the choice as a recommendation; the machine and the shape in words; static /
    dynamic setup; per reference cell (compat_v1, no ablation) the step ratio with its 95 %
    interval and the break-even in steps and seconds; peak memory in MiB; the cause the grid
    isolates (_cause_sentences); then the two commands with the measured times.

    Args:
        summary: docs/figures/summary.csv (summary.summarize).
        measurements: the first rows of results/measurements.csv, for where it ran
            (device_name, tensorflow_version, threads, python_version).
        claims: the config's claims.
        main_job_s: the main job's wall time, seconds.
        tests_s: the test suite's wall time, seconds (None: not measured).
    """
    plain = summary[(summary["api"] == "compat_v1") & (summary["ablations"] == "")]
    run = measurements.iloc[0]
    faster = [cell for _, cell in plain.iterrows()
              if verdict("static < dynamic", cell["ratio_median_step_s_ci_low"],
                         cell["ratio_median_step_s_ci_high"]) == "holds"
              and not pd.isna(cell["breakeven_steps"])]
    choice = "**Use dynamic_rnn"
    if faster:
        best = min(faster, key=lambda cell: cell["breakeven_steps"])
        choice += (f", unless your {_length_words(best, clause=True)} and you train past about "
                   f"{int(best['breakeven_steps'])} steps: then static_rnn is faster overall.**")
    else:
        choice += ": static_rnn's unrolled graph never paid back its setup here.**"
    setups = plain["ratio_setup_s"]
    sentences = [
        choice,
        f"Measured on {run['device_name']} ({int(run['cpus'])} cores, TensorFlow "
        f"{run['tensorflow_version']}, {int(run['intra_op_parallelism_threads'])} thread) for "
        f"{shape_words(plain.iloc[0])}; {int(plain['static_repeats'].iloc[0])} fresh processes "
        "per setting, 95 % intervals in brackets.",
        "static_rnn takes "
        + (f"{setups.min():.1f} to {setups.max():.1f}" if len(plain) > 1
           else f"{setups.iloc[0]:.1f}")
        + f" times as long to set up ({plain['static_setup_s'].mean():.1f} s against "
        f"{plain['dynamic_setup_s'].mean():.2f} s).",
    ]
    for _, cell in plain.iterrows():
        ratio = _ratio(cell, "median_step_s")
        if pd.isna(cell["breakeven_steps"]):
            sentences.append(f"With {_length_words(cell)}, each static step takes {ratio} "
                             f"times dynamic's ({_step_ms(cell)}): static never catches up.")
        else:
            sentences.append(
                f"With {_length_words(cell)}, static's steps take {ratio} of dynamic's "
                f"({_step_ms(cell)}): it "
                f"catches up after {breakeven_text(cell)} steps, about "
                f"{_breakeven_seconds(cell):.0f} s of training here.")
    sentences.append(
        f"static_rnn needs {plain['ratio_peak_rss_mb'].max():.2f} times the memory "
        f"({plain['static_peak_rss_mb'].max():.0f} MiB against "
        f"{plain['dynamic_peak_rss_mb'].max():.0f} MiB at peak).")
    sentences += _cause_sentences(summary, claims)
    return (ANSWER_BEGIN + "\n" + "\n".join(sentences) + "\n\n"
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
