"""The charts: one record per chart kind, the one registry the Snakefile (which charts a grid
gets), rule plot (which function draws one), the report's captions (workflow/report/plot.rst
is written from it) and results/README.md read.

Adding a chart is a function in charts.py or charts_varied.py and a record here; then
``python3 -m rnnbench.report.chartlist > workflow/report/plot.rst`` (tests/report/test_charts.py
checks the file, and that results/README.md names every kind). This module imports no
plotting library: the Snakefile reads it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple

from rnnbench.grid.axes import ABLATION_DEFAULTS, NUMERIC_AXES
from rnnbench.grid.plan import charted_ablation_axes, charts_apis, ratio_axes


class Grid(NamedTuple):
    """What decides a grid's charts.

    Attributes:
        cells: the grid's cells (cells.cells' values).
        tf_versions: the TensorFlow versions they run at.
        apis: the config's ``api`` list.
    """

    cells: list
    tf_versions: list
    apis: list


@dataclass(frozen=True)
class Chart:
    """One chart kind.

    Attributes:
        name: the chart's name, or a family's prefix ending in '_' (ablation_, ratio_):
            then one chart per axis, named prefix + axis.
        draw: the function that draws it, 'module.function' in rnnbench.report; it takes the
            tables named in ``tables`` and, for a family, the axis.
        tables: the tables it draws from, of 'summary', 'cumulative', 'runs'.
        axes: a family's axes (every name it can take); () for a single chart.
        gets: which of its names a grid gets (Grid -> names).
        caption: its report caption (reStructuredText; ``{axis}`` for a family's axis).
    """

    name: str
    draw: str
    tables: tuple[str, ...]
    gets: Callable[[Grid], list[str]]
    caption: str
    axes: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Every name this kind can take."""
        return tuple(self.name + axis for axis in self.axes) if self.axes else (self.name,)


def _every(name: str) -> Callable[[Grid], list[str]]:
    return lambda grid: [name]


INTERVALS = "95 % t-intervals over repeats (fresh processes; docs/method.md, Intervals)"
CHARTS = (
    Chart("setup_time", "charts.setup_time_chart", ("summary",), _every("setup_time"),
          "Graph construction + session setup + first step (seconds, log scale) against "
          f"max_len; bars are {INTERVALS}. static_rnn's graph grows with max_len, "
          "dynamic_rnn's does not."),
    Chart("steps_per_s", "charts.steps_per_s_chart", ("summary",), _every("steps_per_s"),
          "Steady-state training steps per second (geometric mean over runs of each run's "
          "median step) against max_len, one panel per sequence_length setting; bars are "
          f"{INTERVALS}."),
    Chart("cumulative_time", "charts.cumulative_time_chart", ("cumulative",),
          _every("cumulative_time"),
          "Total wall time (setup + n steps, from the arithmetic means over runs, which cross "
          "at the break-even) against training steps; the dashed line is the break-even step "
          "after which static_rnn stays ahead. No line: static never catches up."),
    Chart("ratio_heatmap", "charts.ratio_heatmap_chart", ("summary",), _every("ratio_heatmap"),
          "static_rnn / dynamic_rnn ratio of median setup time and of median step time over "
          "the grid (above 1: static slower)."),
    Chart("roofline", "charts.roofline_chart", ("summary",), _every("roofline"),
          "Achieved GFLOP/s of a training step (forward + backward matmul FLOP of the time "
          "steps the batch computes, over the median step time; log scale) against max_len, "
          "with 95 % intervals; the dashed line is the device's float32 matmul rate measured "
          "by rule peak in the same run."),
    Chart("setup_split", "charts.setup_split_chart", ("summary",), _every("setup_split"),
          "Where the setup goes: per cell and implementation, stacked bars (geometric means "
          "over repeats, seconds) of graph construction (Keras, JAX: tracing), session setup "
          "(Keras: model setup), the graph optimisation timed alone (compat_v1's Grappler; "
          "jax_scan: XLA compilation) and the rest of the first step; one group per max_len "
          "and sequence_length, static and dynamic side by side."),
    Chart("ablation_", "charts_varied.ablation_chart", ("summary",),
          lambda grid: [f"ablation_{axis}" for axis in charted_ablation_axes(list(grid.cells))],
          "Ablation {axis}: median setup, median step and mean step seconds (log scale) for "
          "each value of the axis, the first being the reference, per implementation, in the "
          "cells that differ from their reference cell in this axis alone; bars are 95 % "
          "t-intervals over repeats (log scale). The mean step (total / steps) shows what a loop "
          "timed as a whole reports, e.g. a fetch set first run inside the timed loop.",
          tuple(ABLATION_DEFAULTS)),
    Chart("api", "charts_varied.api_chart", ("summary",),
          lambda grid: ["api"] if charts_apis(list(grid.cells)) else [],
          "Per api (x) and implementation (colour, side by side: compat_v1's static_rnn / "
          "dynamic_rnn, a Keras layer's unroll=True / unroll=False on TensorFlow or on JAX, "
          "jax_scan's scan fully unrolled / its loop): median setup seconds (Keras: tracing, "
          "the first call's compilation and step, model setup) and median step seconds (log "
          "scale), with 95 % t-intervals over repeats (fresh processes); one row per cell "
          "variant, max_len and sequence_length; "
          "cells with ablations are left out."),
    Chart("tf_version", "charts_varied.tf_version_chart", ("summary",),
          lambda grid: ["tf_version"] if len(set(grid.tf_versions)) > 1 else [],
          "The same cells in each TensorFlow version (each in its own image): median setup "
          "seconds, median step seconds and the static / dynamic step ratio against "
          "tf_version, per implementation, with 95 % t-intervals over repeats; cells with "
          "ablations are left out."),
    Chart("ratio_", "charts_varied.ratio_chart", ("summary",),
          lambda grid: [f"ratio_{axis}" for axis in ratio_axes(grid.cells)],
          "The static / dynamic ratio of the median setup and of the median step (log scale, "
          "the rule at 1: no difference; above 1: static slower), with 95 % intervals over "
          "repeats, against {axis}; one panel per combination of the other axes the grid "
          "varies; cells with ablations are left out.", NUMERIC_AXES),
    Chart("jax_unroll", "charts_varied.jax_unroll_chart", ("summary",),
          lambda grid: ["jax_unroll"] if "jax_scan" in grid.apis else [],
          "The unroll spectrum of the jax_scan cells: tracing and lowering, XLA compilation "
          "and the median step (seconds, geometric means over repeats, log scale) against the "
          "scan's unroll factor (log scale; 1 is a plain loop, max_len fully unrolled), one "
          "panel per cell shape."),
    Chart("crossover", "charts_model.crossover_chart", ("summary", "runs", "fits"),
          lambda grid: ["crossover"] if "max_len" in ratio_axes(grid.cells) and len(
              {str(cell["sequence_length"]) for cell in grid.cells}) > 1 else [],
          "Where unrolling wins: the static / dynamic step ratio that the cost model fitted to "
          "this run predicts (docs/cost-model.md), over max_len (log scale) and the batch's "
          "longest sequence as a share of max_len, one panel per batch_size and num_units; "
          "blue: static faster, red: dynamic faster; circles: the measured cells; dashed "
          "lines: the fitted max_len range."),
)
"""Every chart kind, in the order a grid's charts are made."""
ALL_CHARTS = tuple(name for chart in CHARTS for name in chart.names)
"""Every chart name (rule plot's wildcard)."""


def plots(cells: Iterable[dict], tf_versions: Iterable[str], apis: Iterable[str]) -> list[str]:
    """List the charts of a grid, in CHARTS' order.

    Args:
        cells: the grid's cells (cells.cells' values).
        tf_versions: the TensorFlow versions the cells run at.
        apis: the config's ``api`` list.

    Returns:
        The chart names (a family's as prefix + axis).
    """
    grid = Grid(list(cells), list(tf_versions), list(apis))
    return [name for chart in CHARTS for name in chart.gets(grid)]


def chart_of(name: str) -> tuple[Chart, str | None]:
    """Find the kind of chart ``name``.

    Args:
        name: a chart name, e.g. ``setup_time`` or ``ablation_unroll``.

    Returns:
        The kind, and its family's axis (None for a single chart).

    Raises:
        ValueError: for a name no kind takes, naming the known ones.
    """
    for chart in CHARTS:
        if name in chart.names:
            return chart, name.removeprefix(chart.name) if chart.axes else None
    raise ValueError(f"chart: unknown chart {name!r}; expected one of {ALL_CHARTS}")


def draw_function(chart: Chart) -> Callable:
    """Import and return the function that draws ``chart``.

    Imported only now, as the plotting modules load Altair.

    Args:
        chart: the chart kind; its ``draw`` names the function.

    Returns:
        The function.
    """
    module, function = chart.draw.rsplit(".", 1)
    return getattr(importlib.import_module(f"rnnbench.report.{module}"), function)


def plot_rst(width: int = 96) -> str:
    """Write the text of workflow/report/plot.rst: each chart's caption.

    The chart wildcard chooses the caption (Jinja2, as Snakemake's report renders a caption).

    Args:
        width: the line width the captions are wrapped to, characters.

    Returns:
        The file's text.
    """
    import textwrap

    out = []
    for number, chart in enumerate(CHARTS):
        test = (f'snakemake.wildcards.chart.startswith("{chart.name}")' if chart.axes
                else f'snakemake.wildcards.chart == "{chart.name}"')
        out.append(f"{{% {'if' if number == 0 else 'elif'} {test} %}}")
        text = chart.caption.replace(
            "{axis}", f"{{{{ snakemake.wildcards.chart[{len(chart.name)}:] }}}}")
        out += textwrap.wrap(text, width, break_on_hyphens=False)
    return "\n".join([*out, "{% endif %}", ""])


if __name__ == "__main__":
    print(plot_rst(), end="")
