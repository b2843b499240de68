"""Aggregation arithmetic on hand-made results with known answers (rnnbench.results)."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from conftest import make_result
from rnnbench import results


@pytest.mark.parametrize("static_setup, static_step, dynamic_setup, dynamic_step, expected", [
    (10.0, 1.0, 2.0, 2.0, 9),       # gap 8 s, gain 1 s/step: equal at 8, below from 9
    (10.0, 1.0, 2.0, 3.0, 5),       # gap 8, gain 2: equal at 4, below from 5
    (10.5, 1.0, 2.0, 3.0, 5),       # gap 8.5, gain 2: 4.25 -> 5
    (1.0, 1.0, 2.0, 3.0, 0),        # cheaper setup and faster steps: from the start
    (10.0, 3.0, 2.0, 2.0, None),    # slower steps, dearer setup: never
    (10.0, 2.0, 2.0, 2.0, None),    # equal steps, dearer setup: never
    (1.0, 2.0, 2.0, 2.0, 0),        # equal steps, cheaper setup: from the start
    (1.0, 3.0, 2.0, 2.0, None),     # ahead at first, overtaken later: not for good
])
def test_breakeven_steps(static_setup, static_step, dynamic_setup, dynamic_step, expected):
    assert results.breakeven_steps(static_setup, static_step, dynamic_setup, dynamic_step) == expected


def test_breakeven_is_where_totals_cross():
    n = results.breakeven_steps(20.0, 0.03, 0.7, 0.04)
    static = lambda k: 20.0 + k * 0.03  # noqa: E731
    dynamic = lambda k: 0.7 + k * 0.04  # noqa: E731
    assert static(n) < dynamic(n) and static(n - 1) >= dynamic(n - 1)


def test_median_ci():
    median, low, high = results.median_ci(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    assert median == 3.0
    assert 1.0 <= low <= median <= high <= 100.0
    assert results.median_ci(np.array([2.0, 2.0, 2.0])) == (2.0, 2.0, 2.0)
    median, low, high = results.median_ci(np.array([5.0]))
    assert median == 5.0 and math.isnan(low) and math.isnan(high)


def test_ratio_ci_brackets_the_ratio_of_medians():
    ratio, low, high = results.ratio_ci(np.array([4.0, 4.2, 3.8]), np.array([2.0, 2.1, 1.9]))
    assert ratio == pytest.approx(2.0)
    assert low <= ratio <= high
    assert low >= 3.8 / 2.1 - 1e-12 and high <= 4.2 / 1.9 + 1e-12


def write_results(tmp_path, records):
    paths = []
    for i, record in enumerate(records):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(record))
        paths.append(path)
    return paths


def hand_made_runs(tmp_path):
    """Cell c1: static setup 3.5 s (1 + 0.5 + 2) and 0.01 s steps, dynamic setup 0.5 s and
    0.02 s steps, identical over 3 repeats: break-even after (3.5 - 0.5) / 0.01 + 1 steps."""
    records = []
    for repeat in (1, 2, 3):
        records.append(make_result("static", "c1", repeat, setup=(1.0, 0.5, 2.0),
                                   step_s=(0.01, 0.01, 0.01)))
        records.append(make_result("dynamic", "c1", repeat, setup=(0.2, 0.1, 0.2),
                                   step_s=(0.02, 0.02, 0.02)))
        records.append(make_result("static", "c2", repeat, max_len=20, sequence_length="max_len",
                                   setup=(4.0, 1.0, 5.0), step_s=(0.05, 0.06, 0.07)))
        records.append(make_result("dynamic", "c2", repeat, max_len=20,
                                   sequence_length="max_len", setup=(0.2, 0.1, 0.2),
                                   step_s=(0.02, 0.03, 0.04)))
    return write_results(tmp_path, records)


def test_load_results_is_tidy(tmp_path):
    runs = results.load_results(hand_made_runs(tmp_path))
    assert len(runs) == 12
    assert set(runs["impl"]) == {"static", "dynamic"}
    assert runs.loc[0, "setup_s"] == pytest.approx(runs.loc[0, "graph_construction_s"]
                                                   + runs.loc[0, "session_setup_s"]
                                                   + runs.loc[0, "first_step_s"])
    assert set(runs["sequence_length"]) == {"5", "full"}
    assert not runs.duplicated(["cell_id", "impl", "repeat"]).any()


def test_load_results_names_a_bad_file(tmp_path):
    record = make_result()
    del record["timings"]["step_s"]
    (bad,) = write_results(tmp_path, [record])
    with pytest.raises(ValueError, match=r"r0.json: not a valid result: 'step_s'"):
        results.load_results([bad])
    with pytest.raises(ValueError, match="no result files"):
        results.load_results([])


def test_summarize_known_answers(tmp_path):
    summary = results.summarize(results.load_results(hand_made_runs(tmp_path)))
    c1 = summary.set_index("cell_id").loc["c1"]
    assert c1["static_setup_s"] == pytest.approx(3.5)
    assert c1["dynamic_setup_s"] == pytest.approx(0.5)
    assert c1["ratio_setup_s"] == pytest.approx(7.0)
    assert c1["ratio_median_step_s"] == pytest.approx(0.5)
    assert c1["static_repeats"] == 3
    assert c1["breakeven_steps"] == 301  # (3.5 - 0.5) / 0.01 = 300: equal there, below after
    c2 = summary.set_index("cell_id").loc["c2"]
    assert c2["static_median_step_s"] == pytest.approx(0.06)
    assert pd.isna(c2["breakeven_steps"])  # static steps slower and setup dearer: never
    assert c2["ratio_median_step_s"] == pytest.approx(2.0)
    # identical repeats: the interval is the point; never stays never
    assert (c1["breakeven_steps_ci_low"], c1["breakeven_steps_ci_high"]) == (301, 301)
    assert c2["breakeven_steps_ci_low"] == c2["breakeven_steps_ci_high"] == math.inf
    # hand-made steps have IQR / median 0 and too few steps to detect a warm-up
    assert not c1["unstable"] and not c1["warmup_too_short"]
    assert pd.isna(c1["static_max_settled_after_step"])


def test_fraction_of_peak(tmp_path):
    runs = results.load_results(hand_made_runs(tmp_path))
    # hand-made results: 1e6 FLOP per step; c1's static steps take 0.01 s, dynamic 0.02 s
    c1 = runs[runs["cell_id"] == "c1"].set_index("impl")["achieved_flop_per_s"]
    assert c1["static"].tolist() == pytest.approx([1e8] * 3)
    summary = results.summarize(runs, peak_flop_per_s={(1, "2.21"): 1e9}).set_index("cell_id")
    assert summary.loc["c1", "static_fraction_of_peak"] == pytest.approx(0.1)
    assert summary.loc["c1", "dynamic_fraction_of_peak"] == pytest.approx(0.05)
    assert "static_fraction_of_peak" not in results.summarize(runs)  # no peak measured


def test_each_tensorflow_version_is_compared_with_its_own_peak(tmp_path):
    records = [make_result(impl, cell_id, 1, tf_version=version)
               for cell_id, version in (("c1", "2.21"), ("c1_tf2.12", "2.12"))
               for impl in ("static", "dynamic")]
    runs = results.load_results(write_results(tmp_path, records))
    assert runs.set_index("cell_id")["tensorflow_version"].to_dict() == {
        "c1": "2.21.0", "c1_tf2.12": "2.12.0"}
    summary = results.summarize(runs, peak_flop_per_s={(1, "2.21"): 1e9, (1, "2.12"): 2e9})
    # 1e6 FLOP per 0.01 s step: 1e8 FLOP/s
    assert summary.set_index("tf_version")["static_fraction_of_peak"].to_dict() == {
        "2.21": pytest.approx(0.1), "2.12": pytest.approx(0.05)}
    with pytest.raises(ValueError, match=r"\(1, '2.12'\)"):
        results.summarize(runs, peak_flop_per_s={(1, "2.21"): 1e9})


def test_a_spread_above_5_percent_flags_the_cell_unstable(tmp_path):
    records = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic")
               for repeat in (1, 2)]
    records[3]["timings"]["step_iqr_over_median"] = 0.051  # one dynamic run spreads 5.1 %
    summary = results.summarize(results.load_results(write_results(tmp_path, records)))
    assert summary["unstable"].tolist() == [True]
    records[3]["timings"]["step_iqr_over_median"] = 0.05  # the threshold itself is stable
    summary = results.summarize(results.load_results(write_results(tmp_path, records)))
    assert summary["unstable"].tolist() == [False]


def test_breakeven_interval_over_repeats():
    def runs(setups, steps):
        return pd.DataFrame({"setup_s": setups, "median_step_s": steps})

    # static: setup 10 s, steps 0.01 s; dynamic: setup 1 s, steps 0.02 s or 0.03 s by repeat.
    static = runs([10.0, 10.0, 10.0], [0.01, 0.01, 0.01])
    dynamic = runs([1.0, 1.0, 1.0], [0.02, 0.02, 0.03])
    point, low, high = results.breakeven_ci(static, dynamic)
    assert point == 901  # medians: (10 - 1) / (0.02 - 0.01) = 900, equal there
    # resampled dynamic medians are 0.02 or 0.03: break-even 901 or (10 - 1) / 0.02 + 1 = 451
    assert (low, high) == (451, 901)
    # where some resamples make static's steps slower, the interval reaches 'never'
    dynamic = runs([1.0, 1.0, 1.0], [0.02, 0.005, 0.02])
    static = runs([10.0, 10.0, 10.0], [0.01, 0.01, 0.01])
    point, low, high = results.breakeven_ci(static, dynamic)
    assert point == 901 and high == math.inf
    _, low, high = results.breakeven_ci(static.iloc[:1], dynamic)  # one repeat: no interval
    assert math.isnan(low) and math.isnan(high)


@pytest.mark.parametrize("steps, expected", [
    ([1.0] * 20, 0),  # flat: nothing to settle
    ([10.0] * 5 + [1.0] * 15, 5),  # 5 slow steps
    ([10.0] * 8 + [1.0] * 16, 8),
    ([1.0, 1.1] * 10, 0),  # steady noise within its own IQR
    ([10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 1.0, 1.0, 1.0], 0),  # lone outliers
    ([1.0] * 9, None),  # fewer than 2 windows
])
def test_settled_after_step(steps, expected):
    assert results.settled_after_step(steps) == expected


def test_summarize_names_a_cell_missing_an_implementation(tmp_path):
    runs = results.load_results(write_results(tmp_path, [make_result("static", "lonely")]))
    with pytest.raises(ValueError, match="cell lonely: no dynamic runs"):
        results.summarize(runs)


def test_cumulative_time_and_csv_round_trip(tmp_path):
    summary = results.summarize(results.load_results(hand_made_runs(tmp_path)))
    cumulative = results.cumulative_time(summary)
    c1 = cumulative[cumulative["cell_id"] == "c1"]
    assert c1["steps"].max() == 602  # twice the break-even
    at_zero = c1[c1["steps"] == 0].set_index("impl")["total_s"]
    assert at_zero["static"] == pytest.approx(3.5) and at_zero["dynamic"] == pytest.approx(0.5)
    assert cumulative[cumulative["cell_id"] == "c2"]["steps"].max() == 100  # never: 100 steps
    summary.to_csv(tmp_path / "summary.csv", index=False)
    again = results.read_table(tmp_path / "summary.csv")
    assert again["breakeven_steps"].tolist()[0] == 301 and pd.isna(again["breakeven_steps"][1])
    assert again["sequence_length"].tolist() == ["5", "full"]
