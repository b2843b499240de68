"""How the reports write numbers and verdicts: FINDINGS.md (rnnbench.findings), ``rnnbench
compare`` and ``rnnbench reference`` all write an interval, a break-even and a step verdict
this way."""

from __future__ import annotations

import math

import pandas as pd

SPEED = {"holds": "faster", "does not hold": "slower", "inconclusive": "no clear difference"}
"""A step verdict of 'static < dynamic' (tables.verdict) in words: static is ..."""


def interval_text(estimate: float, low: float, high: float) -> str:
    """'1.49 [1.16, 1.90]': two decimals, or as many more (up to 5) as it takes to show that
    an interval which is not a single point is one ('1.222 [1.222, 1.223]', not '1.22 [1.22,
    1.22]')."""
    digits = 2
    point = math.isnan(low) or math.isclose(low, high, rel_tol=1e-9)
    while digits < 5 and not point and f"{low:.{digits}f}" == f"{high:.{digits}f}":
        digits += 1
    return f"{estimate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def ratio_text(row: pd.Series) -> str:
    """interval_text of a claim_table or ablation_effects row (ratio, ci_low, ci_high)."""
    return interval_text(row["ratio"], row["ci_low"], row["ci_high"])


def column_interval(row: pd.Series, column: str) -> str:
    """interval_text of a table's ``column`` and its ``<column>_ci_low`` / ``_ci_high``."""
    return interval_text(row[column], row[f"{column}_ci_low"], row[f"{column}_ci_high"])


def breakeven_text(cell: pd.Series) -> str | None:
    """A summary row's break-even steps with their interval ('1818 [1777, never]'); None
    for never."""
    steps = cell["breakeven_steps"]
    if pd.isna(steps):
        return None
    return (f"{int(steps)} [{cell['breakeven_steps_ci_low']:.0f}, "
            f"{cell['breakeven_steps_ci_high']:.0f}]").replace("inf", "never")


def catch_up_text(cell: pd.Series) -> str:
    """'catches up after <breakeven_text> steps', or 'never catches up'."""
    steps = breakeven_text(cell)
    return "never catches up" if steps is None else f"catches up after {steps} steps"
