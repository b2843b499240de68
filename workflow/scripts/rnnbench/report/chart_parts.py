"""What every chart is made of: the implementations' colours, a panel label per cell
(``variant``), rows in natural order, the tidy long form of a summary and a geometric mean
drawn with its interval. charts.py (the charts every grid gets) and charts_varied.py (the
charts of what a grid varies) build on these.
"""

from __future__ import annotations

import re

import altair as alt
import pandas as pd

from rnnbench.grid import vocabulary
from rnnbench.grid.axes import DEFAULT_TF_VERSION

# The charts embed their (small) tables; Altair's default 5000-row guard would stop the
# cumulative_time chart of a grid above about 40 cells.
alt.data_transformers.disable_max_rows()
IMPL_COLOR = alt.Color("impl:N", title="implementation",
                       scale=alt.Scale(domain=["static", "dynamic"], range=["#d95f02", "#1b9e77"]))


def variant(frame: pd.DataFrame) -> pd.Series:
    """Label each cell (row) for a chart panel.

    Args:
        frame: one row per cell, with columns cell, batch_size, num_units, input_dim, api,
            tf_version and ablations.

    Returns:
        Per row: its cell type and sizes, its api unless compat_v1, its TensorFlow version
        unless the venv's, and any ablation away from its reference.
    """
    label = (frame["cell"] + " bs" + frame["batch_size"].astype(str) + " nu"
             + frame["num_units"].astype(str) + " in" + frame["input_dim"].astype(str)
             + frame["api"].map(lambda api: "" if api == "compat_v1" else f" {api}")
             + frame["tf_version"].astype(str).map(
                 lambda v: "" if v == DEFAULT_TF_VERSION else f" TF {v}"))
    return label + frame["ablations"].map(lambda text: f", {text}" if text else "")


def natural_order(labels: pd.Series) -> list[str]:
    """Sort the distinct ``labels`` in natural order, numbers by value.

    Vega-Lite sorts a nominal facet as strings (bs256, bs64, bs8); this gives bs8, bs64, bs256.

    Args:
        labels: the labels, repeats allowed.

    Returns:
        The distinct labels, sorted.
    """
    def key(label: str) -> list:
        return [(0, int(part), "") if part.isdigit() else (1, 0, part)
                for part in re.split(r"(\d+)", str(label)) if part]
    return sorted(set(labels), key=key)


def ordered_row(data: pd.DataFrame, field: str, **header) -> tuple[pd.DataFrame, alt.Row]:
    """Make a row facet on ``field`` in natural_order, for a chart with a column facet too.

    Not ``alt.Row(field, sort=...)``: with an explicit row sort and a column facet, Vega-Lite 6
    (vl-convert 1.9, Chromium) drew points in another row's panel where some (row, column)
    pair had no data (tests/report/test_charts.py).

    Args:
        data: the chart's table, with column ``field``.
        field: the column to facet rows on.
        **header: more alt.Header settings.

    Returns:
        ``data`` with a column ``<field>_key`` ('0003 label': the label's rank, then the
        label), and the alt.Row on it. Vega-Lite's default sort (as strings) orders it by
        rank; its header shows the label alone.
    """
    rank = {label: number for number, label in enumerate(natural_order(data[field]))}
    keyed = data.assign(**{f"{field}_key": data[field].map(lambda v: f"{rank[v]:04d} {v}")})
    return keyed, alt.Row(f"{field}_key:N", title=None,
                          header=alt.Header(labelExpr="substring(datum.value, 5)", **header))


def long_form(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Reshape a summary to one row per cell and implementation for ``metric``.

    Args:
        summary: one row per cell, with ``{impl}_{metric}`` and its ``_ci_low``, ``_ci_high``.
        metric: the metric's column stem, e.g. ``setup_s``.

    Returns:
        Columns variant, max_len, sequence_length, impl, geomean, ci_low, ci_high.
    """
    frames = []
    for impl in ("static", "dynamic"):
        frames.append(pd.DataFrame({
            "variant": variant(summary),
            "max_len": summary["max_len"],
            "sequence_length": "sequence_length " + summary["sequence_length"].astype(str),
            "impl": impl,
            "geomean": summary[f"{impl}_{metric}"],
            "ci_low": summary[f"{impl}_{metric}_ci_low"],
            "ci_high": summary[f"{impl}_{metric}_ci_high"],
        }))
    return pd.concat(frames, ignore_index=True)


def per_impl(cells: pd.DataFrame, metrics: dict[str, str], **columns) -> pd.DataFrame:
    """Reshape summary rows to one row per cell, metric and implementation.

    Args:
        cells: summary rows, one per cell.
        metrics: metric column stem -> its title.
        **columns: more columns, each a Series or value over the cells.

    Returns:
        ``columns``, then ``quantity`` (the metric's title), ``impl``, ``geomean`` (geometric
        mean over runs), ``ci_low`` and ``ci_high``.
    """
    return pd.concat([pd.DataFrame({
        **columns, "quantity": title, "impl": impl, "geomean": cells[f"{impl}_{metric}"],
        "ci_low": cells[f"{impl}_{metric}_ci_low"], "ci_high": cells[f"{impl}_{metric}_ci_high"],
    }) for metric, title in metrics.items() for impl in ("static", "dynamic")],
        ignore_index=True)


def geomean_with_interval(data: pd.DataFrame, title: str, log_scale: bool,
                          *extra: alt.Chart) -> alt.Chart:
    """Chart the median line and interval bars against max_len, per implementation.

    One panel per sequence_length and cell variant. max_len is ordinal: in each value's band,
    static's point and bar sit left of dynamic's, so neither interval hides the other.

    Args:
        data: long form (long_form, per_impl): variant, max_len, sequence_length, impl,
            geomean, ci_low, ci_high.
        title: the y axis's title; short, as it is repeated beside every row.
        log_scale: a log y scale; else linear from zero.
        *extra: more layers, without data of their own.

    Returns:
        The faceted chart.
    """
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=True)
    base = alt.Chart().encode(
        x=alt.X("max_len:O", title="max_len (time steps)", sort=natural_order(data["max_len"]),
                axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("impl:N", sort=["static", "dynamic"]),
        color=IMPL_COLOR,
    )
    lines = base.mark_line(point=True).encode(
        y=alt.Y("geomean:Q", title=title, scale=scale),
        tooltip=["variant", "sequence_length", "impl", "max_len", "geomean", "ci_low", "ci_high"],
    )
    bars = base.mark_errorbar(ticks=True).encode(
        y=alt.Y("ci_low:Q", title=title, scale=scale), y2="ci_high:Q")
    data, row = ordered_row(data, "variant")
    return alt.layer(lines, bars, *extra, data=data).properties(width={"step": 40}).facet(
        column=alt.Column("sequence_length:N", title=None), row=row)


def phase_words(summary: pd.DataFrame) -> str:
    """Name the setup's phases in the words of the summary's apis (vocabulary.api_words).

    Args:
        summary: one row per cell, with column api.

    Returns:
        E.g. 'graph construction + session setup + first step' for compat_v1, 'tracing +
        model setup + first call' for Keras.
    """
    return " + ".join(vocabulary.api_words(summary["api"], phase) for phase in
                      ("graph_construction_s", "init_s", "first_step_s"))


def step_words(summary: pd.DataFrame) -> str:
    """Name a step by the summary's modes (vocabulary.MODES).

    Args:
        summary: one row per cell; without a mode column, all are training.

    Returns:
        'training step', 'inference step', or 'step' for both.
    """
    modes = set(summary["mode"]) if "mode" in summary else {"train"}
    return {frozenset({"train"}): "training step",
            frozenset({"inference"}): "inference step"}.get(frozenset(modes), "step")
