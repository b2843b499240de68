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
    """Row label of a cell: its type and sizes, its api unless compat_v1, its TensorFlow
    version unless the venv's, and any ablation away from its reference."""
    label = (frame["cell"] + " bs" + frame["batch_size"].astype(str) + " nu"
             + frame["num_units"].astype(str) + " in" + frame["input_dim"].astype(str)
             + frame["api"].map(lambda api: "" if api == "compat_v1" else f" {api}")
             + frame["tf_version"].astype(str).map(
                 lambda v: "" if v == DEFAULT_TF_VERSION else f" TF {v}"))
    return label + frame["ablations"].map(lambda text: f", {text}" if text else "")


def natural_order(labels: pd.Series) -> list[str]:
    """The distinct ``labels`` in natural order, numbers by value ('bs8' < 'bs64' < 'bs256';
    Vega-Lite sorts a nominal facet as strings: bs256, bs64, bs8)."""
    def key(label: str) -> list:
        return [(0, int(part), "") if part.isdigit() else (1, 0, part)
                for part in re.split(r"(\d+)", str(label)) if part]
    return sorted(set(labels), key=key)


def ordered_row(data: pd.DataFrame, field: str, **header) -> tuple[pd.DataFrame, alt.Row]:
    """A row facet on ``field`` in natural_order, for a chart that also has a column facet:
    ``data`` with a column ``<field>_key`` ('0003 label': the label's rank, then the label),
    and the alt.Row on it, sorted by Vega-Lite's default (as strings: by rank), whose header
    shows the label alone (``header``: more alt.Header settings).

    Why not ``alt.Row(field, sort=natural_order(...))``: with an explicit sort (a list or an
    EncodingSortField) on the rows and a column facet, Vega-Lite 6 (vl-convert 1.9, and
    Chromium on the saved HTML) drew a cell's points in another row's panel where some (row,
    column) pair had no data: the setup_time chart of docs/figures showed the reference
    cell's sequence_length 2 points in the ablated row, and the ablated cell's under
    sequence_length full, which it does not have (tests/report/test_charts.py)."""
    rank = {label: number for number, label in enumerate(natural_order(data[field]))}
    keyed = data.assign(**{f"{field}_key": data[field].map(lambda v: f"{rank[v]:04d} {v}")})
    return keyed, alt.Row(f"{field}_key:N", title=None,
                          header=alt.Header(labelExpr="substring(datum.value, 5)", **header))


def long_form(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    """summary (one row per cell) -> one row per cell and implementation for ``metric``."""
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
    """summary rows ``cells`` -> one row per cell, metric and implementation: ``columns``
    (each a Series or value over the cells), ``quantity`` (the metric's title, from
    ``metrics``), ``impl``, and the metric's ``geomean`` (geometric mean over runs),
    ``ci_low`` and ``ci_high``."""
    return pd.concat([pd.DataFrame({
        **columns, "quantity": title, "impl": impl, "geomean": cells[f"{impl}_{metric}"],
        "ci_low": cells[f"{impl}_{metric}_ci_low"], "ci_high": cells[f"{impl}_{metric}_ci_high"],
    }) for metric, title in metrics.items() for impl in ("static", "dynamic")],
        ignore_index=True)


def geomean_with_interval(data: pd.DataFrame, title: str, log_scale: bool,
                          *extra: alt.Chart) -> alt.Chart:
    """Median line and interval bars against max_len per implementation (and ``extra``
    layers without data of their own), one panel per sequence_length and cell variant.
    max_len is ordinal, each value a band in which static's point and bar sit left of
    dynamic's (xOffset), so neither interval hides the other; ``title`` is the y axis's,
    short, as it is repeated beside every row."""
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
    """The setup's phases in the words of the summary's apis (vocabulary.api_words): 'graph
    construction + session setup + first step' for compat_v1, 'tracing + model setup + first
    call' for Keras."""
    return " + ".join(vocabulary.api_words(summary["api"], phase) for phase in
                      ("graph_construction_s", "init_s", "first_step_s"))


def step_words(summary: pd.DataFrame) -> str:
    """'training step', 'inference step' or 'step', by the summary's modes (vocabulary.MODES)."""
    modes = set(summary["mode"]) if "mode" in summary else {"train"}
    return {frozenset({"train"}): "training step",
            frozenset({"inference"}): "inference step"}.get(frozenset(modes), "step")
