"""The reproducibility benchmark's comparison (rnnbench.commands.reproduce) on hand-made verdicts; the
benchmark itself runs the main job twice (minutes) and is not a test."""

import pandas as pd
import pytest
import yaml

from rnnbench import cli
from rnnbench.commands import reproduce


def claims(rows):
    return pd.DataFrame(rows, columns=["claim", "cell_id", "quantity", "ratio", "ci_low",
                                       "ci_high", "decision", "verdict"]).assign(repeats=6)


FIRST = claims([
    ("start", "c1", "setup_s", 7.0, 6.5, 7.5, "above", "holds"),
    ("steps", "c1", "median_step_s", 1.20, 1.11, 1.30, "above", "does not hold"),
    ("speed", "c1", "median_step_s", 1.20, 1.11, 1.30, "above", "holds"),
    ("steps", "c2", "median_step_s", 0.95, 0.85, 1.05, "undecided", "inconclusive"),
])


def test_identical_runs_meet_every_target():
    table = reproduce.compare(FIRST, FIRST)
    assert table["same"].all() and not table["contradictory"].any()
    assert table["covers_1"].all() and table["covers_2"].all()
    assert all(reproduce.targets(table).values())
    text = reproduce.report(table, [200.0, 210.0])
    assert "Identical decisions: 4 of 4; contradictory: 0" in text
    assert "- no contradictory decision: met" in text
    assert (table["drift_share"] == 0).all()  # the same estimates: no drift between them
    assert "the drift between the runs is a median 0% of a run's variance" in text
    assert "- every setup and memory decision identical: met\n" in text
    steps = FIRST[FIRST["quantity"] == "median_step_s"]  # no setup claim: nothing to compare
    text = reproduce.report(reproduce.compare(steps, steps), [200.0, 210.0])
    assert ("- every setup and memory decision identical: met (no such decision to compare)"
            in text)


def test_a_contradiction_and_a_changed_setup_verdict_fail_their_targets():
    second = FIRST.copy()
    second.loc[1, ["ratio", "ci_low", "ci_high", "decision", "verdict"]] = [
        0.8, 0.75, 0.85, "below", "holds"]
    second.loc[0, ["ratio", "ci_low", "ci_high", "decision", "verdict"]] = [
        1.1, 0.9, 1.3, "undecided", "inconclusive"]
    # no practical difference where the other run says larger: changed, not contradictory
    second.loc[2, ["ratio", "ci_low", "ci_high", "decision", "verdict"]] = [
        1.0, 0.95, 1.05, "within", "does not hold"]
    table = reproduce.compare(FIRST, second).set_index(["claim", "cell_id"])
    assert table.loc[("steps", "c1"), "contradictory"]
    assert not table.loc[("start", "c1"), "contradictory"]  # above vs undecided: no
    assert not table.loc[("speed", "c1"), "contradictory"]
    assert not table.loc[("speed", "c1"), "same"]
    assert not table.loc[("steps", "c1"), "covers_1"]  # 1.11-1.30 misses 0.8
    # 1.20 and 0.80, each run's interval about 0.1 wide: most of the variance is drift
    assert table.loc[("steps", "c1"), "drift_share"] > 0.8
    met = reproduce.targets(table.reset_index())
    assert met == {"no contradictory decision": False,
                   "at least 90% of decisions identical": False,
                   "every setup and memory decision identical": False}


def test_runs_of_different_grids_are_not_compared():
    with pytest.raises(ValueError, match=r"\('steps', 'c2'\)"):
        reproduce.compare(FIRST, FIRST.iloc[:3])


def test_a_folder_with_another_configs_run_is_refused_and_the_same_is_run_again(
        tmp_path, monkeypatch):
    """A finished run of the same configs is run again (Snakemake measures a result deleted
    since; before, its old verdicts were printed), keeping its first wall time; a folder
    holding another config's run, finished or not, is refused before any run."""
    ran = []
    monkeypatch.setattr(reproduce.subprocess, "run", lambda command, stdout, stderr: (
        ran.append(command) or reproduce.subprocess.CompletedProcess(command, 0)))
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text("repeats: 3\n")
    folder = tmp_path / "run1"
    (folder / "results").mkdir(parents=True)
    (folder / "results" / "FINDINGS.md").write_text("# Findings\n")
    (folder / "config.yaml").write_bytes((reproduce.REPO / "config.yaml").read_bytes())
    (folder / "grid.yaml").write_text("repeats: 3\n")
    (folder / "wall_s").write_text("241.5\n")
    assert reproduce.run_once(folder, grid_file, 1) == 241.5  # finished: its first wall time
    assert len(ran) == 1 and ran[0][-2:] == ["--configfile", str(folder / "grid.yaml")]
    grid_file.write_text("repeats: 4\n")
    (folder / "results" / "FINDINGS.md").unlink()  # interrupted, or finished
    with pytest.raises(RuntimeError, match="holds a run of another config"):
        reproduce.run_once(folder, grid_file, 1)
    assert len(ran) == 1 and (folder / "grid.yaml").read_text() == "repeats: 3\n"


def test_bad_input_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as refused:  # argparse's refusal
        cli.main(["reproduce", str(tmp_path / "out"), "--configfile",
                  str(tmp_path / "missing.yaml")])
    assert refused.value.code == 2 and "missing.yaml: no such file" in capsys.readouterr().err
    no_claims = tmp_path / "no-claims.yaml"
    no_claims.write_text("claims: []\n")
    code = cli.main(["reproduce", str(tmp_path / "out"), "--configfile", str(no_claims)])
    assert code == 2 and "lists no claims" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before any run


def test_a_bad_config_value_is_refused_in_one_line_before_any_folder(tmp_path, capsys):
    bad = tmp_path / "nan.yaml"
    from conftest import TINY

    bad.write_text(yaml.safe_dump({**TINY, "min_measure_s": float("nan")}))
    code = cli.main(["reproduce", str(tmp_path / "out"), "--configfile", str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("reproduce: config: min_measure_s: nan is not a finite"), err
    assert not (tmp_path / "out").exists()


def test_a_run_refused_by_the_snakefile_names_the_refusal(tmp_path, monkeypatch):
    from rnnbench.pipeline.failures import refusal_line

    def refused(command, stdout, stderr):  # the Snakefile's refusal, as its log holds it
        stdout.write("Using workflow specific profile ...\nconfig: device: 'gpu', but this "
                     "machine shows no NVIDIA GPU\n")
        return reproduce.subprocess.CompletedProcess(command, 1)

    monkeypatch.setattr(reproduce.subprocess, "run", refused)
    (tmp_path / "grid.yaml").write_text("device: gpu\n")
    with pytest.raises(RuntimeError, match=r"failed: config: device: 'gpu', but this machine "
                                           r"shows no NVIDIA GPU \(see .*snakemake.log\)"):
        reproduce.run_once(tmp_path / "run1", tmp_path / "grid.yaml", 1)
    assert refusal_line(["config: a note", "Job stats:", "train 1"]) is None
