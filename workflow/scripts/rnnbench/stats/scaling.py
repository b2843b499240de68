"""Fit scaling laws along a grid axis: a line or a power law through the runs.

Each law comes with intervals, a lack-of-fit test and prediction intervals (docs/method.md,
Laws).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special

from rnnbench.grid.axes import NUMERIC_AXES
from rnnbench.stats.formats import prediction_text
from rnnbench.stats.intervals import groups_of
from rnnbench.results.load import at_reference

SCALING_AXES = tuple(axis for axis in NUMERIC_AXES if axis != "input_dim")
"""The axes a law is fitted along, when the grid varies them: the numeric axes but input_dim
(the input's width, which no claim of the seeds or of the presets is about)."""
SCALING_QUANTITIES = {"graph_construction_s": "graph construction (s)",
                      "first_step_s": "first step (s)", "setup_s": "setup (s)",
                      "median_step_s": "median step (s)", "peak_rss_mb": "peak memory (MiB)",
                      "node_count": "graph nodes"}
"""What is fitted (measurements columns)."""
LACK_OF_FIT_ALPHA = 0.05
CONFIDENCE = 0.95


def fit_line(x: np.ndarray, y: np.ndarray, at: list[float] = (),
             confidence: float = CONFIDENCE) -> dict:
    """Fit a least-squares line through the points (x, y), one point per run.

    Method: docs/method.md, Laws.

    Args:
        x: the axis values [points].
        y: the quantity, one value per run [points].
        at: axis values to predict one new run at.
        confidence: the intervals' two-sided level.

    Returns:
        A dict: n, slope, slope_ci (low, high), intercept, intercept_ci, r2 (NaN when y does
        not vary), lack_of_fit_p (NaN without repeats at some x, or with only two x values), and
        ``predictions``: for each x0 of ``at``, (x0, estimate, low, high) of one new run.

    Raises:
        ValueError: with fewer than 3 points or fewer than 2 distinct x values.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n, levels = len(x), np.unique(x)
    if n < 3 or len(levels) < 2:
        raise ValueError(f"fit_line: {n} points at {len(levels)} x value(s): need 3 and 2")
    mean_x = x.mean()
    sxx = float(((x - mean_x) ** 2).sum())
    slope = float(((x - mean_x) * (y - y.mean())).sum() / sxx)
    intercept = float(y.mean() - slope * mean_x)
    residuals = y - (intercept + slope * x)
    sse = float((residuals ** 2).sum())
    s = math.sqrt(sse / (n - 2)) if n > 2 else math.nan
    t = float(special.stdtrit(n - 2, 0.5 + confidence / 2))
    se_slope = s / math.sqrt(sxx)
    se_intercept = s * math.sqrt(1 / n + mean_x ** 2 / sxx)
    total = float(((y - y.mean()) ** 2).sum())
    # lack of fit against pure error (the spread of the repeats at each x)
    pure = float(sum(((part - part.mean()) ** 2).sum() for (part,) in groups_of(x, y)))
    df_pure, df_lack = n - len(levels), len(levels) - 2
    if df_pure > 0 and df_lack > 0 and pure > 0:
        f = ((sse - pure) / df_lack) / (pure / df_pure)
        lack_p = float(special.fdtrc(df_lack, df_pure, f))
    else:
        lack_p = math.nan
    predictions = []
    for x0 in at:
        estimate = intercept + slope * x0
        half = t * s * math.sqrt(1 + 1 / n + (x0 - mean_x) ** 2 / sxx)
        predictions.append((float(x0), estimate, estimate - half, estimate + half))
    return {"n": n, "slope": slope, "slope_ci": (slope - t * se_slope, slope + t * se_slope),
            "intercept": intercept,
            "intercept_ci": (intercept - t * se_intercept, intercept + t * se_intercept),
            "r2": 1 - sse / total if total > 0 else math.nan, "lack_of_fit_p": lack_p,
            "predictions": predictions}


def fit_power(x: np.ndarray, y: np.ndarray, at: list[float] = (),
              confidence: float = CONFIDENCE) -> dict:
    """Fit a power law y = k x^p through the points, as a line on the log scale.

    log y = log k + p log x: the log transform for a multiplicative error (Montgomery, Peck and
    Vining, 5.3).

    Args:
        x: the axis values [points], all positive.
        y: the quantity, one value per run [points], all positive.
        at: axis values to predict one new run at.
        confidence: the intervals' two-sided level.

    Returns:
        fit_line's dict, with ``slope`` the exponent p, ``intercept`` log k, and the lack-of-fit
        test on the log scale. Predictions are back-transformed: the median of one new run and
        its prediction interval, never negative.

    Raises:
        ValueError: as fit_line, and for a value of x or y that is not positive.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("fit_power: every x and y must be positive")
    law = fit_line(np.log(x), np.log(y), [math.log(x0) for x0 in at], confidence)
    law["predictions"] = [(float(x0), math.exp(e), math.exp(lo), math.exp(hi))
                          for x0, (_, e, lo, hi) in zip(at, law["predictions"])]
    return law


def _relative_rms(law: dict, x: np.ndarray, y: np.ndarray) -> float:
    """The root mean square of a law's residuals relative to its fitted values."""
    if law["form"] == "power":
        return float(np.sqrt(np.mean((np.log(y) - law["intercept"] - law["slope"]
                                      * np.log(x)) ** 2)))
    fitted = law["intercept"] + law["slope"] * x
    return float(np.sqrt(np.mean(((y - fitted) / np.abs(y)) ** 2)))


def fit_law(x: np.ndarray, y: np.ndarray, at: list[float] = (),
            confidence: float = CONFIDENCE) -> dict:
    """Fit the law the data choose: a line (fit_line) or a power law (fit_power).

    The line unless the repeats reject it and reject the power law less. The rule in full:
    docs/method.md, Laws. Only the line is fitted where a value of x, y or ``at`` is not
    positive.

    Args:
        x: the axis values [points].
        y: the quantity, one value per run [points].
        at: axis values to predict one new run at.
        confidence: the intervals' two-sided level.

    Returns:
        The chosen form's dict (fit_line's), with ``form`` ('linear' or 'power') and
        ``other_p`` (the other form's lack-of-fit p; NaN where only the line was fitted).

    Raises:
        ValueError: as fit_line.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    line = {**fit_line(x, y, at, confidence), "form": "linear"}
    if (x <= 0).any() or (y <= 0).any() or any(x0 <= 0 for x0 in at):
        return {**line, "other_p": math.nan}
    power = {**fit_power(x, y, at, confidence), "form": "power"}
    p_line, p_power = line["lack_of_fit_p"], power["lack_of_fit_p"]
    if math.isnan(p_line) or math.isnan(p_power):
        chosen = power if _relative_rms(power, x, y) < _relative_rms(line, x, y) else line
    else:
        chosen = power if p_line < LACK_OF_FIT_ALPHA and p_power > p_line else line
    other = line if chosen is power else power
    return {**chosen, "other_p": other["lack_of_fit_p"]}


def scaling_table(runs: pd.DataFrame, at: dict[str, list[float]] | None = None) -> pd.DataFrame:
    """Fit a law per axis, implementation, quantity and group of cells that ``runs`` vary.

    Axes are SCALING_AXES, quantities SCALING_QUANTITIES. A group is cells alike in every other
    axis, without ablations. Each law is fitted over at least 3 runs at 2 or more axis values
    (fit_law: a line or a power law, as the runs choose).

    Args:
        runs: the runs, one row each (load.load_results's table).
        at: axis -> values to extrapolate to (config ``extrapolate``).

    Returns:
        Columns axis, group (the other axes' values, in words), impl, quantity, form
        ('linear' or 'power': slope is then the exponent), n, slope, slope_low, slope_high,
        intercept, r2, lack_of_fit_p, poor_fit (lack_of_fit_p below LACK_OF_FIT_ALPHA), values
        (the axis values fitted), and at, predicted, predicted_low, predicted_high (one row per
        extrapolation point; NaN without). Empty when no axis varies.
    """
    plain = runs[at_reference(runs)] if "base_cell_id" in runs else runs
    rows = []
    for axis in SCALING_AXES:
        if plain[axis].nunique() < 2:
            continue
        others = [c for c in ("cell", "api", "tf_version", "batch_size", "max_len",
                              "sequence_length", "num_units", "input_dim") if c != axis]
        for key, group in plain.groupby(others, sort=False):
            if group[axis].nunique() < 2:
                continue
            words = ", ".join(f"{name} {value}" for name, value in zip(others, key)
                              if plain[name].nunique() > 1)
            for impl in ("static", "dynamic"):
                mine = group[group["impl"] == impl]
                for quantity in SCALING_QUANTITIES:
                    points = mine[[axis, quantity]].dropna()
                    if len(points) < 3 or points[axis].nunique() < 2:
                        continue
                    law = fit_law(points[axis].to_numpy(), points[quantity].to_numpy(),
                                  list((at or {}).get(axis, [])))
                    base = {"axis": axis, "group": words, "impl": impl, "quantity": quantity,
                            "form": law["form"], "n": law["n"], "slope": law["slope"],
                            "slope_low": law["slope_ci"][0], "slope_high": law["slope_ci"][1],
                            "intercept": law["intercept"], "r2": law["r2"],
                            "lack_of_fit_p": law["lack_of_fit_p"],
                            "poor_fit": bool(law["lack_of_fit_p"] < LACK_OF_FIT_ALPHA),
                            "values": ", ".join(str(v) for v in sorted(points[axis].unique()))}
                    for x0, estimate, low, high in law["predictions"] or [(math.nan,) * 4]:
                        rows.append({**base, "at": x0, "predicted": estimate,
                                     "predicted_low": low, "predicted_high": high})
    return pd.DataFrame(rows)


FOLD_ROWS = 40
"""A longer scaling table is folded (an HTML <details>) so FINDINGS' later sections stay in
reach: the reference map's grid gives about 390 laws."""


def _reach(at: float, values: str) -> str:
    """How far a prediction at ``at`` lies outside the fitted ``values`` (scaling_table's
    text, '2, 24'): ', 125x the largest fitted' or ', 1/4 of the smallest fitted'; '' inside."""
    fitted = [float(v) for v in values.split(", ")]
    if at > max(fitted):
        return f", {at / max(fitted):.3g}x the largest fitted"
    if at < min(fitted):
        return f", 1/{min(fitted) / at:.3g} of the smallest fitted"
    return ""


def scaling_section(table: pd.DataFrame) -> list[str]:
    """FINDINGS' 'Scaling laws' from scaling_table: one line when no axis varies."""
    if table.empty:
        return ["No scaling law: the grid varies none of " + ", ".join(SCALING_AXES)
                + " (over 2 or more values without ablations).", ""]
    out = ["Each implementation's quantity against the axis, through its runs "
           "(docs/method.md, Laws): a line (the slope per unit of the axis) or, where the "
           "repeats reject the line and reject it less, a power law fitted on the log scale "
           "(the exponent), each with its 95 % interval; R² (on the law's scale), and the "
           "lack-of-fit test against the repeats' spread (*poor fit*: p < "
           f"{LACK_OF_FIT_ALPHA:g}, the law does not describe the runs, and an extrapolation "
           "from it is not to be trusted); predictions are of one new run, with its 95 % "
           "prediction interval (never below zero).", ""]
    shown = table.assign(
        quantity=table["quantity"].map(SCALING_QUANTITIES),
        slope=[("exponent " if r.form == "power" else "")
               + f"{r.slope:.4g} [{r.slope_low:.4g}, {r.slope_high:.4g}]"
               for r in table.itertuples()],
        r2=table["r2"].map("{:.3f}".format),
        fit=[f"{r.form}, untested (2 values, or no repeats)" if math.isnan(r.lack_of_fit_p)
             else ("poor fit" if r.poor_fit else f"{r.form} fits") + f" (p {r.lack_of_fit_p:.2g})"
             for r in table.itertuples()],
        prediction=[f"{prediction_text(r.predicted, r.predicted_low, r.predicted_high)} at "
                    f"{r.at:g}{_reach(r.at, r.values)}" if not math.isnan(r.at) else "-"
                    for r in table.itertuples()],
    )[["axis", "group", "impl", "quantity", "values", "slope", "r2", "fit", "prediction"]]
    if len(shown) <= FOLD_ROWS:
        return [*out, shown.to_markdown(index=False), ""]
    return [*out, f"<details><summary>{len(shown)} laws (one per axis, group of the other "
            "axes, implementation and quantity): show them</summary>", "",
            shown.to_markdown(index=False), "", "</details>", ""]
