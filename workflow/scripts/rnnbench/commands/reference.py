"""The reference runs behind every number of the README and docs/.

It runs one (REFERENCE_RUNS) by ``snakemake --cores 1`` in a new temporary folder; results/
is neither reused nor replaced. For main it also runs the tests. Each is timed. With
--no-run, it uses results/ or --results DIR as they are, each run's wall time read from
Snakemake's log beside it; with --results (runs made elsewhere) main times the tests anew,
and no time recorded for other runs is kept.

Then it writes the run's folder under docs/figures/: FINDINGS.md, summary.csv, the charts,
run.json (wall time and where it ran), the runs of WITH_RUNS, the held-out's VALIDATION.md.
It also rewrites the README's answer (rnnbench.report.readme);
tests/commands/test_reference.py holds it to the committed runs.

With --runs N (main: 3 by default), it makes N runs --gap-min minutes apart (20 by default),
each in its own folder. The folder is written from the last. Beside it go runs/run<i>.csv
(each run's summary) and pooled.csv (stats.pooling: the drift between runs in the
intervals); the README's answer reads pooled.csv.

    rnnbench reference [--run main|apis|sweep|map|heldout] [--runs N] [--gap-min M]
                       [--no-run [--results DIR ...]]"""

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

from rnnbench.grid.configfiles import read_config
from rnnbench.grid.layout import IMPLEMENTATIONS, REPO
from rnnbench.pipeline.files import all_or_nothing
from rnnbench.report import machinepage, modelpages as modeldocs
from rnnbench.report.readme import REFERENCE_RUNS, WITH_RUNS, expected_answer, readme_answer
from rnnbench.results.load import check_folders_one_environment, read_table
from rnnbench.pipeline.arguments import count, existing_folder, positive_int

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench reference``'s arguments to ``parser``."""
    parser.add_argument("--run", dest="which", choices=list(REFERENCE_RUNS), default="main",
                        help="main (config.yaml, and the tests; the default), apis (Keras, JAX), "
                             "sweep (max_len x length), map (the cost model's grid), heldout "
                             "(cells the model predicted before they ran)")
    parser.add_argument("--no-run", action="store_true",
                        help="use the results as they are (their wall times from Snakemake's "
                             "logs beside them)")
    parser.add_argument("--results", type=existing_folder, nargs="+", default=None,
                        help="with --no-run: the results folder(s) to use, several to pool "
                             f"(default: {REPO}/results)")
    parser.add_argument("--runs", type=positive_int, default=None,
                        help="how many runs to make and pool (default: 3 for main, else 1)")
    parser.add_argument("--gap-min", type=count, default=20,
                        help="minutes between two runs: runs minutes apart drift less than "
                             "runs an hour apart (docs/method.md, Pooling runs; default: "
                             "%(default)s)")


TESTS = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
"""The README's test command, as the main reference times it."""


def _timed(command: list[str], **kwargs) -> float:
    """Run ``command`` (check=True), return its wall time in seconds."""
    start = time.perf_counter()
    subprocess.run(command, check=True, **kwargs)
    return time.perf_counter() - start


GRID_AXES = ("api", "cell", "batch_size", "max_len", "sequence_length", "num_units",
             "input_dim")
"""The axes a results folder must share with its reference run's config (check_results)."""


def check_results(results: Path, config: Path) -> pd.DataFrame:
    """Check that a results folder is fit to be a reference run of ``config``.

    Its FINDINGS, summary, runs (each once, both implementations of every cell) and charts
    must be there. Its cells must have the config's values of GRID_AXES, and its repeats
    (or repeats + more_repeats). A preset's omitted keys are config.yaml's; the default api
    is compat_v1.

    Args:
        results: the results folder.
        config: the reference run's config file.

    Returns:
        Its runs (measurements.csv).

    Raises:
        ValueError: naming the folder and what is missing or differs.
    """
    from rnnbench.grid.axes import sequence_length_id

    missing = [name for name in ("FINDINGS.md", "summary.csv", "measurements.csv")
               if not (results / name).is_file()]
    if missing:
        raise ValueError(f"--results {results}: no {', '.join(missing)} there (run the "
                         "workflow in it first, or leave out --no-run)")
    runs = read_table(results / "measurements.csv")
    if not {"cell_id", "impl", "repeat"} <= set(runs):
        raise ValueError(f"--results {results}: its measurements.csv has no cell_id, impl, repeat")
    if runs.duplicated(["cell_id", "impl", "repeat"]).any():
        raise ValueError(f"--results {results}: measurements.csv holds a run twice")
    summary = read_table(results / "summary.csv")
    both = set.intersection(*(set(runs[runs["impl"] == i]["cell_id"]) for i in IMPLEMENTATIONS))
    if lacking := sorted(set(summary["cell_id"]) - both):
        raise ValueError(f"--results {results}: measurements.csv lacks runs of both "
                         f"implementations for cell(s) {', '.join(lacking)} of its summary")
    if not any((results / "plots").glob("*.svg")):
        raise ValueError(f"--results {results}: no charts there (plots/*.svg)")
    grid = {"api": ["compat_v1"], **read_config([REPO / "config.yaml", config], REPO,
                                                claims=False)}
    for axis in GRID_AXES:
        want = {sequence_length_id(v) if axis == "sequence_length" else str(v)
                for v in grid[axis]}
        have = {str(v) for v in summary[axis]}
        if have != want:
            raise ValueError(f"--results {results}: {axis} {sorted(have)}, but "
                             f"{config.relative_to(REPO)} asks for {sorted(want)}")
    allowed = {grid["repeats"], grid["repeats"] + grid.get("more_repeats", 0)}
    if not set(summary["static_repeats"]) <= allowed:
        raise ValueError(f"--results {results}: {sorted(set(summary['static_repeats']))} "
                         f"repeats, but {config.relative_to(REPO)} asks for {grid['repeats']}"
                         + (f" (or {max(allowed)} where a second look added more_repeats)"
                            if len(allowed) > 1 else ""))
    return runs


def _write_pooled(figures: Path, folders: list[Path]) -> None:
    """runs/run<i>.csv (each folder's summary.csv) and pooled.csv (stats.pooling) under
    ``figures`` for several runs; for one, remove those of an earlier pooled reference."""
    from rnnbench.stats.pooling import pooled_summary

    shutil.rmtree(figures / "runs", ignore_errors=True)
    (figures / "pooled.csv").unlink(missing_ok=True)
    if len(folders) < 2:
        return
    (figures / "runs").mkdir()
    summaries = [read_table(folder / "summary.csv") for folder in folders]
    for number, folder in enumerate(folders, 1):
        shutil.copy(folder / "summary.csv", figures / "runs" / f"run{number}.csv")
    pooled_summary(summaries).to_csv(figures / "pooled.csv", index=False)


def _drift(which: str, folders: list[Path], tables: list[pd.DataFrame]) -> dict | None:
    """The drift between the main reference's runs (driftpage.drift_tables), None for one run
    or another reference; computed before anything is written.

    Args:
        which: the reference run.
        folders: its results folders.
        tables: their measurements, as check_results read them (one grid, one environment:
            check_folders_one_environment).

    Raises:
        ValueError: naming a folder without its probe (machinepage.peak_probe).
    """
    if which != "main" or len(folders) < 2:
        return None
    from rnnbench.report import driftpage

    probes = [machinepage.peak_probe(folder)[0] for folder in folders]
    return {"tables": driftpage.drift_tables(tables, probes), "runs": tables}


def _write_drift(figures: Path, folders: list[Path], drift: dict | None) -> None:
    """DRIFT.md and drift.csv under ``figures``, and FINDINGS.md's section on them; without
    ``drift``, remove those of an earlier pooled reference."""
    from rnnbench.report import driftpage

    for name in ("DRIFT.md", "drift.csv"):
        (figures / name).unlink(missing_ok=True)
    if drift is None:
        return
    names = [f"run {number}" for number in range(1, len(folders) + 1)]
    driftpage.write(figures, drift["tables"], driftpage.page(
        drift["tables"], names, drift["runs"], by="rnnbench reference --run main"))
    findings = figures / "FINDINGS.md"
    findings.write_text(findings.read_text().rstrip("\n") + "\n\n"
                        + driftpage.findings_section(drift["tables"]) + "\n")


def _write(which: str, folders: list[Path], runs: pd.DataFrame, page: str | None,
           run: dict, drift: dict | None = None) -> None:
    """Write reference run ``which`` from the last of ``folders`` and its ``runs`` (checked):
    its folder (FINDINGS, summary, runs where WITH_RUNS, charts, ``page`` as VALIDATION.md,
    run.json: ``run`` and where it ran; all the folders' summaries pooled, _write_pooled; the
    drift between them, _write_drift), the map's block of docs/presets.md, the README's
    answer."""
    figures = REPO / REFERENCE_RUNS[which][1]
    results = folders[-1]
    figures.mkdir(parents=True, exist_ok=True)
    _write_pooled(figures, folders)
    for old in figures.glob("*.svg"):  # charts of the run it replaces, which this one may lack
        old.unlink()
    for name in ("FINDINGS.md", "summary.csv") + (
            ("measurements.csv",) if which in WITH_RUNS else ()):
        shutil.copy(results / name, figures / name)
    _write_drift(figures, folders, drift)
    if page:
        (figures / "VALIDATION.md").write_text(page)
    for svg in (results / "plots").glob("*.svg"):
        shutil.copy(svg, figures / svg.name)
    first = runs.iloc[0]
    where = {key: first[key].item() if hasattr(first[key], "item") else first[key]
             for key in ("device_name", "cpus", "tensorflow_version",
                         "intra_op_parallelism_threads", "python_version", "hostname")}
    (figures / "run.json").write_text(json.dumps({**run, "where": where}, indent=1) + "\n")
    if which == "probe-map":
        _write_probe_map(figures, results, runs)
    if which == "map":
        presets = REPO / "docs" / "presets.md"
        presets.write_text(modeldocs.replace_block(presets.read_text(), modeldocs.block(
            modeldocs.map_fit(), REPO, where["device_name"])))
    readme = (REPO / "README.md").read_text()
    (REPO / "README.md").write_text(readme.replace(readme_answer(readme), expected_answer()))


def _predict_probe_heldout(figures: Path, config: Path) -> None:
    """Probe this machine and predict the held-out cells of ``config`` from the probe-map's
    coefficients, before any of them runs: figures/probe.json and figures/predicted.csv."""
    from rnnbench.costmodel.machine import (predicted_table, probe_record, read_machine_fits,
                                            read_probe)
    from rnnbench.grid.configcheck import check_files

    figures.mkdir(parents=True, exist_ok=True)
    (figures / "probe.json").write_text(json.dumps(probe_record(1), indent=1) + "\n")
    fits = read_machine_fits(REPO / REFERENCE_RUNS["probe-map"][1] / "machine.json")
    config_values, cells, _ = check_files([config])
    predicted_table(fits, read_probe(figures / "probe.json"), cells,
                    config_values["repeats"]).to_csv(figures / "predicted.csv", index=False)


def _probe_validation(figures: Path, runs: pd.DataFrame) -> str:
    """The probe-heldout's VALIDATION.md: its predictions (made with its probe.json) against
    its runs, beside the probe-map's probe."""
    from rnnbench.costmodel.machine import read_probe

    probe = read_probe(figures / "probe.json")
    the_map = read_probe(REPO / REFERENCE_RUNS["probe-map"][1] / "probe.json")
    return machinepage.validation_page(
        read_table(figures / "predicted.csv"), runs, probe["environment"],
        {"the map's (its run's, rule peak)": the_map, "predicted with (before this run)": probe})


def _write_probe_map(figures: Path, results: Path, runs: pd.DataFrame) -> None:
    """The probe-map's own files: the run's probe (probe.json), the coefficients fitted to its
    runs (machine.json, which predict --probe reads) and MODEL.md."""
    from rnnbench.costmodel.machine import fit_machine, write_machine_fits

    probe, path = machinepage.peak_probe(results)
    shutil.copy(path, figures / "probe.json")
    fits = fit_machine(runs, probe)
    kept = {impl: fit.n for impl, fit in fits["step"].items()}
    write_machine_fits(fits, figures / "machine.json", {"about": {
        "environment": sorted(set(runs["environment"]))[0], "runs": sum(kept.values()),
        "probe": "probe.json"}})
    (figures / "MODEL.md").write_text(machinepage.model_page(runs, probe, fits))


def _logged_timings(folders: list[Path]) -> list[dict] | None:
    """Each results folder's run, as _run_each times it, read back from Snakemake's log of it
    (``.snakemake/log/<start>.snakemake.log`` beside the folder, its "Elapsed time"); None
    where a folder has no such log."""
    import datetime

    timings = []
    for results in folders:
        logs = sorted((results.parent / ".snakemake" / "log").glob("*.snakemake.log"))
        lines = [line for line in (logs[-1].read_text(errors="replace").splitlines()
                                   if logs else []) if line.startswith("Elapsed time: ")]
        if not lines:
            return None
        hours, minutes, seconds = lines[-1].split(": ", 1)[1].split(":")
        started = datetime.datetime.strptime(logs[-1].name.split(".snakemake")[0],
                                             "%Y-%m-%dT%H%M%S.%f")  # Snakemake's local time
        timings.append({"workflow_s": round(3600 * int(hours) + 60 * int(minutes)
                                            + float(seconds), 1),
                        "started_unix_s": round(started.timestamp())})
    return timings


def _run_each(which: str, runs: int, gap_min: float) -> tuple[list[Path], list[dict]]:
    """``runs`` fresh runs of ``which``, ``gap_min`` minutes apart, each by ``snakemake
    --cores 1`` in a new temporary folder; their results folders and (wall seconds, start)."""
    config = REFERENCE_RUNS[which][0]
    folders, timings = [], []
    for number in range(runs):
        if number:
            print(f"rnnbench reference: {gap_min:g} min until run {number + 1} of {runs}",
                  flush=True)
            time.sleep(60 * gap_min)
        workdir = Path(tempfile.mkdtemp(prefix=f"rnnbench-reference-{which}-"))
        shutil.copy(REPO / config, workdir / "config.yaml")
        started = time.time()
        job_s = _timed([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                        "--directory", str(workdir), "--cores", "1"])
        folders.append(workdir / "results")
        timings.append({"workflow_s": round(job_s, 1), "started_unix_s": round(started)})
    return folders, timings


def _checked_tables(folders: list[Path], config: str) -> list[pd.DataFrame]:
    """Each folder's runs (check_results), all of one environment."""
    tables = [check_results(results, REPO / config) for results in folders]
    check_folders_one_environment(tables, folders, "pooled")
    return tables


def _refuse(error: Exception, folders: list[Path]) -> int:
    """Print why nothing was written (a KeyError: a column the last folder lacks); status 2."""
    words = error if isinstance(error, ValueError) else f"--results {folders[-1]}: no {error}"
    print(f"rnnbench reference: {words} (nothing written)", file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench reference``: make or take a reference run, write its folder and answer.

    It runs (or, with --no-run, takes) one reference run (REFERENCE_RUNS), or several
    pooled. It writes its folder under docs/figures/ and rewrites the README's answer, all
    or nothing.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 2 with a one-line message (nothing written).
    """
    config, folder = REFERENCE_RUNS[args.which]
    figures = REPO / folder
    runs_made = args.runs if args.runs is not None else (
        3 if args.which == "main" and not args.no_run else 1)
    if args.results and not args.no_run:
        print(f"rnnbench reference: --results {args.results[0]} needs --no-run (a run without "
              "it is a fresh one, in a folder of its own)", file=sys.stderr)
        return 2
    if args.which == "heldout" and not (figures / "predicted.csv").exists():
        figures.mkdir(parents=True, exist_ok=True)  # the predictions, before any run
        modeldocs.write_predictions(figures / "predicted.csv")
    if args.which == "probe-heldout" and not (figures / "predicted.csv").exists():
        _predict_probe_heldout(figures, REPO / config)
    before = json.loads((figures / "run.json").read_text()) if (
        figures / "run.json").exists() else {}
    folders, tables = args.results or [REPO / "results"], None
    try:
        if args.no_run:  # the runs' own times where Snakemake logged them, never another run's
            tables = _checked_tables(folders, config)  # before the tests: a bad folder is cheap
            timings = _logged_timings(folders)
            job_s = max(t["workflow_s"] for t in timings) if timings else (
                None if args.results else before.get("workflow_s"))
            tests_s = before.get("tests_s") if not args.results else (
                _timed(TESTS, cwd=REPO) if args.which == "main" else None)
        else:  # fresh runs, in folders of their own: results/ is neither reused nor replaced
            folders, timings = _run_each(args.which, runs_made, args.gap_min)
            job_s = max(t["workflow_s"] for t in timings)
            tests_s = _timed(TESTS, cwd=REPO) if args.which == "main" else None
    except subprocess.CalledProcessError as error:  # a run or the tests failed
        print(f"rnnbench reference: `{' '.join(map(str, error.cmd[2:]))}` ended with status "
              f"{error.returncode} (nothing written; its output is above)", file=sys.stderr)
        return 1
    except (ValueError, KeyError) as error:
        return _refuse(error, folders)
    try:  # checked before anything is written, then all or nothing: never half replaced
        tables = tables or _checked_tables(folders, config)
        runs = tables[-1]
        validation = (modeldocs.validation_page(runs) if args.which == "heldout" else
                      _probe_validation(figures, runs)
                      if args.which == "probe-heldout" else None)
        drift = _drift(args.which, folders, tables)
        with all_or_nothing([figures, REPO / "README.md", REPO / "docs" / "presets.md"]):
            _write(args.which, folders, runs, validation, {
                "config": config, "workflow_s": job_s and round(job_s, 1),
                "tests_s": tests_s and round(tests_s, 1),
                **({"runs": timings} if timings and len(timings) > 1 else {})}, drift)
    except (ValueError, KeyError) as error:
        return _refuse(error, folders)
    print(f"{folder}/ and the README's answer rewritten from {len(folders)} run(s), the last in "
          f"{folders[-1]} ({job_s or 0:.0f} s; tests {tests_s or 0:.0f} s)")
    return 0
