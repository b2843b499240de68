"""Aggregation at scale: how long reading, summarising and writing FINDINGS takes.

It times this on many synthetic records (synthetic_result). It also times a dry run of a
large grid against Snakemake's own dry run of as many trivial jobs.

    rnnbench scale [--results 100000] [--cells 1000] [--repeats 6]

It writes the results into a temporary folder (not timed). Then it times, each in this
process, for the first tenth of them and for all of them: load_results, share_runs,
summarize, writing the three tables (to_csv), and findings_markdown. It prints each stage's
seconds at both sizes and the exponent of its growth between them (log(t2 / t1) /
log(n2 / n1): 1 is linear).

Then it times ``snakemake -n`` of a grid of ``--cells`` cells (batch_size x max_len x
num_units, --repeats repeats) in another temporary folder. It times the same for a Snakefile
of as many trivial jobs as the grid has training jobs, and prints the ratio of the two.

Prints the times (seconds); asserts nothing (tests/commands/test_scale.py runs it small, to
keep it working). Writes nothing outside its temporary folders.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rnnbench.grid.axes import ABLATION_DEFAULTS
from rnnbench.grid.cells import cell_id
from rnnbench.grid.axes import DEFAULT_TF_VERSION
from rnnbench.measure.record import SCHEMA_VERSION
from rnnbench.grid.layout import REPO
from rnnbench.jobs.interrupt import sigterm_as_interrupt
from rnnbench.pipeline.arguments import at_least, positive_int

MAX_RESULTS = 10**6
"""The most synthetic results --results takes (each file about 4 kB in a temporary folder)."""
MAX_CELLS = 10**5
"""The most cells --cells takes (12 training jobs a cell in the dry run at 6 repeats)."""
SYNTHETIC_PROTOCOL = {"steps": 500, "min_measure_s": 1.0, "warmup_steps": 40,
                      "max_warmup_steps": 500, "hook_every": 100, "device": "cpu", "seed": 0,
                      "log_every": 100, "grappler_alone": False}
"""The protocol a synthetic result records by default (the shipped config's)."""


def synthetic_result(impl: str = "static", cell_id: str = "c1", repeat: int = 1,
                     max_len: int = 10, sequence_length=5, setup=(1.0, 0.5, 2.0),
                     step_s=(0.01, 0.01, 0.01), api: str = "compat_v1",
                     tf_version: str = DEFAULT_TF_VERSION, protocol: dict | None = None,
                     **ablations) -> dict:
    """Make a schema-valid result record (result.schema.yaml) with chosen timings.

    For tests of the aggregation, and for this module's benchmark. The cell is [batch 4,
    max_len, input_dim 3] basic_lstm(8). Every field not set here holds a plausible constant.

    Args:
        impl: "static" or "dynamic".
        cell_id: the record's cell id.
        repeat: the repeat number.
        max_len: the cell's max_len.
        sequence_length: the cell's sequence_length (an int, or e.g. "full").
        setup: (graph construction, initialisation, first step), seconds.
        step_s: the measured steps' seconds.
        api: the cell's api.
        tf_version: the cell's TensorFlow major.minor.
        protocol: the run's protocol; default SYNTHETIC_PROTOCOL.
        **ablations: grid axes away from axes.ABLATION_DEFAULTS.

    Returns:
        The record, a JSON-ready dict.
    """
    construction, init, first = setup
    step_s = list(step_s)
    median = sorted(step_s)[len(step_s) // 2]
    threads = {key: ablations.get(key, ABLATION_DEFAULTS[key])
               for key in ("intra_op_parallelism_threads", "inter_op_parallelism_threads")}
    return {
        "schema_version": SCHEMA_VERSION, "impl": impl, "cell_id": cell_id, "repeat": repeat,
        "job_threads": max(threads.values()),
        "cell": {"cell": "basic_lstm", "batch_size": 4, "max_len": max_len,
                 "sequence_length": sequence_length, "num_units": 8, "input_dim": 3,
                 "api": api, "tf_version": tf_version, **ABLATION_DEFAULTS, **ablations,
                 "dataset": "d"},
        "protocol": {**(protocol or SYNTHETIC_PROTOCOL), "fetches": ["train_op", "loss"],
                     "hook_fetches": ["train_op", "loss"], "parallel_iterations": 4},
        "timings": {"graph_construction_s": construction, "init_s": init,
                    "first_step_s": first, "optimisation_s": 0.75 * first,
                    "warmup_step_s": [0.02], "warmup_settled": None, "step_s": step_s,
                    "hook_steps": [],
                    "median_step_s": median, "mean_step_s": sum(step_s) / len(step_s),
                    "steps_per_s": 1 / median,
                    "step_iqr_over_median": 0.0, "block_spread": None},
        "noise": {"load_average_before": [0.5, 0.4, 0.3], "load_average_after": [1.0, 0.5, 0.3],
                  "steal_share": 0.0, "cpu_governor": None, "cpu_mhz_before": 2600.0,
                  "cpu_mhz_after": 2600.0},
        "graph": {"node_count": 100, "function_node_count": 10, "graphdef_bytes": 1000,
                  "optimised_node_count": 120},
        "work": {"time_steps_per_step": float(sequence_length if isinstance(sequence_length, int)
                                              else max_len),
                 "train_step_flop": 1e6},
        "memory": {"peak_rss_mb": 500.0},
        "loss": {"first": 2.0, "last": 1.9},
        "initial_weights_sha256": "0" * 64,
        "data": {"path": "d.npz", "sha256": "1" * 64},
        "metadata": {
            "tf_version": f"{tf_version}.0", "keras_version": None, "tf_git_version": "v",
            "is_cuda_build": False,
            "cuda_version": None, "cudnn_version": None, "gpus_visible": [], "device": "cpu",
            "device_name": "cpu", "python_version": "3.11", "python_prefix": "/venv",
            "numpy_version": "2", "cpu_model": "cpu", "cpu_count": 2, "hostname": "h",
            "utc_time": "2026-01-01T00:00:00+00:00", "git": {"commit": None, "dirty": None},
            **threads,
            "slurm_job_id": None, "slurm_job_partition": None, "cuda_visible_devices": None,
            "apptainer_container": None, "tensorflow_path": "/venv/tensorflow",
            "gpu_driver": None, "image_sha256": None,
        },
    }


def write_synthetic(folder: Path, results: int, repeats: int = 6) -> list[Path]:
    """Write about ``results`` synthetic result files in ``folder``, in whole cells.

    Args:
        folder: where the files go.
        results: how many files, rounded down to a multiple of 2 x repeats.
        repeats: the static and the dynamic runs per cell.

    Returns:
        The files' paths. results // (2 x repeats) cells (max_len 10, 11, ...), each with
        ``repeats`` static and dynamic runs whose steps differ by repeat (so that intervals
        are not points).
    """
    paths = []
    for cell in range(results // (2 * repeats)):
        for impl in ("static", "dynamic"):
            for repeat in range(1, repeats + 1):
                step = (0.010 if impl == "static" else 0.012) * (1 + 0.01 * repeat)
                record = synthetic_result(impl, "", repeat, max_len=10 + cell, step_s=(step,) * 3)
                record["cell_id"] = cell_id(record["cell"])
                paths.append(folder / f"{cell}_{impl}_{repeat}.json")
                paths[-1].write_text(json.dumps(record))
    return paths


def time_aggregation(paths: list[Path], out: Path) -> dict[str, float]:
    """Time each step of rules aggregate and findings for the result files ``paths``.

    Args:
        paths: result files.
        out: where the tables and FINDINGS.md are written.

    Returns:
        Stage -> seconds: load_results, share_runs, summarize, to_csv, findings_markdown,
        and total.
    """
    from rnnbench.grid.configcheck import schema_defaults
    from rnnbench.report.findings import findings_markdown
    from rnnbench.results.load import load_results, share_runs
    from rnnbench.stats.summary import summarize, write_cumulative_time

    times, start = {}, time.perf_counter()

    def lap(name: str) -> None:
        nonlocal start
        times[name] = time.perf_counter() - start
        start = time.perf_counter()

    runs = load_results(paths)
    lap("load_results")
    runs = share_runs(runs, {})
    lap("share_runs")
    summary = summarize(runs)
    lap("summarize")
    for name, table in (("measurements", runs), ("summary", summary)):
        table.to_csv(out / f"{name}.csv", index=False)
    write_cumulative_time(summary, out / "cumulative_time.csv")
    lap("to_csv")
    claims = [{"id": "steps", "seed": "synthetic", "statement": "static steps are faster",
               "quantity": "median_step_s", "direction": "static < dynamic", "figure": 0.27}]
    (out / "FINDINGS.md").write_text(findings_markdown(summary, runs, claims, {
        "repeats": 6, "margin": schema_defaults()["margin"], **SYNTHETIC_PROTOCOL}))
    lap("findings_markdown")
    times["total"] = sum(times.values())
    return times


def time_dry_run(cells: int, folder: Path, repeats: int = 6) -> float:
    """Time ``snakemake -n --cores 1`` of a grid of about ``cells`` cells.

    Args:
        cells: the grid's cells, about: batch_size x max_len x num_units, each axis of
            round(cube root) values.
        folder: the folder the dry run runs in; its config.yaml is written.
        repeats: the grid's repeats (config.yaml's 6: 2 x 6 training jobs a cell).

    Returns:
        Seconds.

    Raises:
        subprocess.CalledProcessError: where Snakemake fails.
    """
    side = round(cells ** (1 / 3))
    config = {"cell": ["basic_lstm"], "batch_size": list(range(1, side + 1)),
              "max_len": list(range(2, side + 2)), "sequence_length": [2],
              "num_units": list(range(1, side + 1)), "input_dim": [4], "repeats": repeats,
              "num_samples": 32}
    (folder / "config.yaml").write_text(json.dumps(config))
    return _snakemake_dry_run(REPO / "Snakefile", folder)


TRIVIAL_SNAKEFILE = """rule all:
    input:
        expand("out/{{job}}.txt", job=range({jobs})),


rule one:
    output:
        "out/{{job}}.txt",
    shell:
        "touch {{output}}"
"""
"""A Snakefile of ``jobs`` trivial jobs (and rule all): Snakemake's own cost of a dry run."""


def time_trivial_dry_run(jobs: int, folder: Path) -> float:
    """Time ``snakemake -n --cores 1`` of ``jobs`` trivial jobs (TRIVIAL_SNAKEFILE).

    That is what a dry run of as many jobs costs Snakemake itself.

    Args:
        jobs: how many trivial jobs.
        folder: the folder the dry run runs in; its Snakefile is written.

    Returns:
        Seconds.

    Raises:
        subprocess.CalledProcessError: where Snakemake fails.
    """
    snakefile = folder / "Snakefile"
    snakefile.write_text(TRIVIAL_SNAKEFILE.format(jobs=jobs))
    return _snakemake_dry_run(snakefile, folder)


def _snakemake_dry_run(snakefile: Path, folder: Path) -> float:
    """Seconds of ``snakemake -n --cores 1 --quiet`` of ``snakefile`` in ``folder``.

    Raises:
        subprocess.CalledProcessError: where Snakemake fails.
    """
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", "-s", str(snakefile),
                    "--directory", str(folder), "-n", "--cores", "1", "--quiet"], check=True,
                   capture_output=True)
    return time.perf_counter() - start


def exponent(sizes: tuple[int, int], seconds: tuple[float, float]) -> float:
    """Compute how a time grows with the size between two sizes.

    Args:
        sizes: (n1, n2).
        seconds: (t1, t2).

    Returns:
        log(t2 / t1) / log(n2 / n1) (1: linear, 2: quadratic); NaN where a time is not
        positive or the sizes are equal.
    """
    (n1, n2), (t1, t2) = sizes, seconds
    if min(t1, t2) <= 0 or n1 == n2:
        return math.nan
    return math.log(t2 / t1) / math.log(n2 / n1)


def scaling_lines(sizes: tuple[int, int], times: tuple[dict[str, float], dict[str, float]],
                  ) -> list[str]:
    """Write the benchmark's table of stages.

    Args:
        sizes: the two sizes, results.
        times: time_aggregation's result at each size.

    Returns:
        A header line, then one line per stage: its seconds at both sizes and its exponent.
    """
    small, large = times
    lines = [f"  {'stage':<18} {sizes[0]:>9} results {sizes[1]:>9} results  exponent"]
    for name in large:
        lines.append(f"  {name:<18} {small[name]:>15.2f} s {large[name]:>15.2f} s  "
                     f"{exponent(sizes, (small[name], large[name])):8.2f}")
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench scale``'s arguments to ``parser``."""
    parser.add_argument("--results", type=at_least(
                            120, " (ten cells: a tenth is one cell of 6 static and 6 dynamic "
                            "runs)", MAX_RESULTS, " (each a file of about 4 kB in a temporary "
                            "folder)"),
                        default=100_000,
                        help="synthetic results to aggregate; a tenth of them is timed too "
                             "(default: %(default)s)")
    parser.add_argument("--cells", type=at_least(0, maximum=MAX_CELLS, over=" (a dry run of "
                                                 "12 training jobs a cell)"), default=1000,
                        help="the dry run's cells (0: no dry run; default: %(default)s)")
    parser.add_argument("--repeats", type=positive_int, default=6,
                        help="the dry run's repeats (2 x repeats training jobs a cell)")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench scale``: time the aggregation and the dry runs, and print the times.

    The aggregation is timed at a tenth of ``--results`` and at all of them.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status, 0.

    Raises:
        KeyboardInterrupt: on Ctrl-C or SIGTERM, once the temporary folder is removed.
    """
    with sigterm_as_interrupt(), tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "runs").mkdir()
        paths = write_synthetic(folder / "runs", args.results)
        tenth = paths[:len(paths) // 10 // 12 * 12]
        times = []
        for part in (tenth, paths):
            out = folder / f"tables{len(part)}"
            out.mkdir()
            times.append(time_aggregation(part, out))
        sizes = (len(tenth), len(paths))
        print(f"aggregation of {sizes[0]} and {sizes[1]} results ({sizes[0] // 12} and "
              f"{sizes[1] // 12} cells), seconds and exponent of growth:")
        print("\n".join(scaling_lines(sizes, tuple(times))))
        if args.cells:
            for name in ("dry", "trivial"):
                (folder / name).mkdir()
            cells = round(args.cells ** (1 / 3)) ** 3
            jobs = 2 * cells * args.repeats
            ours = time_dry_run(args.cells, folder / "dry", args.repeats)
            theirs = time_trivial_dry_run(jobs, folder / "trivial")
            print(f"dry run of {cells} cells, {args.repeats} repeats ({jobs} training jobs): "
                  f"{ours:.1f} s")
            print(f"Snakemake's dry run of {jobs} trivial jobs: {theirs:.1f} s")
            print(f"dry run over Snakemake's: {ours / theirs:.2f}x")
    return 0
