"""Plan the workflow's training jobs for a grid, and decide which charts it gets.

The order and threads of the jobs: common.smk reads them. The charts:
rnnbench.report.chartlist reads them.
"""

from __future__ import annotations

from typing import Any, Iterable

from rnnbench.grid.axes import ABLATION_DEFAULTS, COMPAT_V1_ONLY, NUMERIC_AXES, value_of
from rnnbench.grid.cells import ablated_axes, varied_axes


def ratio_axes(cells: Iterable) -> list[str]:
    """Return the axes that get a chart of the static / dynamic ratios.

    Each gets charts_varied.ratio_chart.

    Args:
        cells: the grid's cells (dicts or table rows).

    Returns:
        The axes.NUMERIC_AXES that take two values or more among ``cells``.
    """
    cells = list(cells)
    return [axis for axis in NUMERIC_AXES if len({int(cell[axis]) for cell in cells}) > 1]


def charted_ablation_axes(cells: list) -> list[str]:
    """Return the ablation axes that get a chart (charts_varied.ablation_chart).

    Args:
        cells: the grid's cells (dicts or table rows).

    Returns:
        The varied ablation axes that take at least two values among the cells on that axis
        (on_axis: differing from their reference in that axis alone; compat_v1 cells only, for
        COMPAT_V1_ONLY axes).
    """
    varied = varied_axes(cells)
    return [axis for axis in ABLATION_DEFAULTS
            if len({str(cell[axis]) for cell in cells if on_axis(cell, axis, varied)}) > 1]


def on_axis(cell: Any, axis: str, varied: Iterable[str]) -> bool:
    """Say whether ``cell`` belongs on ``axis``'s ablation chart.

    Args:
        cell: a cell (a dict or a table row).
        axis: an ablation axis.
        varied: the ablation axes the grid varies.

    Returns:
        True when the cell differs from its reference in that axis alone, or not at all (among
        ``varied``), and has the axis (a keras cell has no COMPAT_V1_ONLY axis).
    """
    return (set(ablated_axes(cell, varied)) <= {axis}
            and (axis not in COMPAT_V1_ONLY or value_of(cell, "api") == "compat_v1"))


def charts_apis(cells: list) -> bool:
    """Say whether the grid gets an api chart (charts_varied.api_chart).

    Args:
        cells: the grid's cells (dicts or table rows).

    Returns:
        True when its cells without ablations (among the grid's varied axes, as the summary's
        ``ablations``) are in two apis or more.
    """
    varied = varied_axes(cells)
    return len({value_of(cell, "api") for cell in cells
                if not ablated_axes(cell, varied)}) > 1


def job_threads(cell: dict) -> int:
    """Snakemake threads of a cell's training job: the most TensorFlow threads it asks for."""
    return max(value_of(cell, "intra_op_parallelism_threads"),
               value_of(cell, "inter_op_parallelism_threads"))


def run_groups(cells: dict[str, dict],
               shared: dict[tuple[str, str], str]) -> dict[str, str]:
    """Each cell's group: the cell whose runs it shares (cells.shared_runs), or itself.

    Args:
        cells: the grid's cells by id.
        shared: (cell_id, impl) -> the cell whose runs it takes (cells.shared_runs).

    Returns:
        {cell_id: group cell_id}, in the cells' order.
    """
    return {name: shared.get((name, "static"), shared.get((name, "dynamic"), name))
            for name in cells}


def more_jobs(jobs, cells: dict[str, dict], shared: dict[tuple[str, str], str],
              undecided: list[str], repeats: int) -> list[tuple[str, str, int]]:
    """Return the training jobs a second look adds.

    They are the repeats after the first ``repeats`` of every cell in the group (run_groups) of
    an undecided cell. So each cell that shares runs with it keeps its static and dynamic runs
    paired by repeat.

    Args:
        jobs: (cell_id, impl, repeat) of every job the workflow may run (job_priorities' keys
            for the planned repeats plus more_repeats).
        cells: the grid's cells by id.
        shared: (cell_id, impl) -> the cell whose runs it takes (cells.shared_runs).
        undecided: the cells whose step ratio the first look left undecided
            (rnnbench.stats.tables.undecided_cells).
        repeats: the planned repeats (config ``repeats``).

    Returns:
        The jobs of ``jobs`` after repeat ``repeats`` in those groups, in ``jobs``' order.

    Raises:
        KeyError: naming a cell of ``undecided`` that is not in ``cells``.
    """
    group_of = run_groups(cells, shared)
    groups = {group_of[cell] for cell in undecided}
    return [(cell, impl, repeat) for cell, impl, repeat in jobs
            if repeat > repeats and group_of[cell] in groups]


def job_priorities(cells: dict[str, dict], repeats: int,
                   shared: dict[tuple[str, str], str]) -> dict[tuple[str, str, int], int]:
    """Return the Snakemake priorities of the training jobs that run (higher runs first).

    Jobs run repeat by repeat through the grid (repeat 1 of every cell, then repeat 2, ...), so
    a slow spell of the machine spreads over cells instead of spoiling one. Within a repeat, a
    cell's static and dynamic runs are next to each other in time, and so are the dynamic runs
    of the cells that share its static run (or its dynamic run: jax_scan's unroll). That pair is
    what intervals.ratio_ci analyses paired. Static runs come first in odd repeats and dynamic in
    even ones, so neither side always follows the other.

    Args:
        cells: the grid's cells by id.
        repeats: the planned repeats.
        shared: (cell_id, impl) -> the cell whose runs it takes (cells.shared_runs); those
            runs get no job.

    Returns:
        (cell_id, impl, repeat) -> priority, each >= 1 (other rules: 0).
    """
    group_of = run_groups(cells, shared)
    groups = {g: i for i, g in enumerate(dict.fromkeys(group_of.values()))}
    out = {}
    for repeat in range(1, repeats + 1):
        for name in cells:
            group = group_of[name]
            top = 3 * (len(groups) * (repeats - repeat + 1) - groups[group])
            odd = repeat % 2 == 1
            for impl, first in (("static", odd), ("dynamic", not odd)):
                if (name, impl) not in shared:
                    out[(name, impl, repeat)] = ((top if first else top - 1) if group == name
                                                 else top - 2)
    return out
