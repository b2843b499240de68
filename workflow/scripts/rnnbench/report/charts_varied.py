"""The charts of what a grid varies; chartlist.CHARTS says when a grid gets each.

One per ablation axis, the apis side by side, the TensorFlow versions, the static/dynamic
ratios against a numeric axis, and the unroll spectrum of jax_scan cells. One function per
chart, each taking the summary table and returning an alt.Chart.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from rnnbench.grid import axes, plan, vocabulary
from rnnbench.grid.cells import varied_axes
from rnnbench.report.chart_parts import IMPL_COLOR, natural_order, ordered_row, per_impl, variant
from rnnbench.grid.axes import DEFAULT_TF_VERSION, tf_version_key
from rnnbench.results.load import at_reference
from rnnbench.stats.tables import unroll_table


SETUP_AND_STEP = {"setup_s": "setup (s)", "median_step_s": "median step (s)"}
ABLATION_METRICS = {**SETUP_AND_STEP, "mean_step_s": "mean step (s)"}


def ablation_chart(summary: pd.DataFrame, axis: str) -> alt.Chart:
    """Chart one ablation axis: setup and step seconds against its values, per implementation.

    Quantities: median setup, median step, and mean step (total / steps: what a loop timed as
    a whole reports). Bars: 95 % t-intervals over repeats (fresh processes). One row per base
    cell, with only the cells that differ from it in this axis alone.

    Args:
        summary: summary.csv, one row per cell.
        axis: the ablation axis, a key of axes.ABLATION_DEFAULTS.

    Returns:
        The chart; the axis's first value is the reference.

    Raises:
        ValueError: for an axis that is not an ablation axis, or a summary whose cells do not
            vary it.
    """
    if axis not in axes.ABLATION_DEFAULTS:
        raise ValueError(f"chart: {axis!r} is not one of the ablation axes "
                         f"{list(axes.ABLATION_DEFAULTS)}")
    rows = [row for _, row in summary.iterrows()]
    if axis not in plan.charted_ablation_axes(rows):
        raise ValueError(f"chart: the grid does not vary {axis} alone (values "
                         f"{sorted(summary[axis].astype(str).unique())})")
    varied = varied_axes(rows)
    alone = summary[[plan.on_axis(row, axis, varied) for row in rows]]
    data = per_impl(alone, ABLATION_METRICS,
                     panel=variant(alone.assign(ablations="")) + " ml"
                     + alone["max_len"].astype(str) + " sl" + alone["sequence_length"].astype(str),
                     value=alone[axis].astype(str))
    order = [str(axes.ABLATION_DEFAULTS[axis])] + sorted(
        set(data["value"]) - {str(axes.ABLATION_DEFAULTS[axis])})
    base = alt.Chart().encode(x=alt.X("value:N", title=axis, sort=order), color=IMPL_COLOR,
                              xOffset=alt.XOffset("impl:N", sort=["static", "dynamic"]))
    points = base.mark_point(filled=True).encode(
        y=alt.Y("geomean:Q", title="seconds (log)", scale=alt.Scale(type="log")),
        tooltip=["panel", "quantity", "impl", "value", "geomean", "ci_low", "ci_high"])
    bars = base.mark_errorbar().encode(
        y=alt.Y("ci_low:Q", title="seconds (log)", scale=alt.Scale(type="log")), y2="ci_high:Q")
    data, row = ordered_row(data, "panel")
    return alt.layer(points, bars, data=data).facet(
        column=alt.Column("quantity:N", title=None, sort=list(ABLATION_METRICS.values())),
        row=row,
    ).resolve_scale(y="independent").properties(
        title=f"Ablation {axis}: the first value is the reference")


def api_chart(summary: pd.DataFrame) -> alt.Chart:
    """Chart median setup and step seconds per api and implementation, side by side.

    x: the api, in axes.API_SUFFIXES' order; colour: the implementation. Setup for the keras
    apis is tracing, the first call's compilation and step, and model setup. Bars: 95 %
    t-intervals over repeats. One row per cell variant, max_len and sequence_length. Cells
    with ablations are left out. The api is on x, not max_len, so a grid of one max_len
    (presets/keras-cpu.yaml) still tells the apis apart.

    Args:
        summary: summary.csv, one row per cell.

    Returns:
        The chart.

    Raises:
        ValueError: if the summary holds fewer than two apis.
    """
    plain = summary[at_reference(summary)]
    if plain["api"].nunique() < 2:
        raise ValueError(f"chart: api needs two apis or more, not {sorted(plain['api'].unique())}")
    data = per_impl(plain, SETUP_AND_STEP,
                     panel=variant(plain.assign(api="compat_v1")) + ", max_len "
                     + plain["max_len"].astype(str) + ", sequence_length "
                     + plain["sequence_length"].astype(str),
                     api=plain["api"], max_len=plain["max_len"])
    order = [api for api in axes.API_SUFFIXES if api in set(plain["api"])]
    base = alt.Chart().encode(x=alt.X("api:N", title="api", sort=order,
                                      axis=alt.Axis(labelAngle=0)),
                              xOffset=alt.XOffset("impl:N", sort=["static", "dynamic"]),
                              color=IMPL_COLOR)
    points = base.mark_point(filled=True, size=60).encode(
        y=alt.Y("geomean:Q", title="seconds (log)", scale=alt.Scale(type="log")),
        tooltip=["panel", "api", "impl", "quantity", "max_len", "geomean", "ci_low",
                 "ci_high"])
    bars = base.mark_errorbar().encode(
        y=alt.Y("ci_low:Q", title="seconds (log)", scale=alt.Scale(type="log")), y2="ci_high:Q")
    data, row = ordered_row(data, "panel")
    return alt.layer(points, bars, data=data).facet(
        column=alt.Column("quantity:N", title=None, sort=list(SETUP_AND_STEP.values())), row=row,
    ).resolve_scale(y="independent").properties(
        title="static against dynamic per api (static_rnn, unroll=True, scan unroll=k): "
              "setup and step time")


def tf_version_chart(summary: pd.DataFrame) -> alt.Chart:
    """Chart the same cells in each TensorFlow version, per implementation.

    Quantities, against tf_version: median setup seconds, median step seconds and the static /
    dynamic step-time ratio. Bars: 95 % t-intervals over repeats. One row per cell (without
    its version), one column per quantity. Cells with ablations are left out.

    Args:
        summary: summary.csv, one row per cell.

    Returns:
        The chart.

    Raises:
        ValueError: if the summary holds fewer than two TensorFlow versions.
    """
    plain = summary[at_reference(summary)]
    versions = sorted(plain["tf_version"].astype(str).unique(), key=tf_version_key)
    if len(versions) < 2:
        raise ValueError(f"chart: tf_version needs two TensorFlow versions or more, not {versions}")
    panel = (variant(plain.assign(tf_version=DEFAULT_TF_VERSION)) + ", max_len "
             + plain["max_len"].astype(str) + ", sequence_length "
             + plain["sequence_length"].astype(str))
    version = plain["tf_version"].astype(str)
    data = pd.concat([
        per_impl(plain, SETUP_AND_STEP, panel=panel, tf_version=version),
        pd.DataFrame({
            "panel": panel, "tf_version": version, "quantity": "step ratio static / dynamic",
            "impl": "static / dynamic", "geomean": plain["ratio_median_step_s"],
            "ci_low": plain["ratio_median_step_s_ci_low"],
            "ci_high": plain["ratio_median_step_s_ci_high"]}),
    ], ignore_index=True)
    color = alt.Color("impl:N", title="implementation", scale=alt.Scale(
        domain=["static", "dynamic", "static / dynamic"], range=["#d95f02", "#1b9e77", "#555555"]))
    base = alt.Chart().encode(x=alt.X("tf_version:O", title="TensorFlow", sort=versions),
                              color=color)
    lines = base.mark_line(point=True).encode(
        y=alt.Y("geomean:Q", title="seconds, or ratio (log)", scale=alt.Scale(type="log")),
        tooltip=["panel", "tf_version", "impl", "quantity", "geomean", "ci_low", "ci_high"])
    bars = base.mark_errorbar().encode(
        y=alt.Y("ci_low:Q", title="seconds, or ratio (log)", scale=alt.Scale(type="log")),
        y2="ci_high:Q")
    data, row = ordered_row(data, "panel")
    return alt.layer(lines, bars, data=data).facet(
        column=alt.Column("quantity:N", title=None), row=row,
    ).resolve_scale(y="independent").properties(
        title="the same cells across TensorFlow versions: setup, step time and their ratio")


RATIO_OF = {"setup_s": "setup", "median_step_s": "median step"}


def ratio_chart(summary: pd.DataFrame, axis: str) -> alt.Chart:
    """Chart the static / dynamic ratios of median setup and median step against ``axis``.

    Bars: 95 % intervals. Log x at the grid's values; one shared log y, with a rule at 1. One
    panel per combination of the other axes the grid varies. Cells without ablations only.

    Args:
        summary: summary.csv, one row per cell.
        axis: one of axes.NUMERIC_AXES.

    Returns:
        The chart.

    Raises:
        ValueError: for an axis not in axes.NUMERIC_AXES, or one the summary does not vary.
    """
    plain = summary[at_reference(summary)]
    if axis not in axes.NUMERIC_AXES or axis not in plan.ratio_axes(
            row for _, row in plain.iterrows()):
        raise ValueError(f"chart: ratio_{axis}: the grid does not vary {axis} (one of "
                         f"{list(axes.NUMERIC_AXES)})")
    others = [a for a in ("cell", *axes.NUMERIC_AXES, "sequence_length", "api", "tf_version", "mode")
              if a != axis and a in plain and plain[a].astype(str).nunique() > 1]
    panel = (plain[others].astype(str).apply(
        lambda row: ", ".join(f"{a} {v}" for a, v in row.items()), axis=1)
        if others else pd.Series("every cell", index=plain.index))
    data = pd.concat([pd.DataFrame({
        "panel": panel, axis: plain[axis], "quantity": title,
        "ratio": plain[f"ratio_{metric}"], "ci_low": plain[f"ratio_{metric}_ci_low"],
        "ci_high": plain[f"ratio_{metric}_ci_high"]})
        for metric, title in RATIO_OF.items()], ignore_index=True)
    values = sorted(plain[axis].astype(int).unique())
    x = alt.X(f"{axis}:Q", title=axis, scale=alt.Scale(type="log"),
              axis=alt.Axis(values=values, format="d"))
    y_scale = alt.Scale(type="log")
    color = alt.Color("quantity:N", title="static / dynamic of",
                      scale=alt.Scale(domain=list(RATIO_OF.values()),
                                      range=["#7570b3", "#e7298a"]))
    y_title = f"{vocabulary.impl_words(plain['api'])} (log)"
    lines = alt.Chart().mark_line(point=True).encode(
        x=x, y=alt.Y("ratio:Q", title=y_title, scale=y_scale),
        color=color, tooltip=["panel", axis, "quantity", "ratio", "ci_low", "ci_high"])
    bars = alt.Chart().mark_errorbar().encode(
        x=x, y=alt.Y("ci_low:Q", title=y_title, scale=y_scale), y2="ci_high:Q", color=color)
    one = alt.Chart().mark_rule(strokeDash=[4, 3], color="black").encode(y=alt.datum(1))
    return alt.layer(one, bars, lines, data=data).facet(
        row=alt.Row("panel:N", title=None, sort=natural_order(data["panel"]))).properties(
        title=alt.Title(f"static / dynamic against {axis} (above 1: static slower)",
                        subtitle="95 % intervals; one y scale for every panel"))


def jax_unroll_chart(summary: pd.DataFrame) -> alt.Chart:
    """Chart the unroll spectrum of the jax_scan cells (tables.unroll_table).

    Tracing, XLA compilation and the median step (seconds, geometric means over repeats; log
    y) against the scan's unroll factor (log x; 1: dynamic's loop). One panel per cell shape.

    Args:
        summary: summary.csv, one row per cell.

    Returns:
        The chart.

    Raises:
        ValueError: for a summary without jax_scan cells.
    """
    table = unroll_table(summary)
    if table.empty:
        raise ValueError("chart: jax_unroll: the grid has no jax_scan cell")
    parts = {"graph_construction_s": "tracing and lowering",
             "optimisation_s": "XLA compilation", "median_step_s": "median step"}
    data = table.melt(id_vars=["shape", "unroll"], value_vars=list(parts),
                      var_name="quantity", value_name="seconds")
    data["quantity"] = data["quantity"].map(parts)
    x = alt.X("unroll:Q", title="scan unroll factor (1: dynamic's loop)",
              scale=alt.Scale(type="log"),
              axis=alt.Axis(values=sorted(table["unroll"].astype(int).unique()), format="d"))
    return alt.Chart(data).mark_line(point=True).encode(
        x=x, y=alt.Y("seconds:Q", title="seconds (log)", scale=alt.Scale(type="log")),
        color=alt.Color("quantity:N", title=None, sort=list(parts.values())),
        tooltip=["shape", "unroll", "quantity", alt.Tooltip("seconds:Q", format=".4g")],
    ).facet(row=alt.Row("shape:N", title=None, sort=natural_order(data["shape"]))).properties(
        title="JAX lax.scan: compile time and step time against the unroll factor")
