"""What the spread between a cell's fresh processes follows: the machine, or the process.

Method: docs/method.md, Repeats that disagree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

CANDIDATES = {
    "speed_python_ns": "the machine's Python loop time (its speed check)",
    "speed_matmul_gflop_s": "the machine's matmul rate (its speed check)",
    "graph_construction_s": "the run's own graph construction",
    "migrations": "its threads' moves between CPUs",
    "involuntary_switches": "its preemptions",
    "others_share": "other processes' share of its CPUs",
    "job_start_unix_s": "when it ran",
}
"""measurements.csv's columns that may say why a process is slow, with their words."""
MIN_RUNS = 8
"""Fewest runs (of cells with at least 3 each) for which spread_candidates correlates."""


def deviations(runs: pd.DataFrame, column: str) -> pd.Series:
    """Each run's ``column`` relative to the median of its cell and implementation.

    Args:
        runs: measurements.csv rows with cell_id, impl and ``column``.
        column: a numeric column; a positive one is compared in logs.

    Returns:
        The deviation per row (log ratio where every value is positive, else difference).
    """
    values = pd.to_numeric(runs[column], errors="coerce").astype(float)
    if (values.dropna() > 0).all():
        values = np.log(values)
    return values - values.groupby([runs["cell_id"], runs["impl"]]).transform("median")


def spread_candidates(runs: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rank correlation of each run's step with each candidate, within cells.

    Both are taken relative to the median of the run's cell and implementation (deviations),
    over the runs each cell measured itself, in cells of at least 3 runs.

    Args:
        runs: measurements.csv rows (load.load_results).

    Returns:
        One row per CANDIDATES column the runs hold with two values or more: ``candidate``,
        ``words``, ``rho``, ``p`` (scipy.stats.spearmanr, two-sided) and ``runs``; empty
        where fewer than MIN_RUNS runs qualify.
    """
    from scipy import stats

    own = runs[runs["measured_in"] == runs["cell_id"]]
    own = own[own.groupby(["cell_id", "impl"])["repeat"].transform("size") >= 3]
    step = deviations(own, "median_step_s")
    rows = []
    for column, words in CANDIDATES.items():
        if column not in own:
            continue
        other = deviations(own, column)
        both = step.notna() & other.notna()
        if both.sum() < MIN_RUNS or other[both].nunique() < 2:
            continue
        rho, p = stats.spearmanr(step[both], other[both])
        rows.append({"candidate": column, "words": words, "rho": float(rho), "p": float(p),
                     "runs": int(both.sum())})
    return pd.DataFrame(rows, columns=["candidate", "words", "rho", "p", "runs"])


def process_spread(runs: pd.DataFrame) -> pd.DataFrame:
    """How far apart the fresh processes of each cell and implementation are.

    Args:
        runs: measurements.csv rows (the runs each cell measured itself are used).

    Returns:
        One row per cell_id and impl: ``runs``, ``step_ms`` (the geometric mean of the median
        steps, ms), ``sd_log`` (their standard deviation on the log scale: about the relative
        spread between processes) and ``max_over_min``.
    """
    own = runs[runs["measured_in"] == runs["cell_id"]]
    logs = np.log(own["median_step_s"].astype(float))
    grouped = logs.groupby([own["cell_id"], own["impl"]], sort=True)
    return pd.DataFrame({"runs": grouped.size(), "step_ms": np.exp(grouped.mean()) * 1e3,
                         "sd_log": grouped.std(ddof=1),
                         "max_over_min": np.exp(grouped.max() - grouped.min())}).reset_index()
