"""Altair charts: one function per chart, each taking tidy tables and returning an alt.Chart.

Every chart facets by the grid axes that are not on its x axis, through a ``variant`` label
(cell, batch_size, num_units, input_dim), so a grid over more than max_len and
sequence_length stays readable.
"""

from __future__ import annotations

import re

import altair as alt
import pandas as pd

from rnnbench import grid

# The charts' names are planning facts (rule plot's wildcards): grid.CHARTS, grid.ABLATION_CHARTS
CHARTS, ABLATION_CHARTS = grid.CHARTS, grid.ABLATION_CHARTS
# The charts embed their (small) tables; Altair's default 5000-row guard would stop the
# cumulative_time chart of a grid above about 40 cells.
alt.data_transformers.disable_max_rows()
IMPL_COLOR = alt.Color("impl:N", title="implementation",
                       scale=alt.Scale(domain=["static", "dynamic"], range=["#d95f02", "#1b9e77"]))


def _variant(frame: pd.DataFrame) -> pd.Series:
    """Row label of a cell: its type and sizes, its api unless compat_v1, its TensorFlow
    version unless the venv's, and any ablation away from its reference."""
    label = (frame["cell"] + " bs" + frame["batch_size"].astype(str) + " nu"
             + frame["num_units"].astype(str) + " in" + frame["input_dim"].astype(str)
             + frame["api"].map(lambda api: "" if api == "compat_v1" else f" {api}")
             + frame["tf_version"].astype(str).map(
                 lambda v: "" if v == grid.DEFAULT_TF_VERSION else f" TF {v}"))
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
    sequence_length full, which it does not have (tests/test_charts.py)."""
    rank = {label: number for number, label in enumerate(natural_order(data[field]))}
    keyed = data.assign(**{f"{field}_key": data[field].map(lambda v: f"{rank[v]:04d} {v}")})
    return keyed, alt.Row(f"{field}_key:N", title=None,
                          header=alt.Header(labelExpr="substring(datum.value, 5)", **header))


def _long(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    """summary (one row per cell) -> one row per cell and implementation for ``metric``."""
    frames = []
    for impl in ("static", "dynamic"):
        frames.append(pd.DataFrame({
            "variant": _variant(summary),
            "max_len": summary["max_len"],
            "sequence_length": "sequence_length " + summary["sequence_length"].astype(str),
            "impl": impl,
            "geomean": summary[f"{impl}_{metric}"],
            "ci_low": summary[f"{impl}_{metric}_ci_low"],
            "ci_high": summary[f"{impl}_{metric}_ci_high"],
        }))
    return pd.concat(frames, ignore_index=True)


def _per_impl(cells: pd.DataFrame, metrics: dict[str, str], **columns) -> pd.DataFrame:
    """summary rows ``cells`` -> one row per cell, metric and implementation: ``columns``
    (each a Series or value over the cells), ``quantity`` (the metric's title, from
    ``metrics``), ``impl``, and the metric's ``geomean`` (geometric mean over runs),
    ``ci_low`` and ``ci_high``."""
    return pd.concat([pd.DataFrame({
        **columns, "quantity": title, "impl": impl, "geomean": cells[f"{impl}_{metric}"],
        "ci_low": cells[f"{impl}_{metric}_ci_low"], "ci_high": cells[f"{impl}_{metric}_ci_high"],
    }) for metric, title in metrics.items() for impl in ("static", "dynamic")],
        ignore_index=True)


def _geomean_with_interval(data: pd.DataFrame, title: str, log_scale: bool,
                          *extra: alt.Chart) -> alt.Chart:
    """Median line and interval bars against max_len per implementation (and ``extra``
    layers without data of their own), one panel per sequence_length and cell variant."""
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=True)
    base = alt.Chart().encode(
        x=alt.X("max_len:Q", title="max_len (time steps)"),
        color=IMPL_COLOR,
    )
    lines = base.mark_line(point=True).encode(
        y=alt.Y("geomean:Q", title=title, scale=scale),
        tooltip=["variant", "sequence_length", "impl", "max_len", "geomean", "ci_low", "ci_high"],
    )
    bars = base.mark_errorbar().encode(y=alt.Y("ci_low:Q", title=title, scale=scale), y2="ci_high:Q")
    data, row = ordered_row(data, "variant")
    return alt.layer(lines, bars, *extra, data=data).facet(
        column=alt.Column("sequence_length:N", title=None), row=row)


def _phases(summary: pd.DataFrame) -> str:
    """The setup's phases in the words of the summary's apis (grid.api_words): 'graph
    construction + session setup + first step' for compat_v1, 'tracing + model setup + first
    call' for Keras."""
    return " + ".join(grid.api_words(summary["api"], phase) for phase in
                      ("graph_construction_s", "session_setup_s", "first_step_s"))


def _steps(summary: pd.DataFrame) -> str:
    """'training step', 'inference step' or 'step', by the summary's modes (grid.MODES)."""
    modes = set(summary["mode"]) if "mode" in summary else {"train"}
    return {frozenset({"train"}): "training step",
            frozenset({"inference"}): "inference step"}.get(frozenset(modes), "step")


def setup_time_chart(summary: pd.DataFrame) -> alt.Chart:
    """Median setup seconds (graph construction + session setup + first step; for Keras
    tracing + model setup + first call) against max_len, per implementation, with 95 %
    t-intervals over repeats (fresh processes); log y axis."""
    data = _long(summary, "setup_s")
    return _geomean_with_interval(
        data, f"{_phases(summary)} (s)", log_scale=True
    ).properties(title=f"Setup time before the second {_steps(summary)}")


def steps_per_s_chart(summary: pd.DataFrame) -> alt.Chart:
    """Median steady-state steps/s against max_len, per implementation and sequence_length."""
    data = _long(summary, "steps_per_s")
    return _geomean_with_interval(data, "steady-state steps/s", log_scale=False).properties(
        title=f"Steady-state speed, {_steps(summary)}s per second"
    )


def cumulative_time_chart(cumulative: pd.DataFrame) -> alt.Chart:
    """Total wall time against training steps per implementation, one panel per cell, with
    the break-even step (where static's total drops below dynamic's for good) as a rule and
    its 95 % Fieller interval over repeats as a grey band (to the panel's edge: up to never)."""
    horizon = cumulative.groupby("cell_id")["steps"].transform("max")
    data = cumulative.assign(
        panel=_variant(cumulative) + ", sequence_length " + cumulative["sequence_length"].astype(str),
        # the interval, clipped to the panel's horizon where it reaches 'never' (inf)
        band_low=cumulative["breakeven_steps_ci_low"].clip(upper=horizon),
        band_high=cumulative["breakeven_steps_ci_high"].clip(upper=horizon),
    )
    lines = alt.Chart().mark_line().encode(
        x=alt.X("steps:Q", title="training steps after the first"),
        y=alt.Y("total_s:Q", title="total wall time (s)"),
        color=IMPL_COLOR,
        tooltip=["cell_id", "impl", "steps", "total_s"],
    )
    rule = alt.Chart().mark_rule(strokeDash=[4, 3], color="black").encode(
        x="breakeven_steps:Q",
        tooltip=["cell_id", "breakeven_steps", "breakeven_steps_ci_low", "breakeven_steps_ci_high"],
    ).transform_filter("isValid(datum.breakeven_steps)")
    # one translucent rectangle per panel (drawn from one row, not from every row of the
    # cell, which would stack into an opaque block), behind the lines
    band = alt.Chart().mark_rect(opacity=0.15, color="gray").encode(
        x="band_low:Q", x2="band_high:Q",
    ).transform_filter("isValid(datum.breakeven_steps) && isValid(datum.band_low) "
                       "&& datum.steps == 0 && datum.impl == 'static'")
    data, row = ordered_row(data, "panel")
    return alt.layer(band, lines, rule, data=data).facet(
        column=alt.Column("max_len:O", title="max_len"), row=row,
    ).resolve_scale(x="independent", y="independent").properties(
        title="Cumulative time; dashed line: break-even step (none: static never catches up), "
              "band: its 95 % interval"
    )


def roofline_chart(summary: pd.DataFrame) -> alt.Chart:
    """Median achieved GFLOP/s (roofline.step_flop / median step) against max_len per
    implementation, with 95 % intervals, and the device's matmul rate (rule peak) as a
    dashed line: how far each implementation is from what the device's matmuls can do."""
    data = _long(summary, "achieved_flop_per_s")
    data[["geomean", "ci_low", "ci_high"]] /= 1e9
    # each cell's peak: rule peak's at its intra-op threads (one line per panel)
    data["peak"] = pd.concat([summary["peak_flop_per_s"]] * 2, ignore_index=True) / 1e9
    rule = alt.Chart().mark_rule(strokeDash=[4, 3], color="black").encode(
        y=alt.Y("max(peak):Q", scale=alt.Scale(type="log")),
        tooltip=[alt.Tooltip("max(peak):Q", title="peak")])
    return _geomean_with_interval(data, "achieved GFLOP/s (log)", True, rule).properties(
        title=f"Achieved GFLOP/s per {_steps(summary)}; dashed: the device's float32 matmul rate")


def ratio_heatmap_chart(summary: pd.DataFrame) -> alt.Chart:
    """static/dynamic ratio of median setup time and of median step time over the grid
    (max_len x sequence_length); above 1 means static is slower. Log colour scale centred on 1."""
    frames = []
    for metric, label in (("setup_s", "setup time ratio"), ("median_step_s", "step time ratio")):
        frames.append(pd.DataFrame({
            "variant": _variant(summary),
            "max_len": summary["max_len"],
            "sequence_length": summary["sequence_length"].astype(str),
            "quantity": label,
            "ratio": summary[f"ratio_{metric}"],
            "ci_low": summary[f"ratio_{metric}_ci_low"],
            "ci_high": summary[f"ratio_{metric}_ci_high"],
        }))
    data = pd.concat(frames, ignore_index=True)
    base = alt.Chart().encode(
        x=alt.X("max_len:O", title="max_len", sort=natural_order(data["max_len"])),
        # the y title once, in the chart's subtitle: repeated per row, short rows overlap it
        y=alt.Y("sequence_length:N", title=None, sort=natural_order(data["sequence_length"])),
    )
    rects = base.mark_rect().encode(
        color=alt.Color("ratio:Q", title="static / dynamic", legend=alt.Legend(format=".2f"),
                        scale=alt.Scale(type="log", scheme="redblue", reverse=True, domainMid=1)),
        tooltip=["variant", "quantity", "max_len", "sequence_length", "ratio", "ci_low", "ci_high"],
    )
    text = base.mark_text(baseline="middle").encode(text=alt.Text("ratio:Q", format=".2f"))
    # row labels horizontal, left of the panels: rotated, they ran into the axis titles
    data, row = ordered_row(data, "variant", labelAngle=0, labelAlign="left", labelOrient="top",
                            labelFontWeight="bold")
    cells = alt.layer(rects, text, data=data).properties(width={"step": 60}, height={"step": 36})
    return cells.facet(column=alt.Column("quantity:N", title=None), row=row,
    ).properties(title=alt.Title(f"{grid.impl_words(summary['api'])} (above 1: static slower)",
                                 subtitle="rows of each panel: sequence_length"))


SETUP_AND_STEP = {"setup_s": "setup (s)", "median_step_s": "median step (s)"}
ABLATION_METRICS = {**SETUP_AND_STEP, "mean_step_s": "mean step (s)"}


def ablation_chart(summary: pd.DataFrame, axis: str) -> alt.Chart:
    """One ablation axis (a key of grid.ABLATION_DEFAULTS): median setup, median step and
    mean step seconds (total / steps: what a loop timed as a whole reports) against the
    axis's values, per implementation, with 95 % t-intervals over repeats (fresh processes); one row
    per base cell, only the cells that differ from it in this axis alone.

    Raises:
        ValueError: for an axis that is not an ablation axis, or a summary whose cells do not
            vary it.
    """
    if axis not in grid.ABLATION_DEFAULTS:
        raise ValueError(f"chart: {axis!r} is not one of the ablation axes "
                         f"{list(grid.ABLATION_DEFAULTS)}")
    rows = [row for _, row in summary.iterrows()]
    if axis not in grid.charted_ablation_axes(rows):
        raise ValueError(f"chart: the grid does not vary {axis} alone (values "
                         f"{sorted(summary[axis].astype(str).unique())})")
    varied = grid.varied_axes(rows)
    alone = summary[[grid.on_axis(row, axis, varied) for row in rows]]
    data = _per_impl(alone, ABLATION_METRICS,
                     panel=_variant(alone.assign(ablations="")) + " ml"
                     + alone["max_len"].astype(str) + " sl" + alone["sequence_length"].astype(str),
                     value=alone[axis].astype(str))
    order = [str(grid.ABLATION_DEFAULTS[axis])] + sorted(
        set(data["value"]) - {str(grid.ABLATION_DEFAULTS[axis])})
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
    """Per api (x, in grid.API_SUFFIXES' order) and implementation (colour, side by side):
    median setup seconds (for the keras apis: tracing, the first call's compilation and
    step, and model setup) and median step seconds, with 95 % t-intervals over repeats; one
    row per cell variant, max_len and sequence_length. Cells with ablations are left out.
    (Earlier the x axis was max_len with a line dash per api: on a grid of one max_len, as
    presets/keras-cpu.yaml, every api stood on one x, and the apis could not be told apart.)

    Raises:
        ValueError: if the summary holds fewer than two apis.
    """
    plain = summary[summary["ablations"] == ""]
    if plain["api"].nunique() < 2:
        raise ValueError(f"chart: api needs two apis or more, not {sorted(plain['api'].unique())}")
    data = _per_impl(plain, SETUP_AND_STEP,
                     panel=_variant(plain.assign(api="compat_v1")) + ", max_len "
                     + plain["max_len"].astype(str) + ", sequence_length "
                     + plain["sequence_length"].astype(str),
                     api=plain["api"], max_len=plain["max_len"])
    order = [api for api in grid.API_SUFFIXES if api in set(plain["api"])]
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
    """The same cells in each TensorFlow version: per implementation (colour), median setup
    seconds, median step seconds and the static / dynamic step-time ratio against tf_version,
    with 95 % t-intervals over repeats; one row per cell (without its version) and column per
    quantity. Cells with ablations are left out.

    Raises:
        ValueError: if the summary holds fewer than two TensorFlow versions.
    """
    plain = summary[summary["ablations"] == ""]
    versions = sorted(plain["tf_version"].astype(str).unique(), key=grid.tf_version_key)
    if len(versions) < 2:
        raise ValueError(f"chart: tf_version needs two TensorFlow versions or more, not {versions}")
    panel = (_variant(plain.assign(tf_version=grid.DEFAULT_TF_VERSION)) + ", max_len "
             + plain["max_len"].astype(str) + ", sequence_length "
             + plain["sequence_length"].astype(str))
    version = plain["tf_version"].astype(str)
    data = pd.concat([
        _per_impl(plain, SETUP_AND_STEP, panel=panel, tf_version=version),
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


SETUP_PARTS = ("graph_construction_s", "session_setup_s", "graph_optimisation_s",
               "first_step_rest_s")
"""The setup's phases, stacked in this order (grid.API_WORDS names them per api)."""


def setup_split_chart(summary: pd.DataFrame) -> alt.Chart:
    """Where the setup goes: per cell and implementation, stacked bars of the geometric means
    over repeats (seconds) of graph construction (Keras: tracing), session setup (Keras: model
    setup), Grappler's graph optimisation timed alone (compat_v1 with grappler_alone; for
    jax_scan the XLA compilation) and the rest of the first step (not split where the
    optimisation was not timed alone: the Keras apis); one row of panels per variant,
    one group of bars per max_len and sequence_length, static and dynamic side by side."""
    frames = []
    for part in SETUP_PARTS:
        for impl in ("static", "dynamic"):
            seconds = summary[f"{impl}_{part}"]
            split = summary[f"{impl}_graph_optimisation_s"].notna()
            words = summary["api"].map(lambda api: grid.api_words([api], part))
            if part == "first_step_rest_s":  # not split where nothing was timed alone
                seconds = seconds.where(split, summary[f"{impl}_first_step_s"])
                words = words.where(split, summary["api"].map(
                    lambda api: grid.api_words([api], "first_step_s")))
            # (each row in its api's words: grid.API_WORDS)
            frames.append(pd.DataFrame({
                "variant": _variant(summary),
                "shape": "ml " + summary["max_len"].astype(str) + ", sl "
                + summary["sequence_length"].astype(str),
                "impl": impl, "part": words,
                "order": SETUP_PARTS.index(part), "seconds": seconds}))
    data = pd.concat(frames, ignore_index=True).dropna(subset=["seconds"])
    parts = list(dict.fromkeys(data.sort_values("order")["part"]))
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("shape:N", title="max_len, sequence_length", sort=natural_order(data["shape"])),
        xOffset=alt.XOffset("impl:N", sort=["static", "dynamic"]),
        y=alt.Y("sum(seconds):Q", title="seconds (geometric mean over repeats)"),
        color=alt.Color("part:N", title="phase", sort=parts),
        order=alt.Order("order:Q"),
        opacity=alt.Opacity("impl:N", sort=["static", "dynamic"], title="implementation",
                            scale=alt.Scale(range=[1.0, 0.55])),
        tooltip=["variant", "shape", "impl", "part", alt.Tooltip("seconds:Q", format=".3f")],
    ).facet(row=alt.Row("variant:N", title=None, sort=natural_order(data["variant"]))
            ).resolve_scale(y="independent").properties(
        title=f"Where the setup goes, per cell: left bar {grid.api_words(summary['api'], 'static')}"
              f", right bar {grid.api_words(summary['api'], 'dynamic')}")


RATIO_OF = {"setup_s": "setup", "median_step_s": "median step"}


def ratio_chart(summary: pd.DataFrame, axis: str) -> alt.Chart:
    """The static/dynamic ratio of the median setup and of the median step, with 95 %
    intervals, against ``axis`` (one of grid.RATIO_AXES; log x at the grid's values, one
    shared log y with a rule at 1), one panel per combination of the other axes the grid
    varies; the cells without ablations only.

    Raises:
        ValueError: for an axis not in grid.RATIO_AXES, or one the summary does not vary.
    """
    plain = summary[summary["ablations"].fillna("") == ""]
    if axis not in grid.RATIO_AXES or axis not in grid.ratio_axes(
            row for _, row in plain.iterrows()):
        raise ValueError(f"chart: ratio_{axis}: the grid does not vary {axis} (one of "
                         f"{list(grid.RATIO_AXES)})")
    others = [a for a in ("cell", *grid.RATIO_AXES, "sequence_length", "api", "tf_version", "mode")
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
    y_title = f"{grid.impl_words(plain['api'])} (log)"
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
    """The unroll spectrum of the jax_scan cells (findings.unroll_table): tracing, XLA
    compilation and the median step (seconds, geometric means over repeats; log y) against
    the scan's unroll factor (log x, 1: dynamic's loop), one panel per cell shape.

    Raises:
        ValueError: for a summary without jax_scan cells.
    """
    from rnnbench.findings import unroll_table

    table = unroll_table(summary)
    if table.empty:
        raise ValueError("chart: jax_unroll: the grid has no jax_scan cell")
    parts = {"graph_construction_s": "tracing and lowering",
             "graph_optimisation_s": "XLA compilation", "median_step_s": "median step"}
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


def build_chart(name: str, summary: pd.DataFrame, cumulative: pd.DataFrame) -> alt.Chart:
    """The chart called ``name`` (one of CHARTS or ABLATION_CHARTS).

    Raises:
        ValueError: for an unknown chart name.
    """
    if name == "setup_time":
        return setup_time_chart(summary)
    if name == "steps_per_s":
        return steps_per_s_chart(summary)
    if name == "cumulative_time":
        return cumulative_time_chart(cumulative)
    if name == "ratio_heatmap":
        return ratio_heatmap_chart(summary)
    if name == "roofline":
        return roofline_chart(summary)
    if name == "api":
        return api_chart(summary)
    if name == "tf_version":
        return tf_version_chart(summary)
    if name == "setup_split":
        return setup_split_chart(summary)
    if name == "jax_unroll":
        return jax_unroll_chart(summary)
    if name.startswith("ratio_"):
        return ratio_chart(summary, name.removeprefix("ratio_"))
    if name in ABLATION_CHARTS:
        return ablation_chart(summary, name.removeprefix("ablation_"))
    raise ValueError(f"chart: unknown chart {name!r}; expected one of {CHARTS + ABLATION_CHARTS}")


def save_chart(chart: alt.Chart, html_path: str, svg_path: str) -> None:
    """Save ``chart`` as self-contained HTML (Vega libraries inlined, opens offline) and as SVG
    (rendered by vl-convert)."""
    chart.save(html_path, inline=True)
    chart.save(svg_path)
