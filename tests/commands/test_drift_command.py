"""rnnbench drift: how far runs of one grid moved, and what explains it, from their folders."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO
from rnnbench import cli

HELDOUT = REPO / "docs" / "figures" / "probe-heldout"


def a_run(folder, scale=1.0, probe=HELDOUT / "probe.json", environment=None):
    """A results folder: the committed held-out run, its dynamic_rnn steps times ``scale``,
    with ``probe`` as its rule peak's."""
    runs = pd.read_csv(HELDOUT / "measurements.csv")
    runs["median_step_s"] = runs["median_step_s"].where(runs["impl"] != "dynamic",
                                                        runs["median_step_s"] * scale)
    if environment:
        runs["environment"] = environment
    runs["job_start_unix_s"] += sum(map(ord, folder.name)) * 1000  # another run: other times
    runs["setup_s"] *= 1 + 1e-9 * sum(map(ord, folder.name))  # never equal to the last digit
    protocol = folder / "runs" / Path(runs["path"].iloc[0]).parents[2].name  # the runs' own
    protocol.mkdir(parents=True)
    runs.to_csv(folder / "measurements.csv", index=False)
    record = json.loads(probe.read_text())
    shutil.copy(probe, protocol / "peak_intra1_tf2.21.json")
    return folder, record


def test_drift_says_how_far_the_runs_moved_and_what_their_probes_explain(tmp_path, capsys):
    first, _ = a_run(tmp_path / "one")
    second, _ = a_run(tmp_path / "two", scale=1.1)
    assert cli.main(["drift", str(first), str(second), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "# Drift between 2 runs" in out and "## dynamic_rnn's step" in out
    table = pd.read_csv(tmp_path / "out" / "drift.csv").set_index(["impl", "measure"])
    # dynamic's steps moved 10 % (each run 4.8 % off their mean); the same probe moved nothing
    assert table.loc[("dynamic", "probe"), "drift_sd"] == pytest.approx(0.0953 / 2 ** 0.5,
                                                                         rel=0.01)
    assert table.loc[("dynamic", "probe"), "share"] == pytest.approx(0.0, abs=1e-9)
    assert table.loc[("static", "probe"), "drift_sd"] == pytest.approx(0.0, abs=1e-12)
    assert (tmp_path / "out" / "DRIFT.md").read_text().startswith("# Drift between 2 runs")


def test_runs_of_different_environments_are_refused(tmp_path, capsys):
    first, _ = a_run(tmp_path / "one")
    second, _ = a_run(tmp_path / "two", environment="Another CPU")
    assert cli.main(["drift", str(first), str(second)]) == 2
    assert "runs of different environments are never compared" in capsys.readouterr().err


def test_a_folder_given_twice_is_refused(tmp_path, capsys):
    first, _ = a_run(tmp_path / "one")
    second, _ = a_run(tmp_path / "two")
    assert cli.main(["drift", str(first), str(second), str(tmp_path / "one" / ".")]) == 2
    assert capsys.readouterr().err == (f"rnnbench drift: {tmp_path / 'one' / '.'} given twice: "
                                       "one run's drift against itself is none; give each run's "
                                       "folder once\n")


def test_a_copy_of_a_run_and_runs_without_static_cells_are_refused(tmp_path, capsys):
    first, _ = a_run(tmp_path / "one")
    shutil.copytree(first, tmp_path / "copy")
    assert cli.main(["drift", str(first), str(tmp_path / "copy")]) == 2
    assert capsys.readouterr().err == (f"rnnbench drift: {tmp_path / 'copy'} holds the same runs "
                                       f"as {first} (the same times to the last digit: a copy?): "
                                       "give each run's folder once\n")
    # a copy in part: some of its runs measured again (compare refused it; drift did not)
    part = pd.read_csv(tmp_path / "copy" / "measurements.csv")
    part.loc[:4, "setup_s"] *= 1.1
    part.to_csv(tmp_path / "copy" / "measurements.csv", index=False)
    assert cli.main(["drift", str(first), str(tmp_path / "copy")]) == 2
    assert (f"{tmp_path / 'copy'} holds {len(part) - 5} of the same runs as {first}"
            in capsys.readouterr().err)
    second, _ = a_run(tmp_path / "two")
    for folder in (first, second):  # every static run flagged busy: no static cell is left
        runs = pd.read_csv(folder / "measurements.csv")
        runs["busy"] = runs["impl"] == "static"
        runs.to_csv(folder / "measurements.csv", index=False)
    assert cli.main(["drift", str(first), str(second)]) == 2
    assert "not busy) with static runs that every run holds" in capsys.readouterr().err


def test_the_probe_is_the_one_of_the_run_the_table_holds(tmp_path, capsys):
    """A results folder keeps an earlier protocol's runs and probe (runs/<protocol>/): its
    table's run gives the probe; two probes for that one run are refused, naming each."""
    first, _ = a_run(tmp_path / "one")
    second, _ = a_run(tmp_path / "two", scale=1.1)
    earlier = first / "runs" / "cpu_n32_steps5-0.0s_warmup2-2_hooks100_seed0"
    earlier.mkdir()
    shutil.copy(HELDOUT / "probe.json", earlier / "peak_intra1_tf2.21.json")
    assert cli.main(["drift", str(first), str(second)]) == 0
    capsys.readouterr()
    mine = next(path for path in (first / "runs").iterdir() if path != earlier)
    shutil.copy(HELDOUT / "probe.json", mine / "peak_intra2_tf2.21.json")
    assert cli.main(["drift", str(first), str(second)]) == 2
    assert capsys.readouterr().err.startswith(
        f"rnnbench drift: {first}: 2 probes, need exactly 1 (one run's): {mine}/peak_intra1")
