"""Compute statistics per cell from the measurements table (rnnbench.results.load).

Per cell: the geometric means of each implementation's runs with their intervals, static /
dynamic ratios, break-even, and the flags that say how far to trust them (summarize).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

import numpy as np
import pandas as pd

from rnnbench.stats import intervals
from rnnbench.results.load import CELL_COLUMNS, check_no_overlap, check_one_environment

# Per-run quantities summarised per (cell, implementation); units are in the names.
METRICS = ("graph_construction_s", "init_s", "first_step_s", "optimisation_s",
           "first_step_rest_s", "setup_s",
           "median_step_s", "mean_step_s", "steps_per_s", "achieved_flop_per_s", "node_count",
           "peak_rss_mb")
# Quantities whose static/dynamic ratio the summary reports.
RATIO_METRICS = ("graph_construction_s", "first_step_s", "optimisation_s", "setup_s",
                 "first_100_steps_s", "median_step_s", "peak_rss_mb")
# A process whose median step is this many times slower or faster than the median process of
# its cell and implementation is an outlier: 1.5x is over 3 times the 7-16 % by which fresh
# processes differ here (rnnbench/measure/steady.py), and what two of three repeats at 330 ms against
# one at 131 ms would show.
OUTLIER_FACTOR = 1.5
# the fewest repeats of an implementation among which disagreeing_repeats looks for groups
DISAGREEMENT_REPEATS = 3


class Side(NamedTuple):
    """Hold a cell's runs of one implementation in repeat order, as arrays.

    summarize's many ratios and leave-one-out intervals thus index numpy arrays, not DataFrames.

    Attributes:
        repeat: the runs' repeat numbers [runs].
        values: the numeric columns of load_results, by name, each [runs].
    """

    repeat: np.ndarray
    values: dict[str, np.ndarray]

    @classmethod
    def of(cls, runs: "pd.DataFrame | Side") -> "Side":
        """The Side of some runs (rows of load_results), or ``runs`` itself if a Side."""
        if isinstance(runs, Side):
            return runs
        ordered = runs.sort_values("repeat", kind="stable")
        numeric = ordered.select_dtypes("number")
        return cls(ordered["repeat"].to_numpy(),
                   {column: numeric[column].to_numpy(dtype=float) for column in numeric})

    def without(self, repeat: int, columns: Iterable[str] | None = None) -> "Side":
        """These runs but those of ``repeat`` (of ``columns`` only; default all)."""
        keep = self.repeat != repeat
        return Side(self.repeat[keep], {c: self.values[c][keep]
                                        for c in (columns or self.values)})


def sides(a: "pd.DataFrame | Side", b: "pd.DataFrame | Side",
          column: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """Return the per-process values of ``column`` of two sets of runs, and whether they pair up.

    Args:
        a: rows of load_results, or their Side.
        b: rows of load_results, or their Side.
        column: a numeric column of load_results.

    Returns:
        (a's values [runs], b's values [runs], paired), in repeat order. paired is True when
        both sides have the same repeats (the workflow runs the static and dynamic runs of a
        repeat next to each other, plan.job_priorities).
    """
    a, b = Side.of(a), Side.of(b)
    return a.values[column], b.values[column], np.array_equal(a.repeat, b.repeat)


def ratio_of(a: "pd.DataFrame | Side", b: "pd.DataFrame | Side", column: str,
             confidence: float = intervals.CONFIDENCE) -> tuple[float, float, float]:
    """Return the ratio of ``column``'s geometric means over two sets of runs, with its interval.

    intervals.ratio_ci: paired by repeat when the repeats match (sides), else Welch's.

    Args:
        a: the numerator's runs (rows of load_results, or their Side).
        b: the denominator's runs, the same way.
        column: a numeric column of load_results.
        confidence: the interval's two-sided level.

    Returns:
        (ratio, low, high), as intervals.ratio_ci.
    """
    x, y, paired = sides(a, b, column)
    return intervals.ratio_ci(x, y, paired, confidence)


def breakeven_of(static: "pd.DataFrame | Side",
                 dynamic: "pd.DataFrame | Side") -> tuple[float, float, float]:
    """Return a cell's break-even steps and interval (intervals.breakeven_ci).

    It is computed from per-repeat pairs of ``setup_s`` and ``median_step_s``. Unpaired sides
    (other repeats on each) are paired in repeat order, over as many repeats as both have; the
    interval stays valid.

    Args:
        static: static's runs (rows of load_results, or their Side).
        dynamic: dynamic's runs, the same way.

    Returns:
        (steps, low, high), as intervals.breakeven_ci (inf for never).
    """
    s_setup, d_setup, _ = sides(static, dynamic, "setup_s")
    s_step, d_step, _ = sides(static, dynamic, "median_step_s")
    count = min(len(s_setup), len(d_setup))
    return intervals.breakeven_ci(s_setup[:count] - d_setup[:count],
                                  d_step[:count] - s_step[:count])


def outlier_runs(runs: pd.DataFrame) -> pd.Series:
    """Flag the runs whose median step is far from their cell's and implementation's median.

    Args:
        runs: load_results's table, with cell_id, impl and median_step_s.

    Returns:
        A boolean Series, one per run: True when its median step is more than OUTLIER_FACTOR
        times slower or faster than the median over the runs of its cell and implementation.
    """
    centre = runs.groupby(["cell_id", "impl"])["median_step_s"].transform("median")
    return (np.log(runs["median_step_s"] / centre)).abs() > math.log(OUTLIER_FACTOR)


def disagreeing_repeats(repeats: np.ndarray, seconds: np.ndarray,
                        factor: float = OUTLIER_FACTOR) -> str:
    """Say whether a cell's repeats of one implementation fall into groups.

    The repeats are sorted by median step and split at the widest gap between neighbours. When
    that gap exceeds ``factor``, they disagree: bimodal, or one far from the rest (two of three
    at 330 ms against one at 131 ms). Separate from within-run spread (block_spread).

    Args:
        repeats: the repeat numbers [repeats].
        seconds: their median step seconds [repeats].
        factor: the gap, as a ratio, that splits them (OUTLIER_FACTOR, 1.5x: over three times
            the spread of fresh processes).

    Returns:
        The groups in words, 'repeats 3: 131 ms | repeats 1, 2: 330, 331 ms'. '' when they
        agree, when there are fewer than DISAGREEMENT_REPEATS, or when a value is not finite
        or not positive.
    """
    if (len(seconds) < DISAGREEMENT_REPEATS or not np.all(np.isfinite(seconds))
            or np.any(seconds <= 0)):
        return ""
    order = np.argsort(seconds, kind="stable")
    logs = np.log(seconds[order])
    gaps = np.diff(logs)
    split = int(np.argmax(gaps)) + 1
    if gaps[split - 1] <= math.log(factor):
        return ""
    return " | ".join(
        f"repeat{'s' if len(part) > 1 else ''} {', '.join(str(int(r)) for r in repeats[part])}: "
        f"{', '.join(f'{1e3 * s:.3g}' for s in seconds[part])} ms"
        for part in (order[:split], order[split:]))


VERDICT_METRICS = ("first_100_steps_s", "setup_s", "median_step_s", "peak_rss_mb")
"""The ratios that claims are judged on most (tables.QUANTITIES): their fragility makes a
cell unstable."""



def fragile_metrics(static: "pd.DataFrame | Side", dynamic: "pd.DataFrame | Side") -> list[str]:
    """Name the ratios that one process decides.

    A ratio is fragile when its static / dynamic interval (ratio_of) moves to another side of 1
    when any one repeat is left out (both of its runs, when paired).

    Args:
        static: static's runs (rows of load_results, or their Side).
        dynamic: dynamic's runs, the same way.

    Returns:
        The fragile VERDICT_METRICS, in their order. Empty with fewer than 3 repeats on a side
        (nothing to leave out).
    """
    static, dynamic = Side.of(static), Side.of(dynamic)
    if min(len(static.repeat), len(dynamic.repeat)) < 3:
        return []
    out = []
    for metric in VERDICT_METRICS:
        whole = intervals.side_of_one(*ratio_of(static, dynamic, metric)[1:])
        for repeat in sorted(set(static.repeat) | set(dynamic.repeat)):
            left = ratio_of(static.without(repeat, [metric]), dynamic.without(repeat, [metric]),
                            metric)
            if intervals.side_of_one(*left[1:]) != whole:
                out.append(metric)
                break
    return out


def fragile_rows(static: Side, dynamic: Side) -> list[list[str]]:
    """Return fragile_metrics of cells alike in their repeats, each as for the cell alone.

    Args:
        static: the cells' static Side, one row of values per cell ([cells, repeats]).
        dynamic: the cells' dynamic Side, the same way.

    Returns:
        The fragile VERDICT_METRICS of each cell, in their order.
    """
    cells = len(static.values["median_step_s"])
    if min(len(static.repeat), len(dynamic.repeat)) < 3:
        return [[] for _ in range(cells)]
    paired = np.array_equal(static.repeat, dynamic.repeat)
    left_out = sorted(set(static.repeat.tolist()) | set(dynamic.repeat.tolist()))
    moved = {}
    for metric in VERDICT_METRICS:
        x, y = static.values[metric], dynamic.values[metric]
        whole = intervals.sides_of_one(*intervals.ratio_ci_rows(x, y, paired)[1:])
        moved[metric] = np.zeros(cells, dtype=bool)
        for repeat in left_out:
            keep_x, keep_y = static.repeat != repeat, dynamic.repeat != repeat
            left = intervals.ratio_ci_rows(x[:, keep_x], y[:, keep_y], np.array_equal(
                static.repeat[keep_x], dynamic.repeat[keep_y]))
            moved[metric] |= intervals.sides_of_one(*left[1:]) != whole
    return [[metric for metric in VERDICT_METRICS if moved[metric][cell]]
            for cell in range(cells)]


def whole_steps(value: float) -> float:
    """Round a break-even in steps up to a whole step count.

    The result is the first step at which static's total time is below dynamic's. The totals
    are equal at the real-valued break-even, so 8.0 gives 9 and 4.25 gives 5.

    Args:
        value: the real-valued break-even, in steps.

    Returns:
        The whole step count. 0 stays 0 (from the start); inf (never) and NaN stay.
    """
    if not math.isfinite(value) or value == 0:
        return value
    return float(math.floor(round(value, 6)) + 1)


def summarize(runs: pd.DataFrame,
              peak_flop_per_s: dict[tuple[int, str], float] | None = None,
              confidence: float = intervals.CONFIDENCE) -> pd.DataFrame:
    """Summarize the runs: one row per cell, with means, ratios, break-even and flags.

    Args:
        runs: load_results's table, after share_runs.
        peak_flop_per_s: rule peak's matmul rate, FLOP/s, by (intra-op thread count,
            tf_version); None for no fraction of peak.
        confidence: the ratios' interval level (intervals.look_confidence where more repeats
            may follow a first look).

    Returns:
        One row per cell: the CELL_COLUMNS, then per implementation (``static_``,
        ``dynamic_``):

        - ``<impl>_<m>``, ``<impl>_<m>_ci_low``, ``<impl>_<m>_ci_high`` for each METRICS column:
          the geometric mean over processes with its 95 % t-interval (intervals.geomean_ci).
        - ``<impl>_setup_s_amean``, ``<impl>_median_step_s_amean``: arithmetic means (the
          break-even's).
        - ``<impl>_repeats``; ``<impl>_max_warmup_steps_run``, the longest warm-up a run
          needed; ``<impl>_max_block_spread``, the largest block spread; ``<impl>_measured_in``,
          the cell whose jobs measured the runs (another cell's for a shared reference,
          cells.shared_runs).

        Then ``ratio_<m>`` with ``_ci_low`` / ``_ci_high`` for each RATIO_METRICS column
        (ratio_of), ``ratio_paired`` (whether paired by repeat) and ``ratio_confidence``.
        ``breakeven_steps`` (breakeven_of, whole steps; empty when static never catches up)
        with its Fieller interval ``breakeven_steps_ci_low`` / ``_high`` (inf for never).

        Last, the FLAG_COLUMNS: ``fragile`` (fragile_metrics) and ``unstable`` (any fragile:
        one process decides a verdict); ``disturbed_runs`` (runs whose 50-step block medians
        differ by more than steady.DISTURBED_BLOCK_SPREAD); ``outlier_runs`` (outlier_runs);
        ``disagreeing_repeats`` (per implementation, disagreeing_repeats; '' for none);
        ``busy`` (a run measured on a busy machine); ``warmup_capped`` (a run's warm-up
        reached max_warmup_steps still warming up).

        With ``peak_flop_per_s``: ``peak_flop_per_s``, the peak at the cell's
        intra_op_parallelism_threads and tf_version, and ``<impl>_fraction_of_peak``, the
        achieved FLOP/s (flop.step_flop / median step) over it.

    Raises:
        ValueError: if a cell's runs come from more than one environment
            (check_one_environment), runs of one host overlap in time (check_no_overlap), a
            cell lacks runs of either implementation (names the cell), or
            ``peak_flop_per_s`` lacks a cell's thread count and version.
    """
    check_one_environment(runs)
    check_no_overlap(runs)
    runs = runs.assign(outlier=outlier_runs(runs)).reset_index(drop=True)
    groups = runs.groupby(CELL_COLUMNS, sort=False).indices
    keys = list(groups)
    code = np.empty(len(runs), dtype=np.intp)
    for number, positions in enumerate(groups.values()):
        code[positions] = number
    columns = _cell_columns(runs, code, keys, confidence)
    summary = pd.DataFrame({
        **{column: [key[i] for key in keys] for i, column in enumerate(CELL_COLUMNS)},
        **{name: values.tolist() for name, values in columns.items()},
        **_run_flags(runs, code, len(keys))})
    order = [c for c in summary if c not in FLAG_COLUMNS] + list(FLAG_COLUMNS)
    summary = summary[order]
    summary["breakeven_steps"] = summary["breakeven_steps"].astype("Int64")
    if peak_flop_per_s is not None:
        _add_fraction_of_peak(summary, peak_flop_per_s)
    return summary


FLAG_COLUMNS = ("fragile", "unstable", "disturbed_runs", "outlier_runs", "disagreeing_repeats",
                "busy", "warmup_capped")
"""summarize's last columns, in their order: the flags and counts of a cell."""


def _cell_columns(runs: pd.DataFrame, code: np.ndarray, keys: list[tuple],
                  confidence: float) -> dict[str, np.ndarray]:
    """summarize's columns computed from each cell's Sides (all but the cell's axes and the
    flags read from its runs): per implementation, ratios, break-even, fragile ratios and
    disagreeing repeats; one object array [cells] per column, in summarize's order.

    Cells whose runs have the same repeats are computed together, as rows of matrices (the
    intervals' row functions give each row what the scalar functions give it alone); the
    ratios' intervals at ``confidence``.

    Raises:
        ValueError: naming the first cell without runs of an implementation.
    """
    repeat = runs["repeat"].to_numpy()
    numeric = {c: runs[c].to_numpy(dtype=float) for c in runs.select_dtypes("number")}
    measured_in = runs["measured_in"].to_numpy()
    columns: dict[str, np.ndarray] = {}
    for cells, by_impl in _shapes(runs, code, keys):
        sides_ = {impl: Side(repeat[positions[0]],
                             {c: values[positions] for c, values in numeric.items()})
                  for impl, positions in by_impl.items()}
        part = {}
        for impl, side in sides_.items():
            part.update(_impl_columns(impl, side, measured_in[by_impl[impl][:, 0]]))
        part.update(_ratio_columns(sides_["static"], sides_["dynamic"], confidence))
        part.update(_side_flags(sides_))
        for name, values in part.items():
            if name not in columns:
                columns[name] = np.empty(len(keys), dtype=object)
            columns[name][cells] = list(values)
    return columns


def _shapes(runs: pd.DataFrame, code: np.ndarray,
            keys: list[tuple]) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """The cells (numbers into ``keys``) alike in their repeats of each implementation, with
    the positions of their static and dynamic runs ({impl: [cells, runs]}, in repeat order,
    ties in table order).

    Raises:
        ValueError: naming the first cell (static before dynamic) without runs of an
            implementation.
    """
    repeat, impl = runs["repeat"].to_numpy(), runs["impl"].to_numpy()
    rank = np.select([impl == "static", impl == "dynamic"], [0, 1], 2)
    order = np.lexsort((repeat, rank, code))
    bounds = {}
    for number, side in enumerate(("static", "dynamic")):
        mine = order[rank[order] == number]
        starts = np.searchsorted(code[mine], np.arange(len(keys) + 1))
        bounds[side] = (mine, starts)
    for cell in range(len(keys)):
        for side, (mine, starts) in bounds.items():
            if starts[cell] == starts[cell + 1]:
                raise ValueError(f"cell {keys[cell][0]}: no {side} runs")
    alike: dict[tuple, list[int]] = {}
    for cell in range(len(keys)):
        shape = tuple(tuple(repeat[mine[starts[cell]:starts[cell + 1]]].tolist())
                      for mine, starts in bounds.values())
        alike.setdefault(shape, []).append(cell)
    for cells in alike.values():
        cells = np.array(cells)
        yield cells, {side: mine[starts[cells][:, None] + np.arange(
            starts[cells[0] + 1] - starts[cells[0]])] for side, (mine, starts) in bounds.items()}


def _impl_columns(impl: str, side: Side, measured_in: np.ndarray) -> dict:
    """summarize's columns of one implementation (``<impl>_...``) of cells alike in their
    repeats: ``side`` holds one row per cell."""
    sub = side.values
    cells = len(measured_in)
    row = {f"{impl}_repeats": np.full(cells, len(side.repeat)),
           f"{impl}_measured_in": measured_in}
    for metric in METRICS:
        estimate, low, high = intervals.geomean_ci_rows(sub[metric])
        row[f"{impl}_{metric}"] = estimate
        row[f"{impl}_{metric}_ci_low"] = low
        row[f"{impl}_{metric}_ci_high"] = high
    # arithmetic means: the break-even (breakeven_of) is where setup + n step of these
    # cross, so cumulative_time draws them
    row[f"{impl}_setup_s_amean"] = sub["setup_s"].mean(axis=1)
    row[f"{impl}_median_step_s_amean"] = sub["median_step_s"].mean(axis=1)
    spread = sub["block_spread"]
    empty = np.isnan(spread).all(axis=1)
    row[f"{impl}_max_block_spread"] = np.where(
        empty, math.nan, np.nanmax(np.where(empty[:, None], 0.0, spread), axis=1))
    row[f"{impl}_max_warmup_steps_run"] = sub["warmup_steps_run"].max(axis=1).astype(int)
    return row


def _ratio_columns(static: Side, dynamic: Side, confidence: float) -> dict:
    """summarize's static / dynamic columns of cells alike in their repeats (one row each):
    ratios with their intervals at ``confidence``, pairing, break-even."""
    paired = np.array_equal(static.repeat, dynamic.repeat)
    row = {}
    for metric in RATIO_METRICS:
        ratio, low, high = intervals.ratio_ci_rows(static.values[metric],
                                                   dynamic.values[metric], paired,
                                                   confidence)
        row[f"ratio_{metric}"] = ratio
        row[f"ratio_{metric}_ci_low"] = low
        row[f"ratio_{metric}_ci_high"] = high
    cells = len(static.values["setup_s"])
    row["ratio_paired"] = np.full(cells, paired)
    row["ratio_confidence"] = np.full(cells, confidence)
    count = min(len(static.repeat), len(dynamic.repeat))
    gap = static.values["setup_s"][:, :count] - dynamic.values["setup_s"][:, :count]
    gain = dynamic.values["median_step_s"][:, :count] - static.values["median_step_s"][:, :count]
    breakeven = [tuple(map(whole_steps, intervals.breakeven_ci(a, b))) for a, b in zip(gap, gain)]
    row["breakeven_steps"] = np.array([None if math.isinf(steps) else steps
                                       for steps, _, _ in breakeven], dtype=object)
    row["breakeven_steps_ci_low"] = np.array([low for _, low, _ in breakeven], dtype=float)
    row["breakeven_steps_ci_high"] = np.array([high for _, _, high in breakeven], dtype=float)
    return row


def _side_flags(by_impl: dict[str, Side]) -> dict:
    """summarize's flags of cells alike in their repeats read from their Sides (one row
    each): the fragile ratios, and the repeats that disagree."""
    fragile = fragile_rows(by_impl["static"], by_impl["dynamic"])
    cells = len(fragile)
    words = np.full(cells, "", dtype=object)
    for impl, side in by_impl.items():
        for cell in np.flatnonzero(_may_disagree(side.values["median_step_s"])):
            groups = disagreeing_repeats(side.repeat, side.values["median_step_s"][cell])
            if groups:
                words[cell] += ("; " if words[cell] else "") + f"{impl}: {groups}"
    return {"fragile": np.array([", ".join(metrics) for metrics in fragile], dtype=object),
            "unstable": np.array([bool(metrics) for metrics in fragile]),
            "disagreeing_repeats": words}


def _may_disagree(seconds: np.ndarray, factor: float = OUTLIER_FACTOR) -> np.ndarray:
    """Which rows of ``seconds`` [cells, repeats] disagreeing_repeats may split (its widest
    gap over ``factor``); the others it answers '' for."""
    if seconds.shape[1] < 3:
        return np.zeros(len(seconds), dtype=bool)
    usable = np.isfinite(seconds).all(axis=1) & (seconds > 0).all(axis=1)
    logs = np.log(np.sort(np.where(usable[:, None], seconds, 1.0), axis=1))
    return usable & (np.diff(logs, axis=1).max(axis=1) > math.log(factor))


def _run_flags(runs: pd.DataFrame, code: np.ndarray, cells: int) -> dict[str, list]:
    """summarize's counts and flags of each cell read from its runs (``code``: each run's
    cell number): disturbed and outlier runs, busy, warm-up capped."""
    def count(flag: np.ndarray) -> np.ndarray:
        return np.bincount(code, weights=np.asarray(flag, dtype=bool), minlength=cells)

    return {"disturbed_runs": count(runs["disturbed"].to_numpy()).astype(int).tolist(),
            "outlier_runs": count(runs["outlier"].to_numpy()).astype(int).tolist(),
            "busy": (count(runs["busy"].to_numpy()) > 0).tolist(),
            "warmup_capped": (count(runs["warmup_settled"].to_numpy() == False)  # noqa: E712
                              > 0).tolist()}


def _add_fraction_of_peak(summary: pd.DataFrame,
                          peak_flop_per_s: dict[tuple[int, str], float]) -> None:
    """summarize's peak_flop_per_s and ``<impl>_fraction_of_peak`` columns (in place)."""
    keys = list(zip(summary["intra_op_parallelism_threads"], summary["tf_version"]))
    missing = set(keys) - set(peak_flop_per_s)
    if missing:
        raise ValueError(f"peak_flop_per_s: no peak for (intra_op_parallelism_threads, "
                         f"tf_version) {sorted(missing)}")
    summary["peak_flop_per_s"] = [peak_flop_per_s[key] for key in keys]
    for impl in ("static", "dynamic"):
        summary[f"{impl}_fraction_of_peak"] = (
            summary[f"{impl}_achieved_flop_per_s"] / summary["peak_flop_per_s"])


CUMULATIVE_LAST = ("breakeven_steps", "breakeven_steps_ci_low", "breakeven_steps_ci_high")
"""cumulative_time's last columns, its cell's break-even and interval, after the
CELL_COLUMNS, impl, steps and total_s."""


def cumulative_time(summary: pd.DataFrame, points: int = 60) -> pd.DataFrame:
    """Return total wall time after n training steps, per cell and implementation.

    ``total_s = setup_s + n * median_step_s``, from the arithmetic means over runs
    (``<impl>_setup_s_amean``, ``<impl>_median_step_s_amean``). The lines thus cross at the
    break-even (intervals.breakeven_ci).

    Args:
        summary: summarize's table.
        points: how many step counts per cell, from 0 to a horizon of twice the break-even
            (100 steps when there is none, or it is 0); duplicates after rounding are dropped.

    Returns:
        A long table: the CELL_COLUMNS, impl, steps, total_s (seconds), then breakeven_steps
        and its interval (CUMULATIVE_LAST).
    """
    if summary.empty:
        return pd.DataFrame(columns=[*CELL_COLUMNS, "impl", "steps", "total_s",
                                     *CUMULATIVE_LAST])
    cell, own = _cumulative_rows(summary, points)
    out = summary[CELL_COLUMNS].iloc[cell].reset_index(drop=True)
    for column, values in own.items():
        out[column] = values
    for column in CUMULATIVE_LAST:
        out[column] = summary[column].iloc[cell].reset_index(drop=True)
    return out


def _cumulative_rows(summary: pd.DataFrame, points: int) -> tuple[np.ndarray, pd.DataFrame]:
    """cumulative_time's rows: each one's cell (a position in ``summary``), and its own
    columns impl, steps and total_s."""
    parts = []
    for position, breakeven in enumerate(summary["breakeven_steps"]):
        horizon = 2 * int(breakeven) if pd.notna(breakeven) and breakeven > 0 else 100
        steps = np.unique(np.linspace(0, horizon, points).round().astype(int))
        parts.append((np.repeat(position, 2 * len(steps)), np.repeat(steps, 2),
                      np.tile(["static", "dynamic"], len(steps))))
    cell, steps, impl = (np.concatenate(column) for column in zip(*parts))
    static = impl == "static"
    setup = np.where(static, summary["static_setup_s_amean"].to_numpy()[cell],
                     summary["dynamic_setup_s_amean"].to_numpy()[cell])
    step = np.where(static, summary["static_median_step_s_amean"].to_numpy()[cell],
                    summary["dynamic_median_step_s_amean"].to_numpy()[cell])
    own = pd.DataFrame({"impl": impl, "steps": steps})
    own["total_s"] = setup + steps * step
    return cell, own


def write_cumulative_time(summary: pd.DataFrame, path: str | Path, points: int = 60) -> None:
    """Write cumulative_time(summary, points) to ``path`` as a CSV, without the long table.

    The file is byte for byte what ``to_csv(path, index=False)`` would write. Each cell's own
    columns (CELL_COLUMNS, CUMULATIVE_LAST) are written once and repeated beside each of its
    rows, as pandas writes a field alone. A table with a field across lines (a line break in
    text) is written by pandas as the long table.

    Args:
        summary: summarize's table.
        path: the CSV file to write.
        points: as cumulative_time's.
    """
    if summary.empty:
        cumulative_time(summary, points).to_csv(path, index=False)
        return
    cell, own = _cumulative_rows(summary, points)
    before, after = (_csv_lines(summary[list(columns)])
                     for columns in (CELL_COLUMNS, CUMULATIVE_LAST))
    if before is None or after is None:
        cumulative_time(summary, points).to_csv(path, index=False)
        return
    names = _csv_lines(pd.DataFrame(columns=[*CELL_COLUMNS, *own, *CUMULATIVE_LAST]),
                       header=True)
    # the fields as pandas writes them: a float as numpy's text of it (NaN: empty), a whole
    # number and the words static and dynamic as they are (nothing in them to quote)
    total = own["total_s"].to_numpy(dtype=float)
    text = total.astype(str).astype(object)
    text[np.isnan(total)] = ""
    with open(path, "w", newline="") as handle:
        handle.write(names[0] + os.linesep)
        handle.writelines(f"{before[c]},{impl},{steps},{seconds},{after[c]}{os.linesep}"
                          for c, impl, steps, seconds in zip(
                              cell.tolist(), own["impl"].tolist(), own["steps"].tolist(),
                              text.tolist()))


def _csv_lines(table: pd.DataFrame, header: bool = False) -> list[str] | None:
    """The lines to_csv writes for ``table`` (without its index), one per row (the header's
    first with ``header``); None where a field spans lines."""
    lines = table.to_csv(index=False, header=header,
                         lineterminator=os.linesep).split(os.linesep)[:-1]
    return lines if len(lines) == len(table) + header else None
