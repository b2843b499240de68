"""Check the cost model on cells it was not fitted to, with its errors in words.

Two checks: each cell of a run left out in turn (leave_one_out), and predictions written
before a run (predicted_table) against what it measured (validation). Method:
docs/cost-model.md, The reference map and its checks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rnnbench.costmodel.fit import (Fit, extrapolates, finite_runs, fit_impl, model_rows,
                                model_runs, ratio_prediction, shape_rows)
from rnnbench.stats.formats import interval_text
from rnnbench.stats.intervals import geomean_ci
from rnnbench.grid.layout import IMPLEMENTATIONS


def group_rows(table: pd.DataFrame, pair: dict[str, Fit]) -> pd.DataFrame:
    """Return the rows of ``table`` in the fit's group, at their reference ablations.

    Args:
        table: summary or measurements rows.
        pair: the group's fits, {impl: Fit}; static's ``key`` names the group.

    Returns:
        The rows alike with the group in every GROUP_COLUMNS column ``table`` has, and whose
        cell_id is their base_cell_id (where the table has one).
    """
    mine = table[np.logical_and.reduce([table[c] == v for c, v in pair["static"].key.items()
                                        if c in table])]
    return mine[mine["cell_id"] == mine["base_cell_id"]] if "base_cell_id" in mine else mine


def geometric_means(runs: pd.DataFrame) -> pd.Series:
    """Return each implementation's geometric mean of its runs' median steps, seconds.

    It is the summary's measure of a cell (intervals.geomean_ci), and what a prediction for
    that many runs is of (Fit.predict: the mean of their logs).

    Args:
        runs: measurements rows with impl and median_step_s.

    Returns:
        A Series indexed by impl.
    """
    return runs.groupby("impl")["median_step_s"].apply(lambda v: geomean_ci(v.to_numpy())[0])


def leave_one_out(pair: dict[str, Fit], runs: pd.DataFrame) -> pd.DataFrame:
    """Predict each reference cell of the fit's group from a fit on the others.

    Each held-out cell's median step (each implementation) and static / dynamic ratio are
    predicted. The others are refitted in the full fit's form (its terms), not chosen again. A
    cell is not predicted when its absence leaves a term unidentified, or when it has no run of
    an implementation to predict (all of them busy: model_runs).

    Args:
        pair: the group's full fits, {impl: Fit}.
        runs: measurements.csv rows.

    Returns:
        One row per predicted cell. Columns cell_id, max_len, measured_ratio, predicted_ratio,
        ratio_low, ratio_high, ratio_error (predicted / measured - 1), ratio_covered (the
        measured ratio of the repeats' geometric means inside the interval for that many runs),
        static_error, dynamic_error, runs and runs_covered (held-out runs inside their per-run
        prediction intervals), extrapolates (extrapolates' words, '; '-joined).
    """
    rows = []
    group = group_rows(model_runs(runs), pair)
    for cell_id, held in group.groupby("cell_id"):
        if set(held["impl"]) != set(pair):
            continue  # nothing measured to predict: every run of an implementation was busy
        rest = group[group["cell_id"] != cell_id]
        try:  # the full fit's form, refitted without the cell
            fits = {impl: fit_impl(rest, impl, pair[impl].terms) for impl in pair}
        except ValueError:
            continue
        if any(fits[i].terms != pair[i].terms for i in fits):
            continue  # the cell identifies a term: without it the model is another
        rows.append(_held_out_row(fits, model_rows(held), cell_id))
    return pd.DataFrame(rows)


def _held_out_row(fits: dict[str, Fit], held: pd.DataFrame, cell_id: str) -> dict:
    """One cell's prediction (fits not fitted to it) against its runs ``held``."""
    medians = geometric_means(held)
    repeats = int(held.groupby("impl").size().min())
    first = held.iloc[[0]]
    shapes = {impl: held[held["impl"] == impl].iloc[[0]] for impl in fits}
    ratio = ratio_prediction(fits, shapes["static"], runs=repeats).iloc[0]
    measured = medians["static"] / medians["dynamic"]
    covered = 0
    for impl, fit in fits.items():
        mine = held[held["impl"] == impl]
        band = fit.predict(mine)
        covered += int(((mine["median_step_s"] >= band["low"])
                        & (mine["median_step_s"] <= band["high"])).sum())
    return {"cell_id": cell_id, "max_len": first["max_len"].item(),
            "measured_ratio": measured, "predicted_ratio": ratio["ratio"],
            "ratio_low": ratio["low"], "ratio_high": ratio["high"],
            "ratio_error": ratio["ratio"] / measured - 1,
            "ratio_covered": bool(ratio["low"] <= measured <= ratio["high"]),
            **{f"{impl}_error": fits[impl].predict(shapes[impl])["step_s"].item()
               / medians[impl] - 1 for impl in fits},
            "runs": len(held), "runs_covered": covered,
            "extrapolates": "; ".join(extrapolates(fits["static"], shapes["static"]))}


def noise_floor(summary: pd.DataFrame, table: pd.DataFrame) -> str:
    """Say in a sentence how precise the measured ratios of ``table``'s cells are themselves.

    Args:
        summary: summary rows, with the ratio_median_step_s interval.
        table: a leave_one_out or validation table (its cell_id).

    Returns:
        A sentence giving the median half-width of their 95 % intervals (on the log scale;
        cells without one left out), or saying it is not known where no cell has one.
    """
    mine = summary[summary["cell_id"].isin(table["cell_id"])]
    half = ((np.log(mine["ratio_median_step_s_ci_high"])
             - np.log(mine["ratio_median_step_s_ci_low"])) / 2).dropna()
    if half.empty:
        return ("How uncertain the measured ratios are themselves is not known: no cell has "
                "the repeats for an interval.")
    return (f"The measured ratios are themselves this uncertain: their 95 % intervals reach "
            f"{np.expm1(half.median()):.0%} either side at the median, so an error of that "
            "size is the measurement's as much as the model's.")


def step_error(table: pd.DataFrame) -> float:
    """Return the median of both implementations' step errors (predicted / measured - 1).

    Args:
        table: a leave_one_out or validation table.

    Returns:
        The median over static_error and dynamic_error: below 0, the model's steps are too
        short.
    """
    return float(pd.concat([table["static_error"], table["dynamic_error"]]).median())


def error_words(table: pd.DataFrame) -> str:
    """Say a leave_one_out or validation table in one sentence.

    Args:
        table: a leave_one_out or validation table, not empty.

    Returns:
        The median and worst error of the ratio (naming the worst cell), and the intervals'
        coverage of the ratios and of the runs.
    """
    errors = table["ratio_error"].abs()
    worst = table.loc[errors.idxmax()]
    runs, covered = int(table["runs"].sum()), int(table["runs_covered"].sum())
    return (f"over {len(table)} cells, the predicted static/dynamic step ratio is off by "
            f"{errors.median():.0%} at the median and {errors.max():.0%} at worst "
            f"(`{worst['cell_id']}`: {worst['predicted_ratio']:.2f} predicted, "
            f"{worst['measured_ratio']:.2f} measured); its 95 % interval holds "
            f"{int(table['ratio_covered'].sum())} of {len(table)} measured ratios, and each "
            f"implementation's per-run interval {covered} of {runs} runs ({covered / runs:.0%})")


def fixed_length(name: str, cell: dict) -> int:
    """Return the one batch-longest length of a cell with fixed sequence lengths.

    Args:
        name: the cell's id, for the message.
        cell: the cell (cells.cells' value).

    Returns:
        max_len where its sequences fill it, else its sequence_length.

    Raises:
        ValueError: naming the cell, for a sequence_length that is not a fixed length (a
            distribution has no one batch-longest length before its data are drawn).
    """
    length = cell["max_len"] if cell["sequence_length"] == "max_len" else cell[
        "sequence_length"]
    if not isinstance(length, int):
        raise ValueError(f"{name}: sequence_length {cell['sequence_length']!r}: only fixed "
                         "lengths are predicted before a run")
    return length


def predicted_table(pair: dict[str, Fit], cells: dict[str, dict], repeats: int) -> pd.DataFrame:
    """Predict ``cells`` from the fit before any of them runs.

    Args:
        pair: the fits, {impl: Fit}.
        cells: cells.cells of a config, {cell_id: cell}.
        repeats: the runs per implementation the ratio's interval is for.

    Returns:
        One row per cell: cell_id; per implementation ``<impl>_step_ms`` with
        ``<impl>_low_ms`` / ``<impl>_high_ms`` (the 95 % interval of one run, ms); ratio with
        ratio_low / ratio_high (static / dynamic, for the geometric means of ``repeats`` runs);
        extrapolates (where it extrapolates, in words).

    Raises:
        ValueError: naming the cell, for a sequence_length that is not a fixed length (a
            distribution has no one batch-longest length before its data are drawn).
    """
    rows = []
    for name, cell in cells.items():
        length = fixed_length(name, cell)
        shape = shape_rows(cell["cell"], cell["batch_size"], cell["num_units"],
                           cell["input_dim"], cell["max_len"], length)
        ratio = ratio_prediction(pair, shape, runs=repeats).iloc[0]
        row = {"cell_id": name}
        for impl, fit in pair.items():
            band = fit.predict(shape).iloc[0]
            row.update({f"{impl}_step_ms": band["step_s"] * 1e3,
                        f"{impl}_low_ms": band["low"] * 1e3,
                        f"{impl}_high_ms": band["high"] * 1e3})
        rows.append({**row, "ratio": ratio["ratio"], "ratio_low": ratio["low"],
                     "ratio_high": ratio["high"],
                     "extrapolates": "; ".join(extrapolates(pair["static"], shape))})
    return pd.DataFrame(rows)


def validation(predicted: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Compare predicted_table (written before the runs) with the runs of those cells.

    Args:
        predicted: predicted_table's table, as written.
        runs: measurements.csv rows.

    Returns:
        leave_one_out's columns but max_len, from the predictions as written.

    Raises:
        ValueError: naming a predicted cell without runs of both implementations (with a
            positive, finite step).
    """
    rows = []
    for _, cell in predicted.iterrows():
        held = runs[(runs["cell_id"] == cell["cell_id"]) & finite_runs(runs)]
        if set(held["impl"]) != set(IMPLEMENTATIONS):
            raise ValueError(f"cell {cell['cell_id']}: the runs hold {sorted(set(held['impl']))}"
                             " of it with a positive step, not both implementations")
        medians = geometric_means(held)
        measured = medians["static"] / medians["dynamic"]
        covered = sum(int(((mine["median_step_s"] * 1e3 >= cell[f"{impl}_low_ms"])
                           & (mine["median_step_s"] * 1e3 <= cell[f"{impl}_high_ms"])).sum())
                      for impl, mine in held.groupby("impl"))
        rows.append({"cell_id": cell["cell_id"], "measured_ratio": measured,
                     "predicted_ratio": cell["ratio"], "ratio_low": cell["ratio_low"],
                     "ratio_high": cell["ratio_high"],
                     "ratio_error": cell["ratio"] / measured - 1,
                     "ratio_covered": bool(cell["ratio_low"] <= measured <= cell["ratio_high"]),
                     **{f"{impl}_error": cell[f"{impl}_step_ms"] / (medians[impl] * 1e3) - 1
                        for impl in ("static", "dynamic")},
                     "runs": len(held), "runs_covered": covered,
                     "extrapolates": cell["extrapolates"] if isinstance(
                         cell["extrapolates"], str) else ""})
    return pd.DataFrame(rows)


def validation_markdown(table: pd.DataFrame, title: str, intro: str = "") -> str:
    """Write a validation or leave_one_out table as a Markdown page.

    Args:
        table: the table, not empty.
        title: the page's title.
        intro: a paragraph under the title ('' for none).

    Returns:
        The page: the title and intro, error_words over all cells, and over those inside and
        outside the fitted range (where there are both), then the table.
    """
    out = [f"# {title}", "", *([intro, ""] if intro else []),
           "All cells: " + error_words(table) + "."]
    inside = table[table["extrapolates"] == ""]
    outside = table[table["extrapolates"] != ""]
    if len(inside) and len(outside):
        out += ["", "Inside the fitted range: " + error_words(inside) + ".", "",
                "Outside it (extrapolated): " + error_words(outside) + "."]
    shown = pd.DataFrame({
        "cell": "`" + table["cell_id"] + "`",
        "measured ratio": table["measured_ratio"].map("{:.2f}".format),
        "predicted ratio [95 %]": [interval_text(r, lo, hi) for r, lo, hi in zip(
            table["predicted_ratio"], table["ratio_low"], table["ratio_high"])],
        "ratio error": table["ratio_error"].map("{:+.0%}".format),
        "static step error": table["static_error"].map("{:+.0%}".format),
        "dynamic step error": table["dynamic_error"].map("{:+.0%}".format),
        "runs in their 95 % interval": [f"{c} of {n}" for c, n in zip(table["runs_covered"],
                                                                      table["runs"])],
        "extrapolates": table["extrapolates"].replace("", "-"),
    })
    return "\n".join(out + ["", shown.to_markdown(index=False)]) + "\n"
