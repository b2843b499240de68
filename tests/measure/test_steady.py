"""The warm-up detector (rnnbench.measure.steady.warm_up) on synthetic step times: stationary noise
(false alarms at most 5 %), a step change, a slow drift; and the disturbed-run measure."""

import numpy as np
import pytest
from scipy import stats

from rnnbench.measure import steady

RUNS = 2000


def noise(rng, count, spread=0.10, spikes=0.02):
    """Stationary step seconds: 4 ms x log-normal noise (sd ``spread``), a share ``spikes``
    of steps 3x slower (the descheduled step of a shared machine)."""
    return 0.004 * np.exp(rng.normal(0, spread, count)) * np.where(
        rng.random(count) < spikes, 3.0, 1.0)


def warm(series, min_steps=40, max_steps=400):
    return steady.warm_up(lambda k: float(series[k]), min_steps, max_steps)


def test_stationary_noise_rarely_extends_the_warm_up():
    rng = np.random.default_rng(0)
    extended = [len(warm(noise(rng, 400))[0]) > 40 for _ in range(RUNS)]
    assert np.mean(extended) <= 0.05


def test_a_step_change_is_waited_out():
    """The first 30 steps 1.5x slower (e.g. a cache or allocator still filling): the warm-up
    ends after them, so the measured steps are the steady ones."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        series = noise(rng, 400)
        series[:30] *= 1.5
        seconds, settled = warm(series)
        assert settled is True
        assert 30 <= len(seconds) <= 100


def test_a_late_step_change_flags_the_measured_steps():
    """Steady for 100 steps, then 1.5x faster: nothing online can foresee it; the warm-up
    ends, and the measured steps' block spread says the run was disturbed."""
    rng = np.random.default_rng(3)
    series = noise(rng, 600)
    series[:100] *= 1.5
    seconds, _ = warm(series)
    measured = list(series[len(seconds):len(seconds) + 500])
    assert len(seconds) < 100
    assert steady.block_spread(measured) > steady.DISTURBED_BLOCK_SPREAD
    assert steady.block_spread(list(noise(rng, 500))) < steady.DISTURBED_BLOCK_SPREAD


def test_a_slow_drift_is_followed_until_it_is_small():
    """Step times that decay from 2x to 1x (time constant 60 steps): the warm-up goes on until
    the remaining excess is a few percent."""
    rng = np.random.default_rng(2)
    excess = []
    for _ in range(50):
        series = noise(rng, 600) * (1 + np.exp(-np.arange(600) / 60.0))
        seconds, settled = warm(series, max_steps=600)
        assert settled is True
        excess.append(np.exp(-len(seconds) / 60.0))
    assert np.median(excess) < 0.06


def test_the_cap_ends_a_warm_up_that_never_settles():
    series = 0.004 * np.linspace(3, 1, 200)  # still speeding up at the cap
    seconds, settled = warm(series, max_steps=120)
    assert len(seconds) == 120 and settled is False


def test_no_test_without_two_blocks():
    seconds, settled = warm(np.full(30, 0.004), min_steps=5, max_steps=30)
    assert len(seconds) == 5 and settled is None
    with pytest.raises(ValueError, match="warmup_steps"):
        warm(np.full(30, 0.004), min_steps=10, max_steps=5)


def test_block_spread():
    assert steady.block_spread([0.01] * 99) is None
    assert steady.block_spread([0.01] * 50 + [0.012] * 50) == pytest.approx(0.2)


def test_mann_whitney_matches_scipy():
    rng = np.random.default_rng(4)
    for _ in range(50):
        x, y = noise(rng, 20), noise(rng, 25) * 0.97
        x[:3] = y[:3]  # ties
        expected = stats.mannwhitneyu(x, y, alternative="greater", method="asymptotic").pvalue
        assert steady.mann_whitney_greater(x, y) == pytest.approx(expected, rel=1e-9)
