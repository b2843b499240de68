"""Claims of more kinds (rnnbench.stats.claims): each at its interval's edges, on hand-made runs,
checked field by field, and stated in FINDINGS."""

import json
import math
import re

import pytest

from conftest import make_result
from rnnbench.stats import claims
from rnnbench.grid import configcheck
from rnnbench.report import findings
from rnnbench.results import load
from rnnbench.grid.axes import sequence_length_id
from rnnbench.stats.summary import summarize
from test_results import write_results

BASE = {"id": "c", "seed": "t", "statement": "s"}


@pytest.mark.parametrize("low, high, positive, expected", [
    (-0.2, -0.01, False, "holds"), (0.01, 0.2, False, "does not hold"),
    (0.01, 0.2, True, "holds"), (-0.1, 0.0, False, "inconclusive"),
    (float("nan"), 1.2, True, "inconclusive"),
])
def test_slope_verdicts_at_the_edges(low, high, positive, expected):
    assert claims.side_verdict(low, high, positive) == expected


def _runs(tmp_path, step_of, max_lens=(10, 20, 40), setup_of=None):
    """Three repeats per implementation at each max_len; step seconds from step_of(impl,
    max_len), graph construction from setup_of(impl, max_len)."""
    tmp_path.mkdir(exist_ok=True)
    records = []
    for max_len in max_lens:
        for repeat in (1, 2, 3):
            jitter = 1 + 0.01 * repeat
            for impl in ("static", "dynamic"):
                construction = setup_of(impl, max_len) if setup_of else 1.0
                records.append(make_result(
                    impl, f"c{max_len}", repeat, max_len=max_len,
                    setup=(construction * jitter, 0.5, 0.5),
                    step_s=(step_of(impl, max_len) * jitter,) * 3))
    return load.load_results(write_results(tmp_path, records))


def test_between_compares_one_implementation_at_two_axis_values(tmp_path):
    runs = _runs(tmp_path, lambda impl, m: 0.01 if impl == "dynamic" else 0.001 * m)
    same = {**BASE, "kind": "between", "impl": "dynamic", "quantity": "median_step_s",
            "axis": "max_len", "values": [10, 40], "direction": "first < second"}
    (row,) = claims.judge(same, runs, 0.1)
    # dynamic's steps: the same at both, within the 10 % margin: no practical difference
    assert row["verdict"] == "does not hold"
    assert claims.judge(same, runs, 0.0)[0]["verdict"] == "inconclusive"  # no margin
    slower = {**same, "impl": "static"}  # 0.01 s against 0.04 s
    (row,) = claims.judge(slower, runs, 0.1)
    assert row["verdict"] == "holds" and "0.25 [" in row["estimate"]
    assert claims.judge({**slower, "direction": "first > second"}, runs, 0.1)[0]["verdict"] == \
        "does not hold"


@pytest.mark.parametrize("values", [[2, "full"], [2, "max_len"], [{"uniform": [1, 4]}, "full"]])
def test_a_between_claim_on_sequence_length_takes_either_spelling(tmp_path, values):
    # the config writes max_len and {uniform: [1, 4]}, the tables full and u1-4: a claim may
    # write either, and is checked before any job and judged by the same ids
    lengths = [values[0], "max_len"]
    config = {"batch_size": [32], "num_units": [64], "input_dim": [16], "max_len": [4],
              "sequence_length": lengths,
              "claims": [{**BASE, "kind": "between", "impl": "dynamic", "values": values,
                          "quantity": "median_step_s", "axis": "sequence_length",
                          "direction": "first < second"}]}
    configcheck.validate_config(config)
    records = [make_result(impl, f"c{sequence_length_id(length)}", repeat, max_len=4,
                           sequence_length=length, step_s=((0.01 if length == "max_len" else 0.005)
                                                          * (1 + 0.01 * repeat),) * 3)
               for length in lengths for repeat in (1, 2, 3) for impl in ("static", "dynamic")]
    runs = load.load_results(write_results(tmp_path, records))
    (row,) = claims.judge(config["claims"][0], runs, 0.1)
    assert row["verdict"] == "holds" and "0.5 [" in row["estimate"]
    with pytest.raises(ValueError, match=re.escape("name one value twice")):
        configcheck.validate_config({**config, "claims": [{**config["claims"][0],
                                                    "values": ["full", "max_len"]}]})


def test_trend_judges_the_ratio_along_the_axis_by_its_slope(tmp_path):
    # static / dynamic step ratio 0.5, 1.0, 2.0 as max_len grows
    runs = _runs(tmp_path, lambda impl, m: 0.02 if impl == "dynamic" else 0.001 * m)
    claim = {**BASE, "kind": "trend", "quantity": "median_step_s", "axis": "max_len",
             "direction": "increasing"}
    (row,) = claims.judge(claim, runs, 0.1)
    assert row["verdict"] == "holds"
    assert claims.judge({**claim, "direction": "decreasing"}, runs, 0.1)[0]["verdict"] == \
        "does not hold"
    flat = _runs(tmp_path / "flat", lambda impl, m: 0.02)
    assert claims.judge(claim, flat, 0.1)[0]["verdict"] == "inconclusive"


def _spread_runs(folder, spreads):
    """Static graph construction 0.5 + 0.1 max_len at max_len 10, 20, 40, each repeat's
    scaled by its factor of ``spreads`` (one per repeat): runs as scattered as asked."""
    folder.mkdir()
    return load.load_results(write_results(folder, [
        make_result(impl, f"c{m}", repeat, max_len=m, step_s=(0.01,) * 3,
                    setup=((0.5 + 0.1 * m) * spread if impl == "static" else 1.0, 0.5, 0.5))
        for m in (10, 20, 40) for repeat, spread in enumerate(spreads, start=1)
        for impl in ("static", "dynamic")]))


def test_law_judges_a_line_and_an_extrapolation(tmp_path):
    # static graph construction 0.5 + 0.1 max_len: 1.5, 2.5, 4.5 s (x 1.01-1.03 by repeat)
    runs = _runs(tmp_path, lambda impl, m: 0.01,
                 setup_of=lambda impl, m: 0.5 + 0.1 * m if impl == "static" else 1.0)
    linear = {**BASE, "kind": "law", "impl": "static", "quantity": "graph_construction_s",
              "axis": "max_len", "form": "linear"}
    assert claims.judge(linear, runs, 0.1)[0]["verdict"] == "holds"
    reaches = {**BASE, "kind": "law", "impl": "static", "quantity": "graph_construction_s",
               "axis": "max_len", "at": 3000, "value": 306}
    row = claims.judge(reaches, runs, 0.1)[0]
    assert row["verdict"] == "holds" and "against the claimed 306" in row["estimate"]
    assert claims.judge({**reaches, "value": 489}, runs, 0.1)[0]["verdict"] == "does not hold"
    # a line that clearly falls is no rising linear law: it does not hold
    falling_runs = _runs(tmp_path / "fall", lambda impl, m: 0.01,
                         setup_of=lambda impl, m: 10 - 0.1 * m if impl == "static" else 1.0)
    assert claims.judge(linear, falling_runs, 0.1)[0]["verdict"] == "does not hold"
    curved = _runs(tmp_path / "curve", lambda impl, m: 0.01,
                   setup_of=lambda impl, m: 0.002 * m * m if impl == "static" else 1.0)
    assert claims.judge(linear, curved, 0.1)[0]["verdict"] == "does not hold"  # lack of fit
    # a curve the line does not fit is read off the power law the runs choose
    assert "power law" in claims.judge(reaches, curved, 0.1)[0]["estimate"]
    # runs too scattered: the prediction interval at 3000 reaches below zero
    scattered = _spread_runs(tmp_path / "scatter", (0.2, 1.0, 3.0))
    row = claims.judge(reaches, scattered, 0.1)[0]
    assert row["verdict"] == "inconclusive" and "reaches zero or below" in row["reason"]
    predicted = row["estimate"].split(" against")[0]  # (a slope may be negative; a time not)
    assert "[-" not in predicted and "[0, " in predicted
    # a line that falls below zero at ``at`` predicts no time there
    falling = claims.judge({**reaches, "at": -100}, runs, 0.1)[0]
    assert falling["verdict"] == "inconclusive" and "none (the line falls below zero there)" in \
        falling["estimate"] and falling["reason"] == "the line falls to zero or below there: " \
        "it predicts no time"
    # an interval that holds the claimed value and half of it: too wide to say "holds"
    wide = _spread_runs(tmp_path / "wide", (0.6, 1.0, 1.6))
    at100 = {**reaches, "at": 100, "value": 10}
    row = claims.judge(at100, wide, 0.1)[0]  # 11.2 [3.34, 19.06]: holds 10 and 5
    assert row["verdict"] == "inconclusive" and row["reason"].startswith(
        "its 95 % interval [3.34, 19.06] holds the claimed 10 and 5: too wide")
    tight = claims.judge({**at100, "value": 10.7}, runs, 0.1)[0]
    assert tight["verdict"] == "holds", tight  # the tight runs pin it within a factor of 2
    text = findings.findings_markdown(summarize(runs), runs, [
        {**reaches, "id": "build"}], {"margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1,
                                      "max_warmup_steps": 1})
    assert "- **build**: the t says \"s\".\n  - It holds in the one group of cells: static " \
           "graph_construction_s at max_len 3000: " in text
    assert "### build: s" in text and "within the 95 % prediction interval of the law the runs choose" in text
    # a seed with a newline and blanks stays on its line; an empty one is named as such
    odd = findings.findings_markdown(summarize(runs), runs, [
        {**reaches, "id": "odd", "seed": "a  blog\npost"}, {**reaches, "id": "blank", "seed": ""}],
        {"margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert "- **odd**: a blog post says" in odd and "Source: a blog post. " in odd
    assert "- **blank**: an unnamed source says" in odd and "Source: unnamed. " in odd


@pytest.mark.parametrize("claim, fragment", [
    ({"kind": "between", "quantity": "setup_s", "impl": "static", "axis": "max_len",
      "direction": "first < second"}, "claims.0.values: a between claim (c) needs it"),
    ({"kind": "trend", "quantity": "setup_s", "axis": "sequence_length",
      "direction": "increasing"}, "claims.0.axis: 'sequence_length': a trend needs a numeric"),
    ({"kind": "law", "quantity": "setup_s", "impl": "static", "axis": "max_len"},
     "claims.0: a law claim (c) says either form: linear, or at and value"),
    ({"kind": "law", "quantity": "setup_s", "impl": "static", "axis": "max_len", "at": 5},
     "claims.0: a law claim (c) with at needs value, and back"),
    ({"kind": "ratio", "quantity": "setup_s", "direction": "increasing"},
     "claims.0.direction: 'increasing' is not one of"),
    ({"kind": "ratio", "quantity": "setup_s", "direction": "static > dynamic", "impl": "static"},
     "claims.0.impl: a ratio claim (c) takes no impl"),
])
def test_each_kind_needs_its_fields(claim, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        claims.check_claim({**BASE, **claim}, 0)


@pytest.mark.parametrize("claim, fragment", [
    ({"kind": "between", "impl": "dynamic", "axis": "sequence_length", "values": [2, 20],
      "direction": "first < second"}, "claims.0.values: 20 is not a value of sequence_length in "
                                      "this grid ([2, 'max_len'])"),
    ({"kind": "between", "impl": "dynamic", "axis": "max_len", "values": [4, "4"],
      "direction": "first < second"}, "claims.0.values: '4' is not a value of max_len"),
    ({"kind": "trend", "axis": "batch_size", "direction": "increasing"},
     "claims.0.axis: batch_size takes [32] in this grid: a trend claim (c) needs 2 values"),
    ({"kind": "law", "impl": "static", "axis": "max_len", "form": "linear"},
     "claims.0.axis: max_len takes [4, 8] in this grid: a law claim (c) needs 3 values"),
    ({"kind": "law", "impl": "static", "axis": "max_len", "at": math.inf, "value": 4},
     "claims.0.at: inf is not a finite number above 0"),
    ({"kind": "law", "impl": "static", "axis": "max_len", "at": 300, "value": math.nan},
     "claims.0.value: nan is not a finite number above 0"),
])
def test_a_claim_asking_what_the_grid_lacks_is_refused_before_any_job(claim, fragment):
    config = {"batch_size": [32], "num_units": [64], "input_dim": [16], "max_len": [4, 8],
              "sequence_length": [2, "max_len"],
              "claims": [{**BASE, "quantity": "setup_s", **claim}]}
    with pytest.raises(ValueError, match=re.escape(fragment)):
        configcheck.validate_config(config)


def test_a_claim_from_a_file_is_named_by_its_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = {**BASE, "quantity": "setup_s", "direction": "static > dynamic"}
    (tmp_path / "mine.yaml").write_text(json.dumps([good, {**good, "id": "d", "quantity": "x"}]))
    with pytest.raises(ValueError, match=re.escape("claims_from: 'mine.yaml' is not a list of "
                                                   "files")):
        configcheck.check_config_files([], {"max_len": [4], "claims_from": "mine.yaml"}, None)
    # the inline claim comes first: the file's entry 1 is the merged list's claims.2
    with pytest.raises(ValueError, match=re.escape(
            "claims.2.quantity: 'x' is not one of") + ".*" + re.escape(
            "(entry 1 of claims_from file mine.yaml)")):
        configcheck.check_config_files([], {"max_len": [4], "claims_from": ["mine.yaml"],
                                 "claims": [{**good, "id": "inline"}]}, None)
