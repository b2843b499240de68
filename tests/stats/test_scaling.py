"""Scaling laws (rnnbench.stats.scaling): the line, its lack-of-fit test, the prediction interval's
coverage by simulation, a held-out point, and the FINDINGS section on hand-made runs."""

import numpy as np
import pandas as pd
import pytest

from conftest import make_result
from rnnbench.report import findings
from rnnbench.results import load
from rnnbench.stats import scaling
from rnnbench.stats.summary import summarize
from test_results import write_results


def test_a_line_through_repeats_is_found_exactly():
    x = np.repeat([25.0, 50.0, 100.0], 3)
    law = scaling.fit_line(x, 0.2 + 0.113 * x, at=[200.0])
    assert law["slope"] == pytest.approx(0.113) and law["intercept"] == pytest.approx(0.2)
    assert law["r2"] == pytest.approx(1.0)
    assert law["predictions"][0][1] == pytest.approx(0.2 + 0.113 * 200)
    with pytest.raises(ValueError, match="need 3 and 2"):
        scaling.fit_line(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0]))


def test_the_prediction_interval_covers_95_percent_of_new_runs():
    """2000 simulated grids: 3 repeats at max_len 25, 50, 100 of a linear cost with 10 %
    noise; the interval at max_len 200 must hold a new run 93-97 % of the time."""
    rng = np.random.default_rng(0)
    x = np.repeat([25.0, 50.0, 100.0], 3)
    covered = 0
    for _ in range(2000):
        y = 0.5 + 0.1 * x + rng.normal(0, 1.0, len(x))
        _, _, low, high = scaling.fit_line(x, y, at=[200.0])["predictions"][0]
        covered += low <= 0.5 + 0.1 * 200 + rng.normal(0, 1.0) <= high
    assert 0.93 <= covered / 2000 <= 0.97


def test_a_held_out_max_len_is_predicted_and_a_curve_is_called_a_poor_fit():
    rng = np.random.default_rng(1)
    lengths = [25.0, 50.0, 100.0, 200.0]
    y = {m: 0.3 + 0.113 * m + rng.normal(0, 0.2, 3) for m in lengths}
    x_fit = np.repeat(lengths[:3], 3)
    law = scaling.fit_line(x_fit, np.concatenate([y[m] for m in lengths[:3]]), at=[200.0])
    _, estimate, low, high = law["predictions"][0]
    assert all(low <= value <= high for value in y[200.0])  # the held-out runs
    assert not law["lack_of_fit_p"] < scaling.LACK_OF_FIT_ALPHA
    curve = 0.001 * x_fit ** 2 + rng.normal(0, 0.05, len(x_fit))
    assert scaling.fit_line(x_fit, curve)["lack_of_fit_p"] < scaling.LACK_OF_FIT_ALPHA


def test_findings_state_each_law_with_its_extrapolation(tmp_path):
    records = []
    for max_len in (10, 20, 40):
        for repeat in (1, 2, 3):
            jitter = 1 + 0.01 * repeat
            for impl, per_step in (("static", 0.1), ("dynamic", 0.0)):
                record = make_result(impl, f"c{max_len}", repeat, max_len=max_len,
                                     setup=((0.5 + per_step * max_len) * jitter, 0.5, 0.5))
                records.append(record)
    runs = load.load_results(write_results(tmp_path, records))
    table = scaling.scaling_table(runs, {"max_len": [3000]})
    static = table[(table["impl"] == "static")
                   & (table["quantity"] == "graph_construction_s")].iloc[0]
    assert static["slope"] == pytest.approx(0.1, rel=0.05) and static["at"] == 3000
    assert static["predicted_low"] < 0.5 + 0.1 * 3000 * 1.02 < static["predicted_high"]
    text = findings.findings_markdown(summarize(runs), runs, [], {
        "margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1,
        "extrapolate": {"max_len": [3000]}})
    assert "## Scaling laws" in text and "graph construction (s)" in text
    assert "at 3000, 75x the largest fitted" in text  # how far the law is carried
    assert scaling._reach(5, "10, 20, 40") == ", 1/2 of the smallest fitted"
    assert scaling._reach(30, "10, 20, 40") == ""
    one = scaling.scaling_section(scaling.scaling_table(runs[runs["max_len"] == 10]))
    assert one[0].startswith("No scaling law: the grid varies none of max_len")


def test_a_long_scaling_table_is_folded_and_an_untested_law_is_not_said_to_fit(tmp_path):
    """Over FOLD_ROWS laws go under an HTML <details> (FINDINGS' later sections stay in
    reach); a law through 2 values of an axis has no lack-of-fit test and says so."""
    records = [make_result(impl, f"c{max_len}", repeat, max_len=max_len,
                           setup=(0.5 + 0.1 * max_len + 0.01 * repeat, 0.5, 0.5))
               for max_len in (10, 20) for repeat in (1, 2, 3) for impl in ("static", "dynamic")]
    table = scaling.scaling_table(load.load_results(write_results(tmp_path, records)))
    short = "\n".join(scaling.scaling_section(table))
    assert "<details>" not in short and "untested (2 values, or no repeats)" in short
    assert " fits (no test)" not in short
    long = pd.concat([table] * (scaling.FOLD_ROWS // len(table) + 1))
    folded = scaling.scaling_section(long)
    assert folded[2].startswith(f"<details><summary>{len(long)} laws") and folded[-2] == "</details>"
