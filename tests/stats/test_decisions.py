"""The decisions at a practical margin (rnnbench.stats.intervals.decide, docs/method.md,
Decisions): their boundaries, and their error rates by simulation. Where the true ratio lies
on a margin (the hardest case for each wrong decision), a decision past it may be made in at
most 2.5 % of experiments (each is a one-sided test at 2.5 %); allowed: 3.5 % over 2000
experiments (the binomial standard error of 2.5 % is 0.35 %, so 3 standard errors). Noise:
paired log-normal processes on a drifting machine (tests/stats/test_intervals.py's), and
static processes that fall into one of two equally likely modes 1.5x apart (as static_rnn's
do here: docs/figures/map/FINDINGS.md, "Repeats that disagree"). A rare slow mode is another
matter: no interval over 6 processes sees a mode none of them fell into
(test_a_rare_slow_mode_defeats_six_repeats)."""

import math

import numpy as np
import pytest
from test_intervals import REPEATS, drift, paired_processes

from rnnbench.stats import intervals

EXPERIMENTS = 2000
MARGIN = 0.1
ALLOWED = 0.035


@pytest.mark.parametrize("low, high, margin, decision", [
    (0.80, 0.90, 0.1, "below"), (0.80, 0.91, 0.1, "undecided"), (1.11, 1.3, 0.1, "above"),
    (0.95, 1.05, 0.1, "within"), (1 / 1.1, 1.1, 0.1, "within"), (0.9, 1.05, 0.1, "undecided"),
    (0.95, 1.05, 0.0, "undecided"), (0.95, 0.99, 0.0, "below"), (1.0, 1.0, 0.0, "undecided"),
    (math.nan, math.nan, 0.1, "undecided"), (0.5, math.nan, 0.1, "undecided"),
])
def test_decision_boundaries(low, high, margin, decision):
    assert intervals.decide(low, high, margin) == decision


def test_margin_zero_is_the_side_of_one():
    rng = np.random.default_rng(0)
    for low, high in np.sort(rng.uniform(0.5, 1.5, (500, 2)), axis=1):
        side = intervals.side_of_one(low, high)
        assert intervals.decide(low, high, 0.0) == {"across": "undecided"}.get(side, side)


@pytest.mark.parametrize("decision, claimed, verdict", [
    ("below", "below", "holds"), ("above", "below", "does not hold"),
    ("within", "below", "does not hold"), ("undecided", "above", "inconclusive"),
    ("across", "above", "inconclusive")])
def test_claim_verdicts(decision, claimed, verdict):
    assert intervals.claim_verdict(decision, claimed) == verdict


def bimodal(rng, shape, slow_share, apart=math.log(1.5)):
    """log slowdowns of processes that land in a slow mode ``apart`` off the fast one with
    probability ``slow_share``, and the log of the true geometric mean's factor."""
    return (rng.random(shape) < slow_share) * apart, slow_share * apart


def decisions(true_ratio, noise, repeats=REPEATS, seed=0, slow_share=0.5):
    """The share of each decision over EXPERIMENTS simulated cells at ``true_ratio`` (the
    geometric-mean ratio static / dynamic), with ``noise`` 'lognormal' or 'bimodal' (static's
    processes in the slow mode with probability ``slow_share``)."""
    rng = np.random.default_rng(seed)
    shape = (EXPERIMENTS, repeats)
    machine = drift(rng, shape)
    dynamic = paired_processes(rng, shape, math.log(0.004), outlier=0.0) + machine
    static = paired_processes(rng, shape, math.log(0.004 * true_ratio), outlier=0.0) + machine
    if noise == "bimodal":
        modes, shift = bimodal(rng, shape, slow_share)
        static = static + modes - shift
    made = [intervals.decide(*intervals.ratio_ci(np.exp(s), np.exp(d), paired=True)[1:],
                             MARGIN) for s, d in zip(static, dynamic)]
    return {name: made.count(name) / EXPERIMENTS for name in intervals.DECISIONS}


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["lognormal", "bimodal"])
def test_wrong_decisions_at_the_margins_stay_under_2_5_percent(noise):
    at_low = decisions(1 / (1 + MARGIN), noise, seed=1)
    at_high = decisions(1 + MARGIN, noise, seed=2)
    assert at_low["below"] <= ALLOWED, at_low
    assert at_low["within"] <= ALLOWED, at_low
    assert at_high["above"] <= ALLOWED, at_high
    assert at_high["within"] <= ALLOWED, at_high


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["lognormal", "bimodal"])
def test_clear_cells_are_decided(noise):
    """Power, so the error test above cannot pass by deciding nothing: a 30 % gain is
    'below' in most experiments, and, without the modes, an equal pair 'within'."""
    assert decisions(0.7, noise, seed=3)["below"] >= (0.8 if noise == "lognormal" else 0.5)
    if noise == "lognormal":
        assert decisions(1.0, noise, seed=4)["within"] >= 0.5


@pytest.mark.slow
def test_a_rare_slow_mode_defeats_six_repeats():
    """With static's slow mode at 30 %, all 6 processes land in the fast one in 0.7^6 = 12 %
    of cells; the interval then sits wholly below the true ratio, and 'below' is decided
    wrongly at about that rate, far over 2.5 % (what docs/method.md warns of)."""
    wrong = decisions(1 / (1 + MARGIN), "bimodal", repeats=6, seed=1, slow_share=0.3)["below"]
    assert 0.07 <= wrong <= 0.7 ** 6 + 0.02, wrong
