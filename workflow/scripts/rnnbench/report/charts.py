"""Altair charts: one function per chart, each taking tidy tables and returning an alt.Chart.

This module holds the charts every grid gets, save_chart and save_chart_apart (in a child
process, which the renderer's abort cannot take along). It also holds build_chart, the
one entry point rule plot calls; it reads the registry, chartlist.CHARTS. The charts of what a
grid varies are in charts_varied.py, their common parts in chart_parts.py. Every chart facets
by the grid axes not on its x axis, through a ``variant`` label (cell, batch_size, num_units,
input_dim). So a grid over more than max_len and sequence_length stays readable.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from rnnbench.grid import vocabulary
from rnnbench.stats.intervals import side_of_one
from rnnbench.report.chart_parts import (IMPL_COLOR, geomean_with_interval, long_form, natural_order,
                                  ordered_row, phase_words, step_words, variant)
from rnnbench.report.chartlist import chart_of, draw_function


def setup_time_chart(summary: pd.DataFrame) -> alt.Chart:
    """Chart median setup seconds against max_len, per implementation; log y axis.

    Setup is graph construction + session setup + first step (Keras: tracing + model setup +
    first call). Bars: 95 % t-intervals over repeats (fresh processes).

    Args:
        summary: summary.csv, one row per cell.

    Returns:
        The chart.
    """
    data = long_form(summary, "setup_s")
    # the phases in the subtitle: as the y title, repeated per row, two apis' words
    # overlapped the next row's
    return geomean_with_interval(data, "setup (s, log)", log_scale=True).properties(
        title=alt.Title(f"Setup time before the second {step_words(summary)}",
                        subtitle=f"setup: {phase_words(summary)}; bars: 95 % intervals"))


def steps_per_s_chart(summary: pd.DataFrame) -> alt.Chart:
    """Chart median steady-state steps/s against max_len, per implementation.

    One panel per sequence_length and cell variant.

    Args:
        summary: summary.csv, one row per cell.

    Returns:
        The chart.
    """
    data = long_form(summary, "steps_per_s")
    return geomean_with_interval(data, "steps/s", log_scale=False).properties(
        title=alt.Title(f"Steady-state speed, {step_words(summary)}s per second",
                        subtitle="bars: 95 % intervals over fresh processes"))


def cumulative_time_chart(cumulative: pd.DataFrame) -> alt.Chart:
    """Chart total wall time against training steps per implementation, one panel per cell.

    A rule marks the break-even step, where static's total drops below dynamic's for good. A
    grey band is its 95 % Fieller interval over repeats; to the panel's edge when it reaches
    never.

    Args:
        cumulative: cumulative_time.csv: per cell, implementation and step count, total_s, with
            breakeven_steps and its breakeven_steps_ci_low, _ci_high (inf: never).

    Returns:
        The chart.
    """
    horizon = cumulative.groupby("cell_id")["steps"].transform("max")
    data = cumulative.assign(
        panel=variant(cumulative) + ", sequence_length " + cumulative["sequence_length"].astype(str),
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
    """Chart median achieved GFLOP/s against max_len per implementation, with 95 % intervals.

    Achieved is flop.step_flop / median step. A dashed line is the device's matmul rate (rule
    peak); a rate above it is flagged 'above peak'.

    Args:
        summary: summary.csv, one row per cell, with achieved_flop_per_s (and its interval)
            and peak_flop_per_s.

    Returns:
        The chart.
    """
    data = long_form(summary, "achieved_flop_per_s")
    data[["geomean", "ci_low", "ci_high"]] /= 1e9
    # each cell's peak: rule peak's at its intra-op threads (one line per panel)
    data["peak"] = pd.concat([summary["peak_flop_per_s"]] * 2, ignore_index=True) / 1e9
    rule = alt.Chart().mark_rule(strokeDash=[4, 3], color="black").encode(
        y=alt.Y("max(peak):Q", scale=alt.Scale(type="log")),
        tooltip=[alt.Tooltip("max(peak):Q", title="peak")])
    # an achieved rate above the measured peak is flagged where it is drawn: the peak is one
    # large matmul's rate (rule peak), and a step of many small fused ops can beat it
    data["above_peak"] = data["geomean"] > data["peak"]
    above = alt.Chart().mark_text(dy=-12, fontWeight="bold", color="#b2182b").encode(
        y=alt.Y("geomean:Q", scale=alt.Scale(type="log")), text=alt.value("above peak"),
    ).transform_filter("datum.above_peak")
    flagged = int(data["above_peak"].sum())
    return geomean_with_interval(data, "GFLOP/s (log)", True, rule, above).properties(
        title=alt.Title(f"Achieved GFLOP/s per {step_words(summary)}", subtitle=[
            "dashed: the device's float32 matmul rate, measured by one large matmul"]
            + ([f"'above peak': {flagged} achieved rate(s) above it; the measured peak is "
                "not a bound for these small fused ops"] if flagged else [])))


def ratio_heatmap_chart(summary: pd.DataFrame) -> alt.Chart:
    """Chart static / dynamic ratios of median setup and step time over the grid.

    One panel per quantity and variant, its cells max_len x sequence_length. Above 1 means
    static is slower. Log colour scale centred on 1; a ratio whose 95 % interval holds 1 is
    grey, its number starred.

    Args:
        summary: summary.csv, one row per cell.

    Returns:
        The chart.
    """
    frames = []
    for metric, label in (("setup_s", "setup time ratio"), ("median_step_s", "step time ratio")):
        frames.append(pd.DataFrame({
            "variant": variant(summary),
            "max_len": summary["max_len"],
            "sequence_length": summary["sequence_length"].astype(str),
            "quantity": label,
            "ratio": summary[f"ratio_{metric}"],
            "ci_low": summary[f"ratio_{metric}_ci_low"],
            "ci_high": summary[f"ratio_{metric}_ci_high"],
        }))
    data = pd.concat(frames, ignore_index=True)
    # an inconclusive ratio (its 95 % interval holds 1, or has no interval) is drawn neutral:
    # grey, its number starred, so only clear differences carry colour (white: no such cell)
    clear = pd.Series([side_of_one(low, high) != "across"
                       for low, high in zip(data["ci_low"], data["ci_high"])], index=data.index)
    data["clear"] = clear
    data["label"] = [f"{r:.2f}" + ("" if ok else "*") for r, ok in zip(data["ratio"], clear)]
    # the diverging scale runs from the smallest clear ratio to 1 and from 1 to the largest:
    # past 60 % of either side (on the log scale) the colour is dark, and its number white
    logs = np.log(data["ratio"].where(clear))
    data["dark"] = clear & ((logs > 0.6 * logs.max()) | (logs < 0.6 * logs.min()))
    base = alt.Chart().encode(
        x=alt.X("max_len:O", title="max_len", sort=natural_order(data["max_len"])),
        # the y title once, in the chart's subtitle: repeated per row, short rows overlap it
        y=alt.Y("sequence_length:N", title=None, sort=natural_order(data["sequence_length"])),
    )
    rects = base.mark_rect().encode(
        color=alt.condition(
            "datum.clear",
            alt.Color("ratio:Q", title="static / dynamic", legend=alt.Legend(format=".2f"),
                      scale=alt.Scale(type="log", scheme="redblue", reverse=True, domainMid=1)),
            alt.value("#d9d9d9")),
        tooltip=["variant", "quantity", "max_len", "sequence_length", "ratio", "ci_low", "ci_high"],
    )
    text = base.mark_text(baseline="middle").encode(
        text="label:N", color=alt.condition("datum.dark", alt.value("white"), alt.value("black")))
    # row labels horizontal, left of the panels: rotated, they ran into the axis titles
    data, row = ordered_row(data, "variant", labelAngle=0, labelAlign="left", labelOrient="top",
                            labelFontWeight="bold")
    cells = alt.layer(rects, text, data=data).properties(width={"step": 60}, height={"step": 36})
    return cells.facet(column=alt.Column("quantity:N", title=None), row=row,
    ).properties(title=alt.Title(f"{vocabulary.impl_words(summary['api'])} (above 1: static slower)",
                                 subtitle=["rows of each panel: sequence_length",
                                           "grey, *: no clear difference (the 95 % interval "
                                           "holds 1); white: not in the grid"]))


SETUP_PARTS = ("graph_construction_s", "init_s", "optimisation_s",
               "first_step_rest_s")
"""The setup's phases, stacked in this order (vocabulary.API_WORDS names them per api)."""


def setup_split_chart(summary: pd.DataFrame) -> alt.Chart:
    """Chart where the setup goes: stacked bars of its phases per cell and implementation.

    The bars are geometric means over repeats (seconds) of the phases in SETUP_PARTS:
    graph construction (Keras: tracing), session setup (Keras: model setup), graph
    optimisation timed alone (compat_v1 with grappler_alone; jax_scan: XLA compilation) and
    the rest of the first step. Where the optimisation was not timed alone (the Keras apis),
    the first step is not split. One row of panels per variant; one group of bars per max_len
    and sequence_length, static and dynamic side by side.

    Args:
        summary: summary.csv, one row per cell.

    Returns:
        The chart.
    """
    frames = []
    for part in SETUP_PARTS:
        for impl in ("static", "dynamic"):
            seconds = summary[f"{impl}_{part}"]
            split = summary[f"{impl}_optimisation_s"].notna()
            words = summary["api"].map(lambda api: vocabulary.api_words([api], part))
            if part == "first_step_rest_s":  # not split where nothing was timed alone
                seconds = seconds.where(split, summary[f"{impl}_first_step_s"])
                words = words.where(split, summary["api"].map(
                    lambda api: vocabulary.api_words([api], "first_step_s")))
            # (each row in its api's words: vocabulary.API_WORDS)
            frames.append(pd.DataFrame({
                "variant": variant(summary),
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
        title=f"Where the setup goes, per cell: left bar {vocabulary.api_words(summary['api'], 'static')}"
              f", right bar {vocabulary.api_words(summary['api'], 'dynamic')}")


def build_chart(name: str, summary: pd.DataFrame, cumulative: pd.DataFrame,
                runs: pd.DataFrame | None = None, fits: list | None = None) -> alt.Chart:
    """Draw the chart called ``name`` by its kind's function, from the tables it names.

    Args:
        name: a chart name (chartlist.ALL_CHARTS).
        summary: summary.csv, one row per cell.
        cumulative: cumulative_time.csv.
        runs: measurements.csv, one row per run; needed by the crossover chart only.
        fits: the run's cost-model fits (costmodel.fit.read_fits), for the crossover chart;
            None fits ``runs`` there.

    Returns:
        The chart.

    Raises:
        ValueError: for an unknown chart name.
    """
    chart, axis = chart_of(name)
    tables = {"summary": summary, "cumulative": cumulative, "runs": runs, "fits": fits}
    return draw_function(chart)(*(tables[table] for table in chart.tables),
                                *(() if axis is None else (axis,)))


def save_chart(chart: alt.Chart, html_path: str, svg_path: str) -> None:
    """Save ``chart`` as self-contained HTML and as SVG.

    Args:
        chart: the chart.
        html_path: the HTML file; Vega libraries inlined, so it opens offline.
        svg_path: the SVG file, rendered by vl-convert.
    """
    chart.save(html_path, inline=True)
    chart.save(svg_path)


def save_chart_apart(chart: alt.Chart, html_path: str, svg_path: str) -> tuple[int, list[str]]:
    """Save ``chart`` as save_chart does, in a child process whose end cannot end this one.

    vl-convert's V8 aborts its whole process, with no Python exception, when it cannot
    reserve its address space (an address-space limit, ``ulimit -v``). The child is started
    afresh (spawned: a forked copy of a process whose V8 already runs would hang), and its
    standard error goes to a temporary file. A child that failed leaves no chart file.

    Args:
        chart: the chart.
        html_path: the HTML file (save_chart).
        svg_path: the SVG file (save_chart).

    Returns:
        The child's exit code (0: both files written; 1: a Python exception; negative: the
        signal that ended it) and its standard error's lines (what
        rnnbench.pipeline.failures.error_line reads).
    """
    import multiprocessing
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        stderr = Path(folder) / "stderr"
        child = multiprocessing.get_context("spawn").Process(
            target=_save_with_stderr, args=(chart, html_path, svg_path, str(stderr)))
        child.start()
        child.join()
        lines = stderr.read_text(errors="replace").splitlines() if stderr.exists() else []
    if child.exitcode != 0:
        for path in (html_path, svg_path):
            Path(path).unlink(missing_ok=True)
    return child.exitcode, lines


def _save_with_stderr(chart: alt.Chart, html_path: str, svg_path: str, stderr: str) -> None:
    """In save_chart_apart's child: send standard error to the file ``stderr``, then
    save_chart."""
    import os

    with open(stderr, "w") as handle:  # V8's crash writes to descriptor 2, not sys.stderr
        os.dup2(handle.fileno(), 2)
    save_chart(chart, html_path, svg_path)
