"""Runs pooled with the drift between them (rnnbench.stats.pooling): the interval's coverage
of the machine's long-run ratio by simulation, and the pooled summary of hand-made runs. Each
simulated run draws its own true log ratio about the long-run one (the drift between runs,
sd ``tau``) and measures it with 6 paired processes (log-normal, sd 0.08, or in two equally
likely modes 1.5x apart); 2000 experiments of 3 runs must cover the long-run ratio 93-97 %
of the time (tests/stats/test_intervals.py's band)."""

import math

import numpy as np
import pandas as pd
import pytest

from rnnbench.stats import intervals, pooling

EXPERIMENTS = 2000
TRUE = 0.85


def experiment(rng, runs, tau, noise, repeats=6):
    """Each run's log ratio and standard error, as rules aggregate would give them."""
    logs, errors = [], []
    for theta in math.log(TRUE) + rng.normal(0, tau, runs):
        pairs = theta + rng.normal(0, 0.08, repeats)
        if noise == "bimodal":
            pairs += (rng.random(repeats) < 0.5) * math.log(1.5) - 0.5 * math.log(1.5)
        ratio, low, high = intervals.ratio_ci(np.exp(pairs), np.ones(repeats), paired=True)
        logs.append(math.log(ratio))
        errors.append(pooling.run_standard_error(low, high, repeats))
    return np.array(logs), np.array(errors)


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["lognormal", "bimodal"])
@pytest.mark.parametrize("tau", [0.0, 0.1, 0.3])
def test_the_pooled_interval_covers_the_long_run_ratio(tau, noise):
    rng = np.random.default_rng(int(10 * tau) + (noise == "bimodal"))
    covered = taus = 0
    for _ in range(EXPERIMENTS):
        _, low, high, found = pooling.pool(*experiment(rng, 3, tau, noise))
        covered += low <= TRUE <= high
        taus += found
    assert 0.93 <= covered / EXPERIMENTS <= 0.97, covered / EXPERIMENTS
    # tau is found where the runs drift, and not invented where they do not
    assert abs(taus / EXPERIMENTS - tau) < 0.05 + 0.2 * tau


def test_a_run_standard_error_inverts_its_interval():
    ratio, low, high = intervals.ratio_ci(np.array([1.0, 1.2, 0.9, 1.1]), np.ones(4), paired=True)
    error = pooling.run_standard_error(low, high, 4)
    assert math.exp(math.log(ratio) + intervals.t_quantile(0.95, 3) * error) == \
        pytest.approx(high)
    assert math.isnan(pooling.run_standard_error(math.nan, math.nan, 4))
    assert math.isnan(pooling.pool(np.array([0.1]), np.array([0.05]))[1])


def summary(step_ratio, low, high, setup=(2.0, 0.2)):
    """A one-cell summary row of a run: step ratio and interval, setups, 6 repeats."""
    row = {"cell_id": "c1", "static_repeats": 6, "static_setup_s": setup[0],
           "dynamic_setup_s": setup[1], "static_median_step_s": 0.01 * step_ratio,
           "dynamic_median_step_s": 0.01, "static_peak_rss_mb": 700.0,
           "dynamic_peak_rss_mb": 600.0}
    for name in pooling.POOLED_RATIOS:
        row.update({f"ratio_{name}": step_ratio, f"ratio_{name}_ci_low": low,
                    f"ratio_{name}_ci_high": high})
    return pd.DataFrame([row])


def test_three_runs_pool_into_one_row_with_their_spread(tmp_path):
    runs = [summary(0.74, 0.68, 0.81), summary(1.00, 0.82, 1.22), summary(0.69, 0.52, 0.90)]
    pooled = pooling.pooled_summary(runs).iloc[0]
    logs = np.log([0.74, 1.00, 0.69])
    assert pooled["ratio_median_step_s"] == pytest.approx(math.exp(logs.mean()))
    half = intervals.t_quantile(0.95, 2) * logs.std(ddof=1) / math.sqrt(3)
    assert pooled["ratio_median_step_s_ci_high"] == pytest.approx(math.exp(logs.mean() + half))
    assert pooled["ratio_median_step_s_runs"] == "0.74 1.00 0.69" and pooled["runs"] == 3
    # the break-even from the means: 1.8 s more setup over a gain of 0.01 x (1 - ratio) a step
    assert pooled["breakeven_steps"] == math.ceil(
        1.8 / (pooled["dynamic_median_step_s"] * (1 - pooled["ratio_median_step_s"])))
    assert pooled["breakeven_steps_ci_high"] == math.inf  # the interval reaches past 1
    # written and read back as the README's answer reads it
    from rnnbench.results.load import read_table

    pooling.pooled_summary(runs).to_csv(tmp_path / "pooled.csv", index=False)
    assert read_table(tmp_path / "pooled.csv")["breakeven_steps"].iloc[0] == pooled[
        "breakeven_steps"]
    with pytest.raises(ValueError, match="different cells"):
        pooling.pooled_summary([runs[0], runs[1].assign(cell_id="c2")])
