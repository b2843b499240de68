"""``rnnbench predict`` on the committed reference map (docs/figures/map/): it answers for a
shape off the map in under 2 seconds without TensorFlow, says when it extrapolates, and
refuses bad options by name; and the committed pages written from the model (the held-out
predictions, VALIDATION.md, docs/presets.md's block) are what the committed runs give."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rnnbench import cli
from rnnbench.costmodel import check as modelcheck
from rnnbench.report import modelpages as modeldocs
from rnnbench.commands import predict
from rnnbench.results.load import read_table

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import sys, time
start = time.process_time()
from rnnbench.cli import main
status = main(sys.argv[1:])
print(f"PROBE_CPU_S {time.process_time() - start:.3f} TF {'tensorflow' in sys.modules}")
sys.exit(status)
"""


def run_predict(*options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, "predict", *options],
                          capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO / "workflow" / "scripts"),
                               "PATH": "/usr/bin:/bin"})


def predict_here(capsys, *options: str) -> tuple[int, str]:
    """rnnbench predict in this process, in the repository (an exception fails the test, as a
    traceback would): its exit status and standard error."""
    import os

    here = os.getcwd()
    os.chdir(REPO)
    try:
        code = cli.main(["predict", *options])
    except SystemExit as error:  # argparse's refusals
        code = error.code
    finally:
        os.chdir(here)
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_predict_answers_off_the_map_quickly_without_tensorflow():
    done = run_predict("--batch", "64", "--units", "256", "--max-len", "100", "--length", "40",
                       "--steps", "10000")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    cpu = float(out.split("PROBE_CPU_S ")[1].split()[0])  # (a busy machine's wall time varies with it)
    assert cpu < 2.0 and "TF False" in out
    for words in ("static_rnn", "dynamic_rnn", "step ratio", "break-even", "for 10,000 steps",
                  "setup", "peak memory", "num_units 256 outside the fitted 32-128",
                  "max_len 100 outside the fitted 10-40", "extrapolates"):
        assert words in out, words


@pytest.mark.slow
def test_predict_inside_the_map_says_so():
    done = run_predict("--batch", "32", "--units", "64", "--max-len", "20", "--length", "8")
    assert done.returncode == 0, done.stderr
    assert "within the fitted range on every axis" in done.stdout


@pytest.mark.parametrize("options, words", [
    (["--batch", "32", "--units", "64", "--max-len", "20", "--length", "30"], "--length 30"),
    (["--batch", "0", "--units", "64", "--max-len", "20"], "--batch 0"),
    (["--batch", "32", "--units", "64", "--max-len", "20", "--steps", "0"], "--steps 0"),
    (["--batch", "32", "--units", "64", "--max-len", "20", "--length", "2.5"], "--length"),
    (["--batch", "32", "--units", "64", "--max-len", "20", "--cell", "gru"], "--cell gru"),
    (["--batch", "32", "--units", "64", "--max-len", "20", "--results", "nowhere"],
     "--results nowhere"),
    # runs of three cell types and no --cell: the option to give, not "--cell None"
    (["--batch", "8", "--units", "8", "--max-len", "10", "--results",
      str(REPO / "docs/figures/probe-heldout")],
     "--cell: the runs hold cell ['basic_lstm', 'gru', 'lstm']: choose one with --cell"),
])
def test_predict_refuses_bad_options_by_name(options, words, capsys):
    code, err = predict_here(capsys, *options)
    assert code == 2 and words in err, err


def test_predict_names_what_is_wrong_with_a_table_and_never_prints_a_negative(tmp_path, capsys):
    """Tables the model cannot take are refused by column, value or reason (status 2, no
    traceback); a law that falls below 0 far off the map is not printed as a number."""
    from rnnbench import cli

    runs = read_table(REPO / "docs/figures/map/measurements.csv")
    shape = ["--batch", "16", "--units", "32", "--max-len", "20"]

    def ask(table: pd.DataFrame, *options: str) -> tuple[int, str]:
        table.to_csv(tmp_path / "measurements.csv", index=False)
        status = cli.main(["predict", "--results", str(tmp_path), *(options or shape)])
        out = capsys.readouterr()
        return status, out.out + out.err

    for table, words in (
            (runs.drop(columns="setup_s"), "no column setup_s"),
            (runs.assign(median_step_s="abc"), "median_step_s is 'abc', not a number of"),
            (runs.iloc[:0], "holds no runs (a header only)"),
            (runs.assign(busy=True), f"Of its {len(runs)} runs, {len(runs)} were flagged busy"),
            (runs[runs["impl"] == "static"], f"the rest: static {len(runs) // 2} runs"),
            (runs.assign(median_step_s=float("inf")), "median_step_s is 'inf', not a"),
            (runs.assign(busy="maybe"), "busy 'maybe' is neither True nor False"),
            (runs.assign(api="nonsense"), "api ['nonsense'] (known:"),
            (pd.concat([runs, runs.iloc[:1]]), f"line {len(runs) + 2}: the run "
                                               f"{runs['cell_id'].iloc[0]} "),
            # two protocols' folders: named each, not "a run twice" (never fitted together)
            (pd.concat([runs, runs.assign(protocol="steps9", path="p9/" + runs["path"])]),
             "holds runs of 2 protocols, never fitted together ("),
            # one run that records another protocol than its folder's: its file named
            (runs.assign(protocol=["steps9"] + list(runs["protocol"].iloc[1:])),
             f"steps9: 1 run(s), e.g. {runs['path'].iloc[0]}")):
        status, out = ask(table)
        assert status == 2 and words in out and "Traceback" not in out, words
    status, out = ask(runs[runs["max_len"] == 20])  # one max_len: no setup law, no break-even
    assert status == 0 and "- (positive values at under 2 max_len)" in out
    assert "break-even: not predicted" in out
    status, out = ask(runs, "--batch", "16", "--units", "32", "--max-len", "5000")
    assert status == 2 and "--max-len 5000: over 10x outside the fitted 10-40" in out
    group = runs[(runs["batch_size"] == 16) & (runs["num_units"] == 32)]
    laws = {q: predict._law_line(group, q, 5000) for q in ("setup_s", "peak_rss_mb",
                                                           "node_count")}
    assert laws["setup_s"]["dynamic"] is None  # its line falls below 0 there: no number
    assert all(value is None or value[0] > 0 for law in laws.values() for value in law.values())


def test_the_held_out_predictions_come_from_the_committed_map(tmp_path):
    """predicted.csv was written from the map before the held-out cells ran: the committed
    map still gives exactly those predictions."""
    modeldocs.write_predictions(tmp_path / "predicted.csv")
    # alike to rounding: another CPU's BLAS may differ in a float's last digit
    pd.testing.assert_frame_equal(read_table(tmp_path / "predicted.csv"),
                                  read_table(REPO / "docs/figures/heldout/predicted.csv"),
                                  check_exact=False, rtol=1e-9)


def test_the_validation_page_is_the_committed_predictions_against_the_held_out_runs():
    """VALIDATION.md is what predicted.csv (written before the run) and the held-out run's
    measurements.csv give, and the README's held-out sentence is its median and worst error."""
    page = (REPO / "docs/figures/heldout/VALIDATION.md").read_text()
    runs = read_table(REPO / "docs/figures/heldout/measurements.csv")
    assert page == modeldocs.validation_page(runs)
    table = modelcheck.validation(read_table(REPO / "docs/figures/heldout/predicted.csv"), runs)
    errors = table["ratio_error"].abs()
    assert (f"ratios within {errors.median():.0%} at the median, {errors.max():.0%} at worst"
            in (REPO / "README.md").read_text())


def test_the_presets_block_is_the_committed_map():
    machine = read_table(REPO / "docs/figures/map/measurements.csv")["device_name"].iloc[0]
    block = modeldocs.block(modeldocs.map_fit(), REPO, machine)
    assert block in (REPO / "docs" / "presets.md").read_text()


def test_breakeven_is_never_where_static_is_slower():
    point, low, high = predict.breakeven({"static": (5.0, 4.0, 6.0), "dynamic": (1.0, 0.9, 1.1)},
                                         {"static": (2e-3, 1.9e-3, 2.1e-3),
                                          "dynamic": (1e-3, 0.9e-3, 1.1e-3)})
    assert point == low == high == float("inf")
    point, low, high = predict.breakeven({"static": (5.0, 4.0, 6.0), "dynamic": (1.0, 0.9, 1.1)},
                                         {"static": (1e-3, 0.95e-3, 1.05e-3),
                                          "dynamic": (2e-3, 1.9e-3, 2.1e-3)})
    assert point == pytest.approx(4000) and low < point < high


@pytest.mark.parametrize("shape, words", [
    ({"units": 1_000_000_000}, "--units 1e+09: over 10x outside the fitted 32-128"),
    ({"batch": 1}, "--batch 1: over 10x outside the fitted 16-64"),
    ({"max_len": 1000, "length": 500}, "--max-len 1000: over 10x outside the fitted 10-40"),
])
def test_predict_refuses_a_shape_orders_of_magnitude_off_the_map(shape, words):
    """predict --units 1000000000 printed a peak memory of 1,188 MiB (its memory law follows
    max_len alone): a shape over 10x beyond the map on an axis is refused, naming it."""
    runs = read_table(REPO / "docs" / "figures" / "map" / "measurements.csv")
    options = {"batch": 32, "units": 64, "max_len": 20, "length": None, **shape}
    with pytest.raises(ValueError, match=re.escape(words)):
        predict.prediction(runs, None, options["batch"], options["units"], None,
                           options["max_len"], options["length"])
    predict.prediction(runs, None, 32, 64, None, 100, 40)  # 2.5x past max_len: predicted


def test_predicts_memory_with_the_shapes_weights():
    """The memory law followed max_len alone: 1,000 units printed the peak of 64. It now adds
    the shape's weights (each with its gradient and Adam's two moments: 16 bytes), fitted net
    of the runs' own, which grow with num_units squared."""
    from rnnbench.grid.resources import weights_bytes

    runs = read_table(REPO / "docs" / "figures" / "map" / "measurements.csv")
    small, large = (predict.prediction(runs, None, 32, units, None, 20, 8) for units in (64, 1000))
    added = (weights_bytes("basic_lstm", 1000, 16) - weights_bytes("basic_lstm", 64, 16)) / 2**20
    assert added == pytest.approx(62, abs=1)
    for impl in ("static", "dynamic"):
        grown = large["laws"]["peak_rss_mb"][impl][0] - small["laws"]["peak_rss_mb"][impl][0]
        assert grown == pytest.approx(added)
        assert large["laws"]["peak_rss_mb"][impl][3].endswith("+ weights")
    text = predict.report(large, 32, 1000, 20, None, "the map")
    assert "plus this shape's weights, 62.1 MiB (each weight with its gradient" in text


MAP_PROBE = "docs/figures/probe-map/probe.json"


@pytest.mark.slow
def test_predict_with_a_probe_answers_for_a_cell_type_the_map_never_ran():
    done = run_predict("--probe", MAP_PROBE, "--cell", "gru", "--input-dim", "32", "--batch",
                       "32", "--units", "64", "--max-len", "30", "--length", "6", "--steps",
                       "10000")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    cpu = float(out.split("PROBE_CPU_S ")[1].split()[0])
    assert cpu < 2.0 and "TF False" in out
    for words in ("a gru of 64 units", "32 inputs", "expected (95 %)", "for one run of each",
                  "break-even", "for 10,000 steps", "static_rnn", "dynamic_rnn"):
        assert words in out, words
    assert re.search(r"expected \(95 %\), [\d.]+ to [\d.]+ for one run of each: "
                     r"(static_rnn|dynamic_rnn) faster|undecided|no practical", out), out
    low, high = map(float, re.search(r"\[([\d.]+), ([\d.]+)\] expected", out).groups())
    sided = "undecided (at a" in out and (low > 1 or high < 1)
    assert ("the expected interval excludes 1" in out) == sided, out
    if sided:
        faster = "static_rnn" if high < 1 else "dynamic_rnn"
        assert f"; {faster} faster, perhaps by less than the margin" in out, out


@pytest.mark.slow
def test_predict_writes_a_grids_predictions_once(tmp_path):
    out = tmp_path / "predicted.csv"
    options = ["--probe", MAP_PROBE, "--grid", "presets/probe-heldout.yaml", "--out", str(out)]
    done = run_predict(*options)
    assert done.returncode == 0, done.stderr
    table = read_table(out)
    assert len(table) == 12 and (table["expected_low"] < table["ratio"]).all()
    assert (table["ratio"] < table["expected_high"]).all()
    again = run_predict(*options)
    assert again.returncode == 2 and "exists" in again.stderr
    # the shipped config: its cells the model describes, the others named (it was refused
    # whole, for its loop_bound max_len cell)
    shipped = run_predict("--probe", MAP_PROBE, "--grid", "config.yaml", "--out",
                          str(tmp_path / "shipped.csv"))
    assert shipped.returncode == 0, shipped.stderr
    assert "predicted 2 of the 3 cells of config.yaml" in shipped.stdout
    assert "left out 1 cell(s) the model does not predict before a run, e.g. " \
           "basic_lstm_bs32_ml24_sl2_nu32_in16_lbmaxlen: loop_bound 'max_len'" in shipped.stderr
    assert len(read_table(tmp_path / "shipped.csv")) == 2


@pytest.mark.parametrize("options, words", [
    (["--probe", "nowhere.json"], "--probe nowhere.json"),
    (["--probe", "config.yaml"], "--probe config.yaml"),
    (["--probe", MAP_PROBE, "--cell", "peephole"], "cell 'peephole'"),
    (["--probe", MAP_PROBE, "--input-dim", "0"], "--input-dim 0"),
    (["--grid", "presets/probe-heldout.yaml"], "--probe"),
    # --fits without --probe was ignored without a word
    (["--fits", "docs/figures/probe-map/machine.json"],
     "--fits docs/figures/probe-map/machine.json: goes with --probe"),
])
def test_predict_with_a_probe_refuses_what_it_cannot_read(options, words, capsys):
    code, err = predict_here(capsys, "--batch", "32", "--units", "64", "--max-len", "20",
                             *options)
    assert code == 2 and words in err, err


def test_a_gpu_runs_peak_is_no_probe(tmp_path, capsys):
    """Rule peak probes a CPU's unit costs alone: a peak record of a GPU run is refused as
    --probe, naming the device, not read as a CPU's probe."""
    from rnnbench.costmodel.machine import read_probe

    probe = json.loads((REPO / MAP_PROBE).read_text())
    record = {"probe": probe.get("probe", probe), "metadata": {"device": "gpu"}}
    (tmp_path / "peak.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="a run on device 'gpu'; the probe's unit costs are a "
                                         "CPU's"):
        read_probe(tmp_path / "peak.json")
    record["metadata"]["device"] = "cpu"
    (tmp_path / "peak.json").write_text(json.dumps(record))
    assert read_probe(tmp_path / "peak.json")["unit_costs"]
