"""Comparing two result sets (rnnbench.commands.compare), one of which holds two environments."""

import itertools
import json
import shutil

import pandas as pd
import pytest

from conftest import make_result
from rnnbench import cli
from rnnbench.commands import compare
from rnnbench.results import sides

CLAIM = {"id": "steps", "seed": "t", "statement": "static trains faster",
         "quantity": "median_step_s", "direction": "static < dynamic"}


def _write(folder, records):
    for record in records:
        path = folder / record["cell_id"] / record["impl"] / f"repeat{record['repeat']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
    (folder / "peak_intra1_tf2.21.json").write_text("{}")  # not a training result: skipped
    return folder


MEASURED = itertools.count(1)  # no two measured runs' times agree to the last digit


def _runs(cell_id, static_step, dynamic_step, cpu="cpu", max_len=10):
    records = []
    for repeat in (1, 2, 3):
        jitter = 1 + 0.01 * repeat + 1e-9 * next(MEASURED)
        for impl, step in (("static", static_step), ("dynamic", dynamic_step)):
            record = make_result(impl, cell_id, repeat, max_len=max_len,
                                 step_s=(step * jitter,) * 3)
            record["metadata"]["cpu_model"] = cpu
            records.append(record)
    return records


def test_two_result_sets_compare_per_cell_and_environment(tmp_path):
    # ours: static's steps half dynamic's; theirs, on another machine, twice as slow on both
    # sides and static's steps 1.5x dynamic's; theirs also holds a cell from a third machine
    ours = _write(tmp_path / "ours", _runs("c1", 0.010, 0.020) + _runs("c2", 0.01, 0.01,
                                                                         max_len=20))
    theirs = tmp_path / "theirs"
    _write(theirs / "box", _runs("c1", 0.030, 0.020, cpu="gpu box"))
    _write(theirs / "third", _runs("c1", 0.010, 0.020, cpu="third"))
    a, b = sides.read_side(ours), sides.read_side(theirs)
    table = compare.compare(a, b, [CLAIM], 0.1, ("ours", "theirs"))
    assert len(table) == 2  # c1 against each of theirs' two environments; c2 is ours alone
    assert table["side_b"].tolist() == ["theirs #1", "theirs #2"]
    gpu = table[table["environment_b"].str.startswith("gpu box")].iloc[0]
    assert gpu["a_ratio_median_step_s"] == pytest.approx(0.5)
    assert gpu["b_ratio_median_step_s"] == pytest.approx(1.5)
    assert (gpu["a_steps"], gpu["b_steps"]) == ("holds", "does not hold")
    assert gpu["b_over_a_static_median_step_s"] == pytest.approx(3.0)
    assert gpu["b_over_a_dynamic_median_step_s"] == pytest.approx(1.0)
    assert gpu["b_over_a_static_median_step_s_ci_low"] < 3.0 < \
        gpu["b_over_a_static_median_step_s_ci_high"]
    text = compare.compare_markdown(table, [CLAIM], 0.1)
    assert "never pooled" in text and "| holds / does not hold" in text
    # each side's step decision at the margin: static faster by more than 10 % on one side,
    # dynamic on the other
    assert "| static faster by more than 10 % / dynamic faster by more than 10 % |" in text
    assert compare.compare_markdown(table.iloc[0:0], [], 0.1).endswith("no cell in common.\n")
    # the cell ours alone measured is named, not dropped without a word
    assert compare.one_side_only(a, b, ("ours", "theirs")) == [
        "Measured by ours only, so not compared: 1 cell (`c2`).", ""]
    assert compare.one_side_only(a, a.copy(), ("ours", "again")) == []


@pytest.mark.slow
def test_the_command_writes_table_markdown_and_chart(tmp_path, capsys):
    ours = _write(tmp_path / "ours", _runs("c1", 0.010, 0.020))
    theirs = _write(tmp_path / "theirs", _runs("c1", 0.012, 0.020))
    out = tmp_path / "out"
    assert cli.main(["compare", str(ours), str(theirs), "--out", str(out)]) == 0
    assert "## Comparison" in capsys.readouterr().out
    assert len(pd.read_csv(out / "compare.csv")) == 1
    assert (out / "compare.svg").read_text().startswith("<svg")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["compare", str(ours), str(empty)]) == 1
    assert "empty: no result files" in capsys.readouterr().err
    # a side that does not exist is named as such, not as an empty folder
    assert cli.main(["compare", str(ours), str(tmp_path / "nowhere")]) == 1
    assert "nowhere: no such file or folder" in capsys.readouterr().err


def test_runs_of_two_protocols_stay_apart_and_ratio_claims_judge_compat_v1_cells(tmp_path):
    # one folder holding the same cell run with 500 and with 50 measured steps (two protocol
    # folders of results/runs/), and a jax_scan cell that the seeds' ratio claims do not judge
    from rnnbench.commands.scale import SYNTHETIC_PROTOCOL, synthetic_result

    ours = tmp_path / "ours"
    for steps, step in ((500, 0.010), (50, 0.030)):
        records = [synthetic_result(impl, "c1", repeat, step_s=(step * (1 + 0.01 * repeat),) * 3,
                                    protocol={**SYNTHETIC_PROTOCOL, "steps": steps})
                   for repeat in (1, 2, 3) for impl in ("static", "dynamic")]
        _write(ours / f"cpu_steps{steps}", records)
    jax = [make_result(impl, "j1", repeat, api="jax_scan", step_s=(0.01 * repeat,) * 3)
           for repeat in (1, 2, 3) for impl in ("static", "dynamic")]
    theirs = _write(tmp_path / "theirs", _runs("c1", 0.010, 0.020) + jax)
    _write(ours / "jax", jax)
    a, b = sides.read_side(ours), sides.read_side(theirs)
    table = compare.compare(a, b, [CLAIM], 0.1, ("ours", "theirs"))
    c1 = table[table["cell_id"] == "c1"]
    assert sorted(c1["protocol_a"].str.split("_").str[0]) == ["steps50-1.0s", "steps500-1.0s"]
    # each protocol's runs alone: B / A is theirs' static (0.0102) over that protocol's own
    by_steps = dict(zip(c1["protocol_a"].str.split("-").str[0],
                        c1["b_over_a_static_median_step_s"]))
    assert by_steps["steps500"] == pytest.approx(1.0, rel=0.02)
    assert by_steps["steps50"] == pytest.approx(1 / 3, rel=0.02)
    j1 = table[table["cell_id"] == "j1"].iloc[0]
    # a jax_scan cell is judged too: unroll max_len in static's part, unroll=1 in dynamic's
    assert j1["a_steps"] in ("holds", "does not hold", "inconclusive")
    text = compare.compare_markdown(table, [CLAIM], 0.1)
    assert "steps50-1.0s_warmup40-500_hooks100_seed0" in text


def test_what_is_not_two_result_sets_is_refused(tmp_path, capsys):
    other = tmp_path / "summary.csv"
    other.write_text("cell_id,ratio_setup_s\nc1,2.0\n")
    with pytest.raises(ValueError, match=r"summary.csv: not a measurements.csv of this workflow "
                                         r"\(no column impl, repeat, environment, protocol"):
        sides.read_side(other)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a\nb\nc,d,e\n")  # pandas' message ends in a line break: one line here
    with pytest.raises(ValueError, match=r"ragged.csv: not a measurements.csv \(Error tokenizing "
                                         r"data\. C error: Expected 1 fields in line 3, saw 3\)$"):
        sides.read_side(ragged)
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="x.csv: not a measurements.csv"):
        sides.read_side(binary)
    ours = _write(tmp_path / "ours", _runs("c1", 0.010, 0.020))
    assert cli.main(["compare", str(ours), str(tmp_path / "ours/.")]) == 1
    assert "are the same result set" in capsys.readouterr().err
    assert cli.main(["compare", str(ours), str(ours / "c1")]) == 1
    assert f"{ours / 'c1'} lies inside {ours}: its runs would be on both sides" in \
        capsys.readouterr().err
    # a copy of a side is not a second measurement (it was compared as one)
    shutil.copytree(ours, tmp_path / "copy")
    assert cli.main(["compare", str(ours), str(tmp_path / "copy")]) == 1
    assert (f"{ours} and {tmp_path / 'copy'} hold 6 of the same runs (e.g. c1 dynamic repeat 1: "
            "the same times to the last digit): one holds a copy of the other's runs; give "
            "two result sets measured apart") in capsys.readouterr().err
    assert cli.main(["compare", str(ours), str(other), "--names", "a", "a"]) == 1
    assert "give two different names" in capsys.readouterr().err
    theirs = _write(tmp_path / "theirs", _runs("c1", 0.012, 0.020))
    for name in ("a|b", "d\udcff", " "):  # a table cell's bar; bytes not UTF-8 (argv's escape)
        with pytest.raises(SystemExit) as exit_:
            cli.main(["compare", str(ours), str(theirs), "--names", name, "x"])
        assert exit_.value.code == 2 and "--names: " in capsys.readouterr().err
    elsewhere = _write(tmp_path / "elsewhere", _runs("c2", 0.012, 0.020))
    assert cli.main(["compare", str(ours), str(elsewhere), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.endswith("have no cell in common: nothing to compare\n")
    assert not (tmp_path / "o").exists()
    listed = tmp_path / "list.yaml"
    listed.write_text("- steps: 3\n")
    assert cli.main(["compare", str(ours), str(theirs), "--configfile", str(listed)]) == 1
    assert capsys.readouterr().err == (
        f"compare: {listed}: is not a mapping of keys at top level: Snakemake refuses such a "
        "config file; write the keys to change (e.g. steps: 200), or leave the file out\n")
    listed.write_text("steps: -1\n")  # a value the workflow refuses: refused here too
    assert cli.main(["compare", str(ours), str(theirs), "--configfile", str(listed)]) == 1
    assert capsys.readouterr().err == (f"compare: --configfile {listed}: steps: -1 is less "
                                       "than the minimum of 2\n")


@pytest.mark.slow
def test_a_chart_renderer_that_aborts_leaves_the_tables_and_one_line(tmp_path):
    """Under ``ulimit -v`` vl-convert's V8 aborts its whole process ("Fatal process out of
    memory: Oilpan: CagedHeap reservation"), no Python exception: compare draws its chart in
    a child process, so its tables are written and it says which chart failed and why."""
    import subprocess
    import sys

    ours = _write(tmp_path / "ours", _runs("c1", 0.010, 0.020))
    theirs = _write(tmp_path / "theirs", _runs("c1", 0.012, 0.020))
    out = tmp_path / "out"
    command = f'ulimit -v 4000000; exec "{sys.executable}" -m rnnbench compare "$@"'
    done = subprocess.run(["bash", "-c", command, "compare", str(ours), str(theirs),
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "## Comparison" in done.stdout
    assert len(pd.read_csv(out / "compare.csv")) == 1 and (out / "compare.md").exists()
    assert not (out / "compare.svg").exists()
    said = done.stderr.strip().splitlines()
    assert len(said) == 1, done.stderr
    assert said[0].startswith(f"compare: the chart {out / 'compare.svg'} was not drawn: the "
                              "chart renderer (vl-convert's V8) could not reserve its address "
                              "space: an address-space limit is set (ulimit -v 4000000); lift "
                              "it (ulimit -v unlimited)"), said[0]
    assert f"the tables are written ({out / 'compare.csv'}, compare.md)" in said[0]


def test_a_results_folder_is_read_without_what_the_workflow_set_aside(tmp_path):
    results = tmp_path / "results"
    _write(results / "runs" / "proto", _runs("c1", 0.010, 0.020))
    for aside in ("stale/results/runs/proto", "partial/runs"):  # cut short, set aside
        cut = results / aside / "c1" / "static" / "repeat1.json"
        cut.parent.mkdir(parents=True)
        cut.write_text('{"impl": "sta')
    runs = sides.read_side(results)
    assert len(runs) == 6 and set(runs["cell_id"]) == {"c1"}
    with pytest.raises(ValueError, match="repeat1.json: not a valid result"):
        sides.read_side(results / "stale")  # named itself: read as given


def test_a_measurements_csv_no_run_could_give_is_refused_naming_line_and_value(tmp_path,
                                                                                 capsys):
    """A header only, a step time that is text, negative or NaN, an impl that is neither:
    one line naming the file's line, the column and the value, never a traceback or a NaN
    ratio judged undecided."""
    runs = sides.read_side(_write(tmp_path / "ours", _runs("c1", 0.010, 0.020)))
    good = tmp_path / "measurements.csv"
    runs.to_csv(good, index=False)
    assert len(sides.read_side(good)) == 6

    def first(column, value, row=0):
        values = runs[column].astype(object).tolist()
        values[row] = value
        return runs.assign(**{column: values})

    for table, said in (
            (runs.iloc[:0], ": holds no runs (a header only)"),
            (first("median_step_s", "x"),
             ", line 2: median_step_s is 'x', not a number of seconds above 0 and below 1e+07"),
            (first("setup_s", float("nan")),
             ", line 2: setup_s is 'nan', not a number of seconds above 0 and below 1e+07"),
            (first("median_step_s", -1.0, row=2),
             ", line 4: median_step_s is '-1.0', not a number of seconds above 0 and below 1e+07"),
            (first("impl", "banana"), ", line 2: impl is 'banana', not static or dynamic")):
        bad = tmp_path / "bad.csv"
        table.to_csv(bad, index=False)
        assert cli.main(["compare", str(good), str(bad), "--out", str(tmp_path / "o")]) == 1
        assert capsys.readouterr().err == f"compare: {bad}{said}\n"
    # a side whose cell has no static runs
    other = sides.read_side(_write(tmp_path / "other", _runs("c1", 0.010, 0.020)))
    other[other["impl"] == "dynamic"].to_csv(tmp_path / "dynamic.csv", index=False)
    assert cli.main(["compare", str(good), str(tmp_path / "dynamic.csv"), "--out",
                     str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err  # the side, the cell, its group and a file named
    assert err.startswith("compare: side B: cell c1 has dynamic runs but no static runs of "
                          "protocol ") and f"(e.g. {tmp_path}/other/c1/dynamic/repeat" in err


def test_committed_tables_that_predate_a_recorded_column_compare(tmp_path):
    """Two committed rounds' measurements.csv, written before data_sha256 was a column: the
    check of what one cell's runs share takes the columns they have (was a KeyError)."""
    from conftest import REPO

    rounds = [sides.read_side(REPO / f"docs/figures/probe-heldout/round{k}/measurements.csv")
              for k in (1, 2)]
    assert "data_sha256" not in rounds[0]
    table = compare.compare(*rounds, [CLAIM], 0.1)
    assert len(table) == 12
