"""The cost model's chart: where static_rnn wins and by how much, over max_len and the length
against max_len, as the model fitted to the run predicts it (rnnbench/costmodel/fit.py), with the
measured cells drawn on it."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from rnnbench.report.chart_parts import natural_order
from rnnbench.costmodel.fit import fit_groups, ratio_prediction, shape_rows

FRACTIONS = np.round(np.linspace(0.05, 1.0, 20), 2)
"""Rows of the map: the batch's longest sequence as a share of max_len."""
RATIO_DOMAIN = (0.25, 4.0)
"""The colour scale's ends (static / dynamic step), log scale, centred on 1."""


def _max_lens(low: float, high: float) -> np.ndarray:
    """Columns of the map: max_len from half the smallest fitted to 2.5 x the largest,
    log-spaced."""
    return np.unique(np.round(np.geomspace(max(2, low / 2), 2.5 * high, 24)).astype(int))


def crossover_table(pair: dict, summary: pd.DataFrame) -> pd.DataFrame:
    """Tabulate the model's static / dynamic step ratio, and the measured cells, for one group.

    Args:
        pair: the group's fit, {impl: Fit} (costmodel.fit.fit_groups).
        summary: summary.csv, one row per cell.

    Returns:
        One row per point, by ``kind``. 'model': the predicted ratio over _max_lens x
        FRACTIONS for each batch_size and num_units, with the rectangle's edges x, x2, y, y2.
        'measured': the group's unablated cells of ``summary``. 'edge': the fitted max_len
        range's ends. Column ``shape`` names the panel; ratio is clipped to RATIO_DOMAIN.
    """
    static = pair["static"]
    lens = _max_lens(*static.ranges["max_len"])
    edges = np.sqrt(lens[1:] * lens[:-1])
    x = np.concatenate([[lens[0] / (edges[0] / lens[0])], edges])
    x2 = np.concatenate([edges, [lens[-1] * (lens[-1] / edges[-1])]])
    mine = summary[(summary["cell"] == static.key["cell"]) & (summary["api"] == static.key["api"])
                   & (summary["cell_id"] == summary["base_cell_id"])]
    rows = []
    for (batch, units), _ in mine.groupby(["batch_size", "num_units"]):
        rows += [{"kind": "edge", "batch_size": batch, "num_units": units, "max_len": edge}
                 for edge in static.ranges["max_len"]]
        for i, max_len in enumerate(lens):
            for fraction in FRACTIONS:
                length = max(1.0, round(fraction * max_len))
                shape = shape_rows(static.key["cell"], batch, units, static.key["input_dim"],
                                   int(max_len), length)
                rows.append({"kind": "model", "batch_size": batch, "num_units": units,
                             "max_len": max_len, "fraction": fraction,
                             "ratio": ratio_prediction(pair, shape)["ratio"].item(),
                             "x": x[i], "x2": x2[i], "y": fraction - 0.025,
                             "y2": fraction + 0.025})
    for _, cell in mine.iterrows():
        length = cell["max_len"] if cell["sequence_length"] == "full" else float(
            cell["sequence_length"])
        rows.append({"kind": "measured", "batch_size": cell["batch_size"],
                     "num_units": cell["num_units"], "max_len": cell["max_len"],
                     "fraction": length / cell["max_len"],
                     "ratio": cell["ratio_median_step_s"]})
    table = pd.DataFrame(rows)
    table["shape"] = ("batch " + table["batch_size"].astype(str) + ", "
                      + table["num_units"].astype(str) + " units")
    table["ratio"] = table["ratio"].clip(*RATIO_DOMAIN)
    return table


def crossover_chart(summary: pd.DataFrame, runs: pd.DataFrame,
                    fits: list | None = None) -> alt.Chart:
    """Chart the crossover map of the run's one fitted group, per batch_size and num_units.

    Where no model can be fitted, or there is more than one group, or the grid does not part
    static_rnn's conds from its computed steps (max_len must vary apart from the length), the
    chart is one line saying why. docs/cost-model.md describes the model.

    Args:
        summary: summary.csv, one row per cell.
        runs: measurements.csv, one row per run, which the model is fitted to.
        fits: the run's fits (rule aggregate's costmodel.json); None fits ``runs`` here.

    Returns:
        The chart.
    """
    pairs = fit_groups(runs) if fits is None else fits
    if len(pairs) != 1 or "per_passed" not in pairs[0]["static"].terms:
        why = ("no cost model: " + ("the grid does not vary max_len apart from the length"
                                    if pairs else "no group of runs can be fitted")
               if len(pairs) < 2 else f"{len(pairs)} groups of runs: one chart each is not drawn")
        return alt.Chart(pd.DataFrame({"text": [why]})).mark_text(size=14).encode(
            text="text:N").properties(title="crossover: static_rnn against dynamic_rnn",
                                      width=400, height=60)
    pair = pairs[0]
    data = crossover_table(pair, summary)
    color = alt.Color("ratio:Q", title="static / dynamic step",
                      scale=alt.Scale(type="log", scheme="redblue", reverse=True, domainMid=1,
                                      domain=list(RATIO_DOMAIN)),
                      legend=alt.Legend(format=".2f", values=[0.25, 0.5, 1, 2, 4]))
    x = alt.X("x:Q", title="max_len (log)", scale=alt.Scale(type="log", nice=False))
    y = alt.Y("y:Q", title="the batch's longest sequence / max_len",
              scale=alt.Scale(domain=[0, 1.05], nice=False))
    rects = alt.Chart().transform_filter("datum.kind == 'model'").mark_rect().encode(
        x=x, x2="x2:Q", y=y, y2="y2:Q", color=color,
        tooltip=["max_len:Q", "fraction:Q", alt.Tooltip("ratio:Q", format=".2f")])
    points = alt.Chart().transform_filter("datum.kind == 'measured'").mark_circle(
        size=110, stroke="black", strokeWidth=1.5, opacity=1).encode(
        x="max_len:Q", y="fraction:Q", color=color,
        tooltip=["max_len:Q", "fraction:Q", alt.Tooltip("ratio:Q", format=".2f")])
    edges = alt.Chart().transform_filter("datum.kind == 'edge'").mark_rule(
        strokeDash=[4, 3], color="black").encode(x="max_len:Q")
    panels = alt.layer(rects, edges, points, data=data).properties(width=260, height=200)
    chart = panels.facet(facet=alt.Facet("shape:N", title=None,
                                         sort=natural_order(data["shape"])), columns=2)
    return chart.properties(title=alt.Title(
        "Where unrolling wins: the cost model's static_rnn / dynamic_rnn step ratio",
        subtitle=["blue: static_rnn faster, red: dynamic_rnn faster (ratios past 0.25 or 4 "
                  "at the end of the scale)",
                  "circles: the measured cells; dashed: the fitted max_len range (the model "
                  "extrapolates outside it)"]))
