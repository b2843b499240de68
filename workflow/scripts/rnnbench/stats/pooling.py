"""Pool several runs of one grid, with the drift between runs in the interval.

A random-effects meta-analysis of each run's log ratio (method and sources: docs/method.md,
Pooling runs).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rnnbench.stats.intervals import CONFIDENCE, t_quantile

POOLED_RATIOS = ("median_step_s", "setup_s", "first_100_steps_s", "peak_rss_mb")
"""The static / dynamic ratios pooled_summary pools (summary columns ``ratio_<name>``)."""
MEANS = ("setup_s", "median_step_s", "peak_rss_mb")
"""Each implementation's quantities pooled_summary averages over runs (geometric mean)."""


def run_standard_error(low: float, high: float, repeats: int,
                       confidence: float = CONFIDENCE) -> float:
    """The standard error of a run's log ratio, from its paired t-interval.

    Args:
        low, high: the run's interval of the ratio (intervals.ratio_ci, paired).
        repeats: its processes per implementation (the interval's n; n - 1 degrees of freedom).
        confidence: the interval's level (summary.csv's ``ratio_confidence``).

    Returns:
        log(high / low) / (2 t), t the two-sided ``confidence`` quantile at repeats - 1
        degrees of freedom; NaN without an interval.
    """
    if repeats < 2 or not (low > 0 and high > 0):
        return math.nan
    return math.log(high / low) / (2 * t_quantile(confidence, repeats - 1))


def pool(logs: np.ndarray, errors: np.ndarray,
         confidence: float = CONFIDENCE) -> tuple[float, float, float, float]:
    """Several runs' log ratios pooled, the drift between runs in the interval.

    Args:
        logs: each run's log ratio [k], every run with as many processes.
        errors: each run's standard error of it [k] (run_standard_error), for tau alone.
        confidence: of the interval.

    Returns:
        (ratio, low, high, tau): exp of the mean of the runs' log ratios, with Student's
        t-interval over the k runs (k - 1 degrees of freedom): in a balanced two-level
        experiment (runs, processes within runs) the variance of a run's mean holds both
        levels, so the interval is exact for normal effects whatever the drift; tau, the
        standard deviation of the runs' true log ratios about it (the spread of the runs
        less what their own errors explain, 0 where they explain all). NaN bounds with fewer
        than 2 runs.

    Sources: T. Kalibera and R. Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013,
    section 5 (multi-level experiments); docs/method.md, Pooling runs.
    """
    logs, errors = np.asarray(logs, dtype=float), np.asarray(errors, dtype=float)
    k = len(logs)
    mean = float(np.mean(logs)) if k else math.nan
    if k < 2 or not np.isfinite(logs).all():
        return math.exp(mean), math.nan, math.nan, math.nan
    spread = float(np.var(logs, ddof=1))
    half = t_quantile(confidence, k - 1) * math.sqrt(spread / k)
    own = float(np.mean(errors ** 2)) if np.isfinite(errors).all() else math.nan
    tau = math.sqrt(max(0.0, spread - own)) if own == own else math.nan
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), tau


def drift_share(logs: np.ndarray, errors: np.ndarray) -> float:
    """The share of one run's variance of its log ratio that is drift between runs.

    Args:
        logs: each run's log ratio [k].
        errors: each run's standard error of it [k] (run_standard_error).

    Returns:
        tau^2 / (tau^2 + the runs' mean squared standard error), tau pool's; NaN without
        the errors.
    """
    errors = np.asarray(errors, dtype=float)
    tau = pool(logs, errors)[3]
    own = float(np.mean(errors ** 2))
    return tau ** 2 / (tau ** 2 + own) if np.isfinite(tau) and own > 0 else math.nan


def pooled_summary(summaries: list[pd.DataFrame]) -> pd.DataFrame:
    """One summary of several runs of one grid, for the README's answer.

    Args:
        summaries: each run's summary.csv (stats.summary.summarize), the same cells.

    Returns:
        The first run's rows with, per POOLED_RATIOS, ``ratio_<name>`` and its
        ``_ci_low`` / ``_ci_high`` pooled (pool), ``ratio_<name>_tau`` and
        ``ratio_<name>_runs`` (each run's ratio, ' '-joined); per implementation and MEANS,
        the geometric mean over runs; ``<impl>_repeats``, the most any run had (more_repeats
        adds repeats in some runs); ``breakeven_steps`` (whole steps) from those means, its interval
        from the pooled step ratio's bounds alone (docs/method.md, Pooling runs); ``runs``.

    Raises:
        ValueError: if the runs do not hold the same cells.
    """
    cells = [set(s["cell_id"]) for s in summaries]
    if any(c != cells[0] for c in cells):
        raise ValueError("pooled_summary: the runs hold different cells: "
                         f"{sorted(set.union(*cells) - set.intersection(*cells))}")
    runs = [s.set_index("cell_id") for s in summaries]
    columns: dict[str, list] = {}
    for name in POOLED_RATIOS:
        column = f"ratio_{name}"
        for cell_id in runs[0].index:
            rows = [r.loc[cell_id] for r in runs]
            logs = [math.log(r[column]) for r in rows]
            errors = [run_standard_error(r[f"{column}_ci_low"], r[f"{column}_ci_high"],
                                         int(r["static_repeats"]),
                                         float(r.get("ratio_confidence", CONFIDENCE)))
                      for r in rows]
            pooled = pool(np.array(logs), np.array(errors))
            for suffix, value in zip(("", "_ci_low", "_ci_high", "_tau"), pooled):
                columns.setdefault(f"{column}{suffix}", []).append(value)
            columns.setdefault(f"{column}_runs", []).append(
                " ".join(f"{r[column]:.2f}" for r in rows))
    for impl in ("static", "dynamic"):
        for name in MEANS:
            column = f"{impl}_{name}"
            columns[column] = list(np.exp(np.mean([np.log(r[column]) for r in runs], axis=0)))
        # the most processes any run had (more_repeats adds them where a look was undecided)
        if f"{impl}_repeats" in runs[0]:
            columns[f"{impl}_repeats"] = list(np.max([r[f"{impl}_repeats"] for r in runs],
                                                     axis=0))
    kept = runs[0].drop(columns=[c for c in columns if c in runs[0]])
    out = pd.concat([kept, pd.DataFrame(columns, index=runs[0].index)], axis=1).copy()
    _breakeven(out)
    out["runs"] = len(summaries)
    return out.reset_index().copy()


def _breakeven(out: pd.DataFrame) -> None:
    """breakeven_steps and its interval from pooled means and the pooled step ratio's bounds
    (NaN, never, where static's steps are not faster)."""
    extra = out["static_setup_s"] - out["dynamic_setup_s"]
    for column, ratio in (("breakeven_steps", out["ratio_median_step_s"]),
                          ("breakeven_steps_ci_low", out["ratio_median_step_s_ci_low"]),
                          ("breakeven_steps_ci_high", out["ratio_median_step_s_ci_high"])):
        gain = out["dynamic_median_step_s"] * (1 - ratio)
        steps = extra / gain.where(gain > 0)
        # whole steps, as summary.csv's (read back as integers: load.read_table)
        steps = np.ceil(steps)
        out[column] = steps if column != "breakeven_steps_ci_high" else steps.fillna(math.inf)
