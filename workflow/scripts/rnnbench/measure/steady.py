"""Find a training run's steady state: when its warm-up ended, and whether it was disturbed.

The numbers behind the defaults: docs/method.md, Warm-up.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

SETTLE_BLOCK = 20
"""Steps per block of the settle test: the last two blocks are compared."""
SETTLE_ALPHA = 0.05
"""The settle test's level: on stationary step times it extends a warm-up that had already
ended in at most this share of runs (its false-alarm rate; tests/measure/test_steady.py)."""
SETTLE_TOLERANCE = 0.02
"""A slowdown of the earlier block below this share of the later block's median counts as
settled however significant: 2 % is about the error of a 500-step median."""
STABILITY_BLOCK = 50
"""Measured steps per block of block_spread."""
DISTURBED_BLOCK_SPREAD = 0.15
"""A run whose 50-step block medians differ by more than this (max / min - 1) was disturbed:
above the 2-7 % of undisturbed processes, below the 44 % of the disturbed one (module
docstring)."""


def still_warming(earlier: np.ndarray, later: np.ndarray, alpha: float = SETTLE_ALPHA,
                  tolerance: float = SETTLE_TOLERANCE) -> bool:
    """Tell whether block ``earlier``'s step times are still slower than block ``later``'s.

    Both tests must hold: the one-sided Mann-Whitney U test (mann_whitney_greater) rejects "no
    slower" at ``alpha``, and the earlier median exceeds the later one by more than
    ``tolerance``. Ranks keep a few slow outlier steps from deciding it.

    Args:
        earlier, later: step times (seconds) of two consecutive blocks.
        alpha: the test's level.
        tolerance: the relative difference of the medians that counts.
    """
    if np.median(earlier) <= (1 + tolerance) * np.median(later):
        return False
    return mann_whitney_greater(earlier, later) < alpha


def mann_whitney_greater(x: np.ndarray, y: np.ndarray) -> float:
    """Return the one-sided p-value of the Mann-Whitney U test that ``x`` tends to exceed ``y``.

    It uses the normal approximation with tie and continuity corrections, as
    scipy.stats.mannwhitneyu with method="asymptotic" (tests/measure/test_steady.py checks it).
    It is written out because a training job may run without scipy (the TF 2.16 image has
    none). Meant for blocks of 20 or more values, where the approximation is good.
    Source: H. B. Mann and D. R. Whitney, Ann. Math. Statist. 18, 1947.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n1, n2 = len(x), len(y)
    combined = np.concatenate([x, y])
    n = n1 + n2
    ranks = np.empty(n)
    ranks[combined.argsort(kind="mergesort")] = np.arange(1, n + 1)
    _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    ranks = (np.bincount(inverse, weights=ranks) / counts)[inverse]  # ties: average ranks
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    ties = float((counts ** 3 - counts).sum())
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    if sigma == 0:
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / sigma
    return 0.5 * math.erfc(z / math.sqrt(2))


def warm_up(step: Callable[[int], float], min_steps: int, max_steps: int,
            block: int = SETTLE_BLOCK) -> tuple[list[float], bool | None]:
    """Run warm-up steps until the step times have settled, from ``min_steps`` to ``max_steps``.

    After ``min_steps`` steps, and then after every ``block`` more, the recent steps are split
    into an earlier and a later half and compared (still_warming). The recent steps are the
    second half of the warm-up so far, at least two blocks, so a slow drift shows. The warm-up
    ends at the first comparison that finds them settled, or at ``max_steps``. A warm-up that
    looks steady for two blocks and then speeds up is not caught here; block_spread flags it in
    the measured steps (docs/method.md, Warm-up).

    Args:
        step: ``step(k)`` runs warm-up step k (0-based) and returns its seconds.
        min_steps, max_steps: the fewest and the most warm-up steps.
        block: steps per compared block.

    Returns:
        The warm-up's step seconds, and whether it settled: True; False (the cap was reached
        while still warming); or None when ``max_steps`` < 2 x ``block`` left nothing to test
        (the warm-up then runs ``min_steps`` steps, a fixed warm-up).

    Raises:
        ValueError: when max_steps < min_steps or min_steps < 0.
    """
    if not 0 <= min_steps <= max_steps:
        raise ValueError(f"warm-up: need 0 <= warmup_steps ({min_steps}) <= max_warmup_steps "
                         f"({max_steps})")
    seconds = [step(k) for k in range(min_steps)]
    if max_steps < 2 * block:
        return seconds, None
    while True:
        if len(seconds) >= 2 * block:
            half = max(block, len(seconds) // 4)
            recent = np.asarray(seconds[-2 * half:])
            warming = still_warming(recent[:half], recent[half:])
            if not warming or len(seconds) >= max_steps:
                return seconds, not warming
        for k in range(len(seconds), min(len(seconds) + block, max_steps)):
            seconds.append(step(k))


def block_spread(step_s: list[float], block: int = STABILITY_BLOCK) -> float | None:
    """Return max / min - 1 of the medians of consecutive blocks of ``block`` measured steps.

    A trailing part block is dropped. None with fewer than two blocks.
    """
    count = len(step_s) // block
    if count < 2:
        return None
    medians = np.median(np.asarray(step_s[:count * block], dtype=float).reshape(count, block),
                        axis=1)
    return float(medians.max() / medians.min() - 1)
