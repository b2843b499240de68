"""Write numbers and verdicts for the reports.

FINDINGS.md (rnnbench.report.findings), ``rnnbench compare`` and ``rnnbench reference`` all
write an interval, a break-even and a step verdict this way.
"""

from __future__ import annotations

import math

import pandas as pd

def margin_text(margin: float) -> str:
    """The practical margin as a percentage: '10 %'."""
    return f"{100 * margin:g} %"


def decision_text(decision: str, margin: float, static: str = "static",
                  dynamic: str = "dynamic", smaller: str = "faster") -> str:
    """A decision on a static / dynamic ratio (intervals.decide) in words.

    Args:
        decision: one of intervals.DECISIONS.
        margin: the practical margin it was decided at.
        static, dynamic: what plays each part (vocabulary.API_WORDS).
        smaller: the word for a smaller quantity ('faster' for times, 'smaller' for memory).

    Returns:
        'static faster by more than 10 %', 'dynamic faster by more than 10 %', 'no practical
        difference (within 10 %)' or 'undecided'; at margin 0, 'static faster' and the like.

    Raises:
        KeyError: for a decision not in intervals.DECISIONS.
    """
    by = f" by more than {margin_text(margin)}" if margin else ""
    return {"below": f"{static} {smaller}{by}", "above": f"{dynamic} {smaller}{by}",
            "within": f"no practical difference (within {margin_text(margin)})",
            "undecided": "undecided"}[decision]


def interval_text(estimate: float, low: float, high: float) -> str:
    """Write an estimate and its interval: '1.49 [1.16, 1.90]'.

    Args:
        estimate: the point estimate.
        low: the interval's lower bound (NaN: a single point).
        high: its upper bound.

    Returns:
        The text with two decimals, or as many more (up to 5) as it takes to show that an
        interval which is not a single point is one ('1.222 [1.222, 1.223]', not '1.22 [1.22,
        1.22]'); a value of 10,000 or more in three significant digits ('2.99e+20', not 21
        digits).
    """
    digits = 2
    point = math.isnan(low) or math.isclose(low, high, rel_tol=1e-9)
    while digits < 5 and not point and f"{low:.{digits}f}" == f"{high:.{digits}f}":
        digits += 1

    def shown(value: float) -> str:
        return f"{value:.3g}" if abs(value) >= 1e4 and math.isfinite(value) else \
            f"{value:.{digits}f}"

    return f"{shown(estimate)} [{shown(low)}, {shown(high)}]"


def figure_text(figure: float) -> str:
    """Write a claim's own ratio: two decimals ('0.25'), or two significant digits where two
    decimals would show none ('1e-05', not '0.00')."""
    return f"{figure:.2f}" if abs(figure) >= 0.005 else f"{figure:.2g}"


def ratio_text(row: pd.Series) -> str:
    """interval_text of a claim_table or ablation_effects row (ratio, ci_low, ci_high)."""
    return interval_text(row["ratio"], row["ci_low"], row["ci_high"])


def column_interval(row: pd.Series, column: str) -> str:
    """interval_text of a table's ``column`` and its ``<column>_ci_low`` / ``_ci_high``."""
    return interval_text(row[column], row[f"{column}_ci_low"], row[f"{column}_ci_high"])


def breakeven_text(cell: pd.Series) -> str | None:
    """Write a summary row's break-even steps with their interval: '1818 [1777, never]'.

    Args:
        cell: a summary row with breakeven_steps, breakeven_steps_ci_low and
            breakeven_steps_ci_high.

    Returns:
        The text, with 'never' for an infinite bound; None where breakeven_steps is NaN.
    """
    steps = cell["breakeven_steps"]
    if pd.isna(steps):
        return None
    return (f"{int(steps)} [{cell['breakeven_steps_ci_low']:.0f}, "
            f"{cell['breakeven_steps_ci_high']:.0f}]").replace("inf", "never")


def catch_up_text(cell: pd.Series) -> str:
    """'catches up after <breakeven_text> steps', or 'never catches up'."""
    steps = breakeven_text(cell)
    if steps is None:
        return "never catches up"
    return ("is ahead from the first step" if cell["breakeven_steps"] < 1
            else f"catches up after {steps} steps")


def prediction_text(estimate: float, low: float, high: float) -> str:
    """Write a prediction with its 95 % prediction interval, never below zero: '2.5 [1.1, 3.9]'.

    Every quantity measured (time, memory, count) is positive.

    Args:
        estimate: the predicted value.
        low: the interval's lower bound.
        high: its upper bound.

    Returns:
        '2.5 [1.1, 3.9]'; '2.5 [0, 6.1]' where the interval reaches below zero; 'none (the
        line falls below zero there)' where the estimate is zero or below.
    """
    if estimate <= 0:
        return "none (the line falls below zero there)"
    return f"{estimate:.4g} [{max(low, 0):.4g}, {high:.4g}]"


def shape_words(cells: pd.DataFrame) -> str:
    """Say in words the shape ``cells`` share.

    Args:
        cells: summary or claim rows with cell, num_units, batch_size, input_dim, max_len.

    Returns:
        'a basic_lstm of 32 units, batch 32, 16 inputs, padded to max_len 24'; an axis they
        vary is given with its values ('padded to max_len 12, 24 or 48').
    """
    def values(axis: str) -> str:
        found = sorted(set(cells[axis]), key=lambda v: (str(type(v)), v))
        found = [str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
                 for v in found]
        return found[0] if len(found) == 1 else ", ".join(found[:-1]) + " or " + found[-1]
    article = "an" if values("cell")[0] in "aeiou" else "a"
    return (f"{article} {values('cell')} of {values('num_units')} units, batch "
            f"{values('batch_size')}, {values('input_dim')} inputs, padded to max_len "
            f"{values('max_len')}")
