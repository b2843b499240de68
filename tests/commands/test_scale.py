"""The aggregation benchmark (rnnbench.commands.scale) stays runnable and prints what a
regression shows in: each stage's time at two sizes and its exponent of growth, and the dry
run against Snakemake's own; its times are reported in notes, not asserted."""

import math
import re

import pytest

from rnnbench.commands import scale


def test_the_benchmark_runs_small(tmp_path):
    (tmp_path / "runs").mkdir()
    paths = scale.write_synthetic(tmp_path / "runs", 50)
    assert len(paths) == 48
    times = scale.time_aggregation(paths, tmp_path)
    assert list(times) == ["load_results", "share_runs", "summarize", "to_csv",
                           "findings_markdown", "total"]
    assert "## Bottom line" in (tmp_path / "FINDINGS.md").read_text()
    assert {path.name for path in tmp_path.glob("*.csv")} == {
        "measurements.csv", "summary.csv", "cumulative_time.csv"}


def test_the_exponent_is_the_growth_between_two_sizes():
    assert scale.exponent((10, 100), (1.0, 10.0)) == pytest.approx(1.0)
    assert scale.exponent((10, 100), (1.0, 100.0)) == pytest.approx(2.0)
    assert scale.exponent((1000, 2000), (2.0, 2.0)) == 0.0
    assert math.isnan(scale.exponent((10, 100), (0.0, 1.0)))


def test_the_command_prints_each_stage_at_two_sizes_and_its_exponent(capsys):
    from rnnbench import cli

    assert cli.main(["scale", "--results", "240", "--cells", "0"]) == 0
    out = capsys.readouterr().out
    assert "aggregation of 24 and 240 results (2 and 20 cells)" in out
    stages = {}
    for line in out.splitlines():
        match = re.fullmatch(r"  (\w+) +([\d.]+) s +([\d.]+) s +(\S+)", line)
        if match:
            stages[match[1]] = tuple(map(float, match.groups()[1:]))
    assert list(stages) == ["load_results", "share_runs", "summarize", "to_csv",
                            "findings_markdown", "total"]
    assert "dry run" not in out  # --cells 0: none
    small, large, growth = stages["total"]
    assert small > 0 and large > 0 and math.isfinite(growth)


def test_the_table_shows_each_stage_at_both_sizes_with_its_exponent():
    lines = scale.scaling_lines((100, 1000), ({"load_results": 1.0, "total": 2.0},
                                              {"load_results": 10.0, "total": 200.0}))
    assert lines[0].split() == ["stage", "100", "results", "1000", "results", "exponent"]
    assert lines[1].split() == ["load_results", "1.00", "s", "10.00", "s", "1.00"]
    assert lines[2].split() == ["total", "2.00", "s", "200.00", "s", "2.00"]


def test_the_command_times_the_dry_runs(capsys, monkeypatch):
    """With --cells, the grid's dry run and Snakemake's of as many trivial jobs (2 x cells x
    repeats) are timed, and their ratio printed."""
    from rnnbench import cli

    asked = {}
    monkeypatch.setattr(scale, "time_dry_run", lambda cells, folder, repeats: asked.update(
        cells=cells, repeats=repeats) or 3.0)
    monkeypatch.setattr(scale, "time_trivial_dry_run", lambda jobs, folder: asked.update(
        jobs=jobs) or 2.0)
    assert cli.main(["scale", "--results", "120", "--cells", "8", "--repeats", "3"]) == 0
    out = capsys.readouterr().out
    assert asked == {"cells": 8, "repeats": 3, "jobs": 48}
    assert "dry run of 8 cells, 3 repeats (48 training jobs): 3.0 s" in out
    assert "Snakemake's dry run of 48 trivial jobs: 2.0 s" in out
    assert "dry run over Snakemake's: 1.50x" in out




def test_the_trivial_dry_run_is_snakemakes_own(tmp_path):
    """Snakemake's dry run of trivial jobs, the dry run's yardstick, runs; the Snakefile plans
    as many jobs as asked (and rule all)."""
    import subprocess
    import sys

    assert scale.time_trivial_dry_run(5, tmp_path) > 0
    summary = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"),
                              "--directory", str(tmp_path), "-n", "--cores", "1"],
                             capture_output=True, text=True, check=True).stdout
    assert re.search(r"^one\s+5$", summary, re.MULTILINE), summary


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_an_interrupted_benchmark_removes_its_temporary_folder(signum, tmp_path, monkeypatch,
                                                               capsys):
    import os
    import signal
    import tempfile
    import time

    from rnnbench import cli

    def stopped(folder, results, repeats=6):
        (folder / "0_static_1.json").write_text("{}")  # a file written before the signal
        os.kill(os.getpid(), getattr(signal, signum))  # as Ctrl-C, or timeout's SIGTERM
        time.sleep(5)  # (the handler raises before)
        raise AssertionError("not interrupted")

    monkeypatch.setattr(scale, "write_synthetic", stopped)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # Ctrl-C's own handler, whatever this process inherited: a shell starts a background
    # job (command &) with SIGINT ignored, and the signal would then never arrive
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        status = cli.main(["scale", "--results", "120", "--cells", "0"])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert status == (130 if signum == "SIGINT" else 143)
    word = "interrupted" if signum == "SIGINT" else "terminated"
    assert capsys.readouterr().err.strip().splitlines() == [f"rnnbench scale: {word}"]
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # restored on leaving
