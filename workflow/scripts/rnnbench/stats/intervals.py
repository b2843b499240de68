"""Compute confidence intervals over fresh processes, and decide ratios from them.

A geometric mean, a paired or unpaired ratio, a break-even. Method and sources:
docs/method.md, Intervals and Decisions.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterator

import numpy as np

from rnnbench.grid.axes import MIN_REPEATS  # noqa: F401  (the intervals' own bound)

CONFIDENCE = 0.95


def look_confidence(more_repeats: int, confidence: float = CONFIDENCE) -> float:
    """The level of each look's ratio intervals, so that the decisions keep ``confidence``.

    Args:
        more_repeats: the config's ``more_repeats`` (0: one look, after the planned repeats;
            above 0: a second look after more repeats where the first was undecided).
        confidence: the decisions' overall level (two-sided).

    Returns:
        ``confidence`` with one look; with two, 1 - (1 - confidence) / 2 (0.975 for 0.95):
        Bonferroni over the two looks, the simplest repeated confidence intervals (Jennison
        and Turnbull 2000, Group Sequential Methods, ch. 9; docs/method.md, More repeats).
    """
    return confidence if more_repeats == 0 else 1 - (1 - confidence) / 2


def side_of_one(low: float, high: float, edge: float = 1.0) -> str:
    """Say where an interval [low, high] lies against 1 (or ``edge``).

    The one judgement of every verdict: findings' claims (tables.verdict), the other kinds of
    claim (claims.side_verdict) and a fragile ratio (summary.fragile_metrics).

    Args:
        low: the interval's lower bound (NaN where there is none).
        high: its upper bound (NaN where there is none).
        edge: the value to compare with; 1 for a ratio, 0 for a slope.

    Returns:
        'above' (low > edge), 'below' (high < edge), or 'across': the interval holds or
        touches the edge, or a bound is NaN.
    """
    if math.isnan(low) or math.isnan(high):
        return "across"
    return "above" if low > edge else "below" if high < edge else "across"


DECISIONS = ("below", "above", "within", "undecided")
"""decide's answers, for a static / dynamic ratio: static's quantity smaller by more than the
margin, larger by more than it, no practical difference, undecided."""


def decide(low: float, high: float, margin: float) -> str:
    """A ratio's decision with a practical margin, from its 95 % interval.

    Args:
        low, high: the ratio's interval (static / dynamic; a NaN bound where there is none).
        margin: the practical margin m (config ``margin``; 0.1 for 10 %): ratios between
            1 / (1 + m) and 1 + m are no practical difference. 0 gives side_of_one's verdict.

    Returns:
        'below' (high < 1 / (1 + m)), 'above' (low > 1 + m), 'within' (m > 0 and the
        interval inside [1 / (1 + m), 1 + m]), else 'undecided' (also for a NaN bound).
        Each answer but 'undecided' is a one-sided test, or two (Schuirmann's TOST for
        'within'), at 2.5 % (docs/method.md, Decisions).
    """
    if math.isnan(low) or math.isnan(high):
        return "undecided"
    if high < 1 / (1 + margin):
        return "below"
    if low > 1 + margin:
        return "above"
    if margin > 0 and 1 / (1 + margin) <= low and high <= 1 + margin:
        return "within"
    return "undecided"


def side_or_within(low: float, high: float, margin: float) -> str:
    """A ratio's decision as a held-out check counts one: inside the margin, or a side of 1.

    Args:
        low, high: the ratio's 95 % interval (static / dynamic; NaN where there is none).
        margin: the practical margin m, as decide's.

    Returns:
        'within' (decide's), else side_of_one's 'below' or 'above' (the interval excludes 1,
        perhaps by less than the margin), else 'undecided'.
    """
    if decide(low, high, margin) == "within":
        return "within"
    side = side_of_one(low, high)
    return "undecided" if side == "across" else side


def claim_verdict(decision: str, claimed: str) -> str:
    """A claim's verdict from a decision.

    Args:
        decision: decide's answer, or side_of_one's ('across' reads as 'undecided').
        claimed: the side the claim says, 'below' or 'above'.

    Returns:
        'holds' where the decision is the claimed side, 'does not hold' where it is the
        other side or 'within' (no practical difference), else 'inconclusive'.
    """
    if decision == claimed:
        return "holds"
    return "does not hold" if decision in ("below", "above", "within") else "inconclusive"


@lru_cache(maxsize=None)
def t_quantile(confidence: float, df: float) -> float:
    """Return Student's t quantile of a two-sided interval.

    It is scipy.special's stdtrit, the inverse of Student's t distribution function
    (scipy.stats.t.ppf's own routine, without scipy.stats' import of about 0.7 s). Results are
    cached: summarize asks for the same few thousands of times. scipy is imported here, not with
    the module, because the workflow's plan reads MIN_REPEATS.

    Args:
        confidence: the interval's two-sided level (0.95 for 95 %).
        df: degrees of freedom (need not be whole: Welch's).

    Returns:
        The quantile t with P(T <= t) = 0.5 + confidence / 2.
    """
    from scipy import special

    return float(special.stdtrit(df, 0.5 + confidence / 2))


def geomean_ci(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Return the geometric mean of positive per-process values and its t-interval.

    The interval is on the log scale: exp(mean(log x) -/+ t_{n-1} sd(log x) / sqrt(n)).
    Method: docs/method.md, Intervals.

    Args:
        values: positive per-process values [processes], e.g. median step seconds.
        confidence: the interval's two-sided level.

    Returns:
        (estimate, low, high) in the values' unit. (nan, nan, nan) when a value is NaN (a
        quantity not measured) or not positive, or there is none. (estimate, nan, nan) for a
        single value. The value three times when all are equal.
    """
    logs = _logs(values)
    if logs is None:
        return math.nan, math.nan, math.nan
    centre = float(np.mean(logs))
    if len(logs) < 2:
        return math.exp(centre), math.nan, math.nan
    half = t_quantile(confidence, len(logs) - 1) * float(np.std(logs, ddof=1)) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def ratio_ci(static: np.ndarray, dynamic: np.ndarray, paired: bool,
             confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Return static / dynamic as the ratio of geometric means over processes, with its interval.

    Method: docs/method.md, Intervals.

    Args:
        static: positive per-process values of static [repeats].
        dynamic: positive per-process values of dynamic [repeats]. With ``paired``, the i-th of
            each were measured next to each other in time (same length required).
        paired: True for the paired t-interval on log(static_i / dynamic_i), n - 1 degrees of
            freedom; False for Welch's interval on the difference of log-means.
        confidence: the interval's two-sided level.

    Returns:
        (ratio, low, high). (nan, nan, nan) when a value is NaN or not positive.
        (ratio, nan, nan) with fewer than two values on a side.

    Raises:
        ValueError: if ``paired`` and the sides differ in length.
    """
    s, d = _logs(static), _logs(dynamic)
    if s is None or d is None:
        return math.nan, math.nan, math.nan
    if paired and len(s) != len(d):
        raise ValueError(f"paired: {len(s)} static and {len(d)} dynamic values")
    centre = float(np.mean(s) - np.mean(d))
    if len(s) < 2 or len(d) < 2:
        return math.exp(centre), math.nan, math.nan
    if paired:
        diff = s - d
        half = t_quantile(confidence, len(diff) - 1) * float(np.std(diff, ddof=1)) / math.sqrt(len(diff))
    else:
        vs, vd = np.var(s, ddof=1) / len(s), np.var(d, ddof=1) / len(d)
        se2 = float(vs + vd)
        if se2 == 0:
            half = 0.0
        else:
            df = se2 ** 2 / (vs ** 2 / (len(s) - 1) + vd ** 2 / (len(d) - 1))
            half = t_quantile(confidence, df) * math.sqrt(se2)
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def breakeven_ci(setup_gap_s: np.ndarray, step_gain_s: np.ndarray,
                 confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Return the training steps after which static's total time drops below dynamic's.

    The estimate is n* = mean(gap) / mean(gain). The interval is Fieller's: {n : |mean(gap - n
    gain)| <= t_{r-1} sd(gap - n gain) / sqrt(r)}, a quadratic inequality in n. Its part in
    [0, inf) is reported. Method: docs/method.md, Intervals.

    Args:
        setup_gap_s: static's setup seconds minus dynamic's, one per repeat [repeats].
        step_gain_s: dynamic's median step seconds minus static's, the same repeats [repeats].
            Paired: measured next to each other. For unpaired sides, pass equal-length arrays
            of the two sides' values in any order; the interval stays valid but is wider.
        confidence: the interval's two-sided level.

    Returns:
        (steps, low, high) as floats. steps is 0 when static's setup is no dearer and its step
        no slower; inf ("never") when its step is not faster but its setup dearer. high is inf
        when the set is unbounded or holds negative n (a step gain of zero or less is
        compatible with the data: static may never catch up). (steps, nan, nan) with fewer
        than two repeats; (nan, nan, nan) with none or a NaN.

    Raises:
        ValueError: if the two arrays differ in length.
    """
    a, b = np.asarray(setup_gap_s, dtype=float), np.asarray(step_gain_s, dtype=float)
    if len(a) != len(b):
        raise ValueError(f"setup_gap_s has {len(a)} values, step_gain_s {len(b)}")
    if len(a) == 0 or np.isnan(a).any() or np.isnan(b).any():
        return math.nan, math.nan, math.nan
    estimate = _breakeven_point(float(a.mean()), float(b.mean()))
    if len(a) < 2:
        return estimate, math.nan, math.nan
    r = len(a)
    c = t_quantile(confidence, r - 1) ** 2 / r
    saa, sbb = np.var(a, ddof=1), np.var(b, ddof=1)
    sab = float(np.cov(a, b, ddof=1)[0, 1])
    # (mean a - n mean b)^2 <= c (saa - 2 n sab + n^2 sbb):  A n^2 + B n + C <= 0
    A = b.mean() ** 2 - c * sbb
    B = -2 * (a.mean() * b.mean() - c * sab)
    C = a.mean() ** 2 - c * saa
    low, high = _quadratic_set_on_half_line(float(A), float(B), float(C))
    return estimate, low, high


def _breakeven_point(gap: float, gain: float) -> float:
    if gap <= 0:
        return 0.0 if gain >= 0 else math.inf
    return gap / gain if gain > 0 else math.inf


def _quadratic_set_on_half_line(A: float, B: float, C: float) -> tuple[float, float]:
    """Bounds of {n >= 0 : A n^2 + B n + C <= 0}, with inf as the upper bound when the set is
    unbounded or also holds some n < 0 (negative break-even: never); (inf, inf) when only
    negative n or none satisfy it."""
    disc = B * B - 4 * A * C
    if A > 0:  # a bounded interval [r1, r2] around the estimate (which always satisfies it:
        # a negative discriminant is rounding, of values without spread)
        root = math.sqrt(max(disc, 0.0))
        r1, r2 = (-B - root) / (2 * A), (-B + root) / (2 * A)
        if r2 < 0:
            return math.inf, math.inf
        return max(r1, 0.0), (math.inf if r1 < 0 else r2)
    # A <= 0: the step gain is not significant: the set is unbounded (two rays or the line)
    if A == 0:
        if B == 0:
            return (0.0 if C <= 0 else math.inf), math.inf
        cut = -C / B
        return (max(cut, 0.0), math.inf) if B < 0 else (0.0, math.inf)
    if disc <= 0:
        return 0.0, math.inf  # A < 0 and no real roots: every n
    root = math.sqrt(disc)
    r1, r2 = sorted(((-B - root) / (2 * A), (-B + root) / (2 * A)))
    # the set is (-inf, r1] and [r2, inf)
    return (0.0 if r1 >= 0 else max(r2, 0.0)), math.inf


def _logs(values: np.ndarray) -> np.ndarray | None:
    values = np.asarray(values, dtype=float)
    if len(values) == 0 or np.isnan(values).any() or (values <= 0).any():
        return None
    return np.log(values)


def _exp(values: np.ndarray) -> np.ndarray:
    """math.exp of each value (the scalar functions' own exp, so that a row's answer is theirs
    bit for bit, whatever numpy's vectorised exp rounds)."""
    return np.array([math.exp(value) for value in values.tolist()], dtype=float)


def valid_rows(values: np.ndarray) -> np.ndarray:
    """Say which rows of ``values`` the interval functions accept.

    Args:
        values: per-process values [rows, n].

    Returns:
        A boolean array [rows]: True where the row has at least one value, none NaN and none
        zero or below.
    """
    if values.shape[1] == 0:
        return np.zeros(len(values), dtype=bool)
    return ~(np.isnan(values) | (values <= 0)).any(axis=1)


def geomean_ci_rows(values: np.ndarray,
                    confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return geomean_ci of each row of ``values``, bit for bit.

    numpy reduces a row as it reduces the row alone, so each row's answer is geomean_ci's.

    Args:
        values: positive per-process values [rows, n], one row per set of processes.
        confidence: as geomean_ci's.

    Returns:
        (estimates, lows, highs), three arrays [rows]: NaN where geomean_ci gives NaN.
    """
    values = np.asarray(values, dtype=float)
    out = np.full((3, len(values)), np.nan)
    valid = valid_rows(values)
    if not valid.any():
        return out[0], out[1], out[2]
    logs = np.log(values[valid])
    centre = np.mean(logs, axis=1)
    out[0, valid] = _exp(centre)
    count = logs.shape[1]
    if count >= 2:
        half = (t_quantile(confidence, count - 1) * np.std(logs, axis=1, ddof=1)
                / math.sqrt(count))
        out[1, valid], out[2, valid] = _exp(centre - half), _exp(centre + half)
    return out[0], out[1], out[2]


def ratio_ci_rows(static: np.ndarray, dynamic: np.ndarray, paired: bool,
                  confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ratio_ci of each pair of rows of ``static`` and ``dynamic``, bit for bit.

    Args:
        static: per-process values [rows, n], one row per cell.
        dynamic: per-process values [rows, m], the same cells.
        paired: as ratio_ci's (the same for every row).
        confidence: as ratio_ci's.

    Returns:
        (ratios, lows, highs), three arrays [rows]: NaN where ratio_ci gives NaN.

    Raises:
        ValueError: if ``paired`` and the sides differ in length.
    """
    s, d = np.asarray(static, dtype=float), np.asarray(dynamic, dtype=float)
    if paired and s.shape[1] != d.shape[1]:
        raise ValueError(f"paired: {s.shape[1]} static and {d.shape[1]} dynamic values")
    out = np.full((3, len(s)), np.nan)
    valid = valid_rows(s) & valid_rows(d)
    if not valid.any():
        return out[0], out[1], out[2]
    s, d = np.log(s[valid]), np.log(d[valid])
    centre = np.mean(s, axis=1) - np.mean(d, axis=1)
    out[0, valid] = _exp(centre)
    if min(s.shape[1], d.shape[1]) < 2:
        return out[0], out[1], out[2]
    if paired:
        half = (t_quantile(confidence, s.shape[1] - 1) * np.std(s - d, axis=1, ddof=1)
                / math.sqrt(s.shape[1]))
    else:
        half = _welch_half(s, d, confidence)
    out[1, valid], out[2, valid] = _exp(centre - half), _exp(centre + half)
    return out[0], out[1], out[2]


def _welch_half(s: np.ndarray, d: np.ndarray, confidence: float) -> np.ndarray:
    """ratio_ci's unpaired half-width per row of the logs ``s`` and ``d``."""
    vs, vd = np.var(s, axis=1, ddof=1) / s.shape[1], np.var(d, axis=1, ddof=1) / d.shape[1]
    se2 = vs + vd
    half = np.zeros(len(s))
    for row in np.flatnonzero(se2 != 0):
        df = float(se2[row]) ** 2 / (vs[row] ** 2 / (s.shape[1] - 1)
                                     + vd[row] ** 2 / (d.shape[1] - 1))
        half[row] = t_quantile(confidence, df) * math.sqrt(float(se2[row]))
    return half


def sides_of_one(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """side_of_one of each interval, as -1 (below), 0 (across) or 1 (above)."""
    with np.errstate(invalid="ignore"):
        side = np.where(low > 1.0, 1, np.where(high < 1.0, -1, 0))
    return np.where(np.isnan(low) | np.isnan(high), 0, side)


def groups_of(keys: np.ndarray, *arrays: np.ndarray) -> Iterator[tuple[np.ndarray, ...]]:
    """Split ``arrays`` by the distinct values of ``keys``, in one sort.

    Each part is what ``array[keys == key]`` gives, without one pass over the rows per key.

    Args:
        keys: one key per row [rows] (numbers, or text).
        arrays: arrays as long as ``keys``.

    Returns:
        An iterator of tuples, one per key in sorted order (np.unique's). Each tuple holds one
        part of each of ``arrays``, its rows in their original order.
    """
    levels, inverse = np.unique(keys, return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    bounds = np.searchsorted(inverse.ravel()[order], np.arange(1, len(levels)))
    return zip(*(np.split(np.asarray(array)[order], bounds) for array in arrays))
