"""The intervals' stated confidence is their coverage (rnnbench.stats.intervals), shown by simulation:
per-process values drawn from known distributions (log-normal with a 10 % spread between
processes, 5 % of processes 1.5x slower, and a machine that drifts), at the shipped config's
repeats, 2000 simulated experiments each; the nominal 95 % interval must cover the true value
in 93-97 % of them (the binomial standard error of a coverage of 0.95 over 2000 experiments
is 0.5 %, so the band is 4 standard errors wide on each side)."""

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from rnnbench.stats import intervals

REPO = Path(__file__).resolve().parents[2]
REPEATS = yaml.safe_load((REPO / "config.yaml").read_text())["repeats"]
EXPERIMENTS = 2000
SPREAD = 0.10  # sd of log per-process values: a 10 % spread between processes
OUTLIER_P, OUTLIER = 0.05, math.log(1.5)  # 5 % of processes 1.5x slower


PAIR_SPREAD = 0.05  # sd of log(static / dynamic) of adjacent runs (the 5 pairs: 0.05)
PAIR_OUTLIER = math.log(1.1)  # their outlier: one pair of five 10 % off (1.50 against 1.36)


def processes(rng, shape, log_centre, spread=SPREAD, outlier=OUTLIER):
    """log per-process values: log_centre + N(0, spread) + an outlier slowdown."""
    return (log_centre + rng.normal(0, spread, shape)
            + (rng.random(shape) < OUTLIER_P) * outlier)


def drift(rng, shape):
    """A machine whose speed drifts between pairs of runs, the same for both runs of a pair:
    a random walk over the repeats, 8 % a pair; with the runs' own PAIR_SPREAD / sqrt(2) it
    makes a spread between processes of about 10 % at the shipped repeats."""
    return np.cumsum(rng.normal(0, 0.08, shape), axis=-1)


def paired_processes(rng, shape, log_centre, outlier=PAIR_OUTLIER):
    """One side of pairs on a drifting machine, without the drift."""
    return processes(rng, shape, log_centre, PAIR_SPREAD / math.sqrt(2), outlier)


def covered(estimates):
    lows, highs, truth = estimates
    return np.mean((np.asarray(lows) <= truth) & (truth <= np.asarray(highs)))


def test_the_shipped_repeats_are_enough():
    assert REPEATS >= intervals.MIN_REPEATS


@pytest.mark.parametrize("repeats", sorted({intervals.MIN_REPEATS, REPEATS}))
def test_geomean_interval_covers_95_percent(repeats):
    rng = np.random.default_rng(1)
    logs = processes(rng, (EXPERIMENTS, repeats), math.log(0.004))
    truth = math.exp(math.log(0.004) + OUTLIER_P * OUTLIER)  # exp(E[log x]) of the mixture
    cis = [intervals.geomean_ci(np.exp(row))[1:] for row in logs]
    coverage = covered(([c[0] for c in cis], [c[1] for c in cis], truth))
    assert 0.93 <= coverage <= 0.97, coverage


@pytest.mark.parametrize("repeats", sorted({intervals.MIN_REPEATS, REPEATS}))
def test_paired_ratio_interval_covers_95_percent_on_a_drifting_machine(repeats):
    rng = np.random.default_rng(2)
    shape = (EXPERIMENTS, repeats)
    machine = drift(rng, shape)
    static = paired_processes(rng, shape, math.log(0.005)) + machine
    dynamic = paired_processes(rng, shape, math.log(0.004)) + machine
    truth = 0.005 / 0.004
    cis = [intervals.ratio_ci(np.exp(s), np.exp(d), paired=True)[1:]
           for s, d in zip(static, dynamic)]
    coverage = covered(([c[0] for c in cis], [c[1] for c in cis], truth))
    assert 0.93 <= coverage <= 0.97, coverage


def test_paired_ratio_interval_is_conservative_with_large_outliers():
    """A process 1.5x slower is 8 pair spreads off: when one falls in an experiment (46 % of
    them at 6 repeats), the paired interval widens more than needed, so it covers more than
    95 %, never less."""
    rng = np.random.default_rng(8)
    shape = (EXPERIMENTS, REPEATS)
    machine = drift(rng, shape)
    static = paired_processes(rng, shape, math.log(0.005), OUTLIER) + machine
    dynamic = paired_processes(rng, shape, math.log(0.004), OUTLIER) + machine
    cis = [intervals.ratio_ci(np.exp(s), np.exp(d), paired=True)[1:]
           for s, d in zip(static, dynamic)]
    assert 0.95 <= covered(([c[0] for c in cis], [c[1] for c in cis], 1.25)) <= 0.99


def test_pairing_narrows_the_interval_on_a_drifting_machine():
    """The same experiments analysed paired and unpaired (Welch): both cover, the paired
    interval is narrower, since it removes the drift both runs of a pair share."""
    rng = np.random.default_rng(3)
    shape = (EXPERIMENTS, REPEATS)
    machine = drift(rng, shape)
    static = np.exp(paired_processes(rng, shape, math.log(0.005)) + machine)
    dynamic = np.exp(paired_processes(rng, shape, math.log(0.004)) + machine)
    widths = {}
    for paired in (True, False):
        cis = [intervals.ratio_ci(s, d, paired=paired) for s, d in zip(static, dynamic)]
        assert covered(([c[1] for c in cis], [c[2] for c in cis], 1.25)) >= 0.93
        widths[paired] = np.median([math.log(c[2] / c[1]) for c in cis])
    assert widths[True] < 0.75 * widths[False], widths


@pytest.mark.parametrize("repeats", sorted({intervals.MIN_REPEATS, REPEATS}))
def test_welch_ratio_interval_covers_95_percent(repeats):
    """Unpaired sides of different sizes (a partial run), no drift."""
    rng = np.random.default_rng(4)
    static = processes(rng, (EXPERIMENTS, repeats), math.log(0.005))
    dynamic = processes(rng, (EXPERIMENTS, repeats + 1), math.log(0.004))
    cis = [intervals.ratio_ci(np.exp(s), np.exp(d), paired=False)[1:]
           for s, d in zip(static, dynamic)]
    coverage = covered(([c[0] for c in cis], [c[1] for c in cis], 1.25))
    assert 0.93 <= coverage <= 0.97, coverage


def _breakeven_experiments(rng, repeats, step_s, dynamic_step_s):
    """Per-repeat pairs of runs on a machine whose speed varies between pairs (a 10 % random
    effect shared by both runs of a pair, on setup and step alike): static sets up in 8 s and
    dynamic in 0.8 s (medians), their steps as given. Returns (gaps, gains, truth), truth the
    break-even of the expected values, E[gap] / E[gain]."""
    shape = (EXPERIMENTS, repeats)
    machine = rng.normal(0, SPREAD, shape)
    s_setup = np.exp(processes(rng, shape, math.log(8.0)) + machine)
    d_setup = np.exp(processes(rng, shape, math.log(0.8)) + machine)
    s_step = np.exp(processes(rng, shape, math.log(step_s)) + machine)
    d_step = np.exp(processes(rng, shape, math.log(dynamic_step_s)) + machine)
    # E[exp(N(m, s^2))] = exp(m + s^2 / 2); the outliers scale a mean by 1 - p + p * 1.5
    scale = math.exp(SPREAD ** 2 / 2) * (1 - OUTLIER_P + OUTLIER_P * 1.5)
    truth = (8.0 - 0.8) * scale / ((dynamic_step_s - step_s) * scale)
    return s_setup - d_setup, d_step - s_step, truth


@pytest.mark.parametrize("repeats", sorted({intervals.MIN_REPEATS, REPEATS}))
def test_breakeven_interval_covers_95_percent(repeats):
    rng = np.random.default_rng(5)
    gaps, gains, truth = _breakeven_experiments(rng, repeats, 0.003, 0.005)
    cis = [intervals.breakeven_ci(a, b)[1:] for a, b in zip(gaps, gains)]
    coverage = covered(([c[0] for c in cis], [c[1] for c in cis], truth))
    assert 0.93 <= coverage <= 0.97, coverage


def test_breakeven_interval_says_never_when_static_is_slower_per_step():
    """Static slower per step: the truth is never; the interval reaches never (inf) in at
    least 95 % of experiments, and its estimate says never."""
    rng = np.random.default_rng(6)
    gaps, gains, _ = _breakeven_experiments(rng, REPEATS, 0.005, 0.004)
    cis = [intervals.breakeven_ci(a, b) for a, b in zip(gaps, gains)]
    assert np.mean([c[2] == math.inf for c in cis]) >= 0.95
    assert np.mean([c[0] == math.inf for c in cis]) >= 0.95


def test_percentile_bootstrap_of_three_medians_undercovers():
    """Why the bootstrap went: over 3 values its interval cannot leave their range, which
    holds the median with probability 1 - 2 (1/2)^3 = 75 %."""
    rng = np.random.default_rng(7)
    logs = rng.normal(0, SPREAD, (EXPERIMENTS, 3))
    within = (logs.min(axis=1) <= 0) & (0 <= logs.max(axis=1))
    assert abs(within.mean() - 0.75) < 0.03


def test_degenerate_inputs():
    assert intervals.geomean_ci(np.array([2.0, 2.0, 2.0])) == (2.0, 2.0, 2.0)
    assert all(math.isnan(x) for x in intervals.geomean_ci(np.array([1.0, math.nan])))
    estimate, low, high = intervals.geomean_ci(np.array([3.0]))
    assert estimate == pytest.approx(3.0) and math.isnan(low) and math.isnan(high)
    ratio, low, high = intervals.ratio_ci(np.array([2.0, 2.0]), np.array([1.0, 1.0]), True)
    assert (ratio, low, high) == pytest.approx((2.0, 2.0, 2.0))
    with pytest.raises(ValueError, match="2 static and 3 dynamic"):
        intervals.ratio_ci(np.ones(2), np.ones(3), paired=True)
    # static sets up no slower and steps faster: break-even at 0
    assert intervals.breakeven_ci(np.array([-1.0, -1.2]), np.array([0.1, 0.2]))[0] == 0.0
    # a clear gain: a bounded interval around gap / gain
    steps, low, high = intervals.breakeven_ci(np.array([10.0, 10.5, 9.5]),
                                              np.array([0.010, 0.0101, 0.0099]))
    assert steps == pytest.approx(1000.0) and low < 1000.0 < high < math.inf


@pytest.mark.parametrize("low, high, edge, side", [
    (1.1, 1.5, 1.0, "above"), (0.5, 0.9, 1.0, "below"), (0.9, 1.1, 1.0, "across"),
    (1.0, 1.2, 1.0, "across"),  # touching 1 is no side
    (math.nan, math.nan, 1.0, "across"), (math.nan, 0.5, 1.0, "across"),
    (0.1, 0.2, 0.0, "above"), (-0.2, -0.1, 0.0, "below"),  # a slope against 0
])
def test_side_of_one(low, high, edge, side):
    assert intervals.side_of_one(low, high, edge) == side


def _rows_with_edges(rng, rows, n):
    """Per-process values [rows, n] with the scalar functions' edge cases among them: a NaN, a
    zero, a negative value, and all values equal."""
    values = np.exp(rng.normal(0, 0.3, (rows, n)))
    values[1, 0] = np.nan
    values[2, -1] = 0.0
    values[3, 0] = -1.0
    values[4] = 0.25
    return values


@pytest.mark.parametrize("n", [1, 2, 3, 6, 9])
def test_geomean_rows_are_the_scalar_answers_bit_for_bit(n):
    values = _rows_with_edges(np.random.default_rng(n), 40, n)
    rows = np.column_stack(intervals.geomean_ci_rows(values))
    alone = np.array([intervals.geomean_ci(row) for row in values])
    np.testing.assert_array_equal(rows, alone)  # NaN where NaN, every other bit alike


@pytest.mark.parametrize("n, m, paired", [(6, 6, True), (3, 3, True), (1, 1, True),
                                          (6, 5, False), (2, 4, False), (3, 3, False)])
def test_ratio_rows_are_the_scalar_answers_bit_for_bit(n, m, paired):
    rng = np.random.default_rng(10 * n + m)
    static, dynamic = _rows_with_edges(rng, 40, n), _rows_with_edges(rng, 40, m)[::-1].copy()
    dynamic[5] = static[5, :m] if n >= m and paired else dynamic[5]  # a ratio of exactly 1
    rows = np.column_stack(intervals.ratio_ci_rows(static, dynamic, paired))
    alone = np.array([intervals.ratio_ci(s, d, paired) for s, d in zip(static, dynamic)])
    np.testing.assert_array_equal(rows, alone)
    sides = intervals.sides_of_one(rows[:, 1], rows[:, 2])
    words = {-1: "below", 0: "across", 1: "above"}
    assert [words[side] for side in sides] == [intervals.side_of_one(low, high)
                                               for _, low, high in alone]


def test_ratio_rows_refuse_unequal_pairs():
    with pytest.raises(ValueError, match="paired: 3 static and 2 dynamic"):
        intervals.ratio_ci_rows(np.ones((2, 3)), np.ones((2, 2)), True)


def test_groups_of_gives_each_keys_rows_in_their_order():
    keys = np.array(["b", "a", "c", "a", "b", "b"], dtype=object)
    values = np.arange(6.0)
    parts = [part for (part,) in intervals.groups_of(keys, values)]
    expected = [values[keys == key] for key in np.unique(keys)]
    assert [part.tolist() for part in parts] == [part.tolist() for part in expected]
