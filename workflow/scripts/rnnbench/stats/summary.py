"""Statistics per cell: the geometric means of each implementation's runs with their
intervals, static / dynamic ratios, break-even, and the flags that say how far to trust them
(summarize), from the measurements table (rnnbench.results.load)."""

from __future__ import annotations

import math
from typing import Iterable, NamedTuple

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


class Side(NamedTuple):
    """A cell's runs of one implementation in repeat order, as arrays (so that summarize's
    many ratios and leave-one-out intervals index numpy arrays, not DataFrames): ``repeat``
    and ``values`` (the numeric columns of load_results, by name)."""

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
    """The per-process values of ``column`` of two sets of runs (rows of load_results, or
    their Side), in repeat order, and whether they pair up: the same repeats on both sides
    (the workflow runs the static and dynamic runs of a repeat next to each other,
    plan.job_priorities)."""
    a, b = Side.of(a), Side.of(b)
    return a.values[column], b.values[column], np.array_equal(a.repeat, b.repeat)


def ratio_of(a: "pd.DataFrame | Side", b: "pd.DataFrame | Side", column: str,
             confidence: float = intervals.CONFIDENCE) -> tuple[float, float, float]:
    """The ratio of ``column``'s geometric means over the runs ``a`` and ``b`` (rows of
    load_results, or their Side) and its interval at ``confidence``: intervals.ratio_ci,
    paired by repeat when the repeats match (sides), else Welch's."""
    x, y, paired = sides(a, b, column)
    return intervals.ratio_ci(x, y, paired, confidence)


def breakeven_of(static: "pd.DataFrame | Side",
                 dynamic: "pd.DataFrame | Side") -> tuple[float, float, float]:
    """Break-even steps (intervals.breakeven_ci) of a cell's runs, from per-repeat pairs of
    ``setup_s`` and ``median_step_s``; unpaired sides (other repeats on each) are paired in
    repeat order over the repeats both have as many of, which keeps the interval valid."""
    s_setup, d_setup, _ = sides(static, dynamic, "setup_s")
    s_step, d_step, _ = sides(static, dynamic, "median_step_s")
    count = min(len(s_setup), len(d_setup))
    return intervals.breakeven_ci(s_setup[:count] - d_setup[:count],
                                  d_step[:count] - s_step[:count])


def outlier_runs(runs: pd.DataFrame) -> pd.Series:
    """True for each run whose median step is more than OUTLIER_FACTOR times slower or faster
    than the median over the runs of its cell and implementation."""
    centre = runs.groupby(["cell_id", "impl"])["median_step_s"].transform("median")
    return (np.log(runs["median_step_s"] / centre)).abs() > math.log(OUTLIER_FACTOR)


def disagreeing_repeats(repeats: np.ndarray, seconds: np.ndarray,
                        factor: float = OUTLIER_FACTOR) -> str:
    """Whether a cell's repeats (one implementation's) fall into groups: sorted by median step
    (``seconds``), split at the widest gap between neighbours; when that gap exceeds
    ``factor`` (1.5x: over three times the spread of fresh processes, OUTLIER_FACTOR), the
    repeats disagree (bimodal, or one far from the rest: two of three at 330 ms against one
    at 131 ms). Returns the groups in words, 'repeats 3: 131 ms | repeats 1, 2: 330, 331 ms';
    '' when they agree or there are fewer than 3. Separate from within-run spread
    (block_spread)."""
    if len(seconds) < 3 or not np.all(np.isfinite(seconds)) or np.any(seconds <= 0):
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
    """The VERDICT_METRICS whose static / dynamic interval (ratio_of) moves to another side of
    1 when any one repeat is left out (both of its runs, when paired): a verdict that one
    process decides. Empty with fewer than 3 repeats on a side (nothing to leave out)."""
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


def whole_steps(value: float) -> float:
    """A break-even in steps as a whole step count: the first step at which static's total
    time is below dynamic's (the totals are equal at the real-valued break-even, so 8.0 gives
    9 and 4.25 gives 5); 0 stays 0 (from the start), inf (never) and nan stay."""
    if not math.isfinite(value) or value == 0:
        return value
    return float(math.floor(round(value, 6)) + 1)


def summarize(runs: pd.DataFrame,
              peak_flop_per_s: dict[tuple[int, str], float] | None = None,
              confidence: float = intervals.CONFIDENCE) -> pd.DataFrame:
    """One row per cell (runs: load_results, after share_runs), per implementation the
    geometric mean over processes of each METRICS column with its 95 % t-interval
    (intervals.geomean_ci: ``static_<m>``, ``static_<m>_ci_low``, ``static_<m>_ci_high``, same
    for dynamic); the static/dynamic ratio of each RATIO_METRICS column with its interval
    (ratio_of: paired by repeat; ``ratio_<m>``..., ``ratio_paired`` says whether it was) at
    ``confidence`` (``ratio_confidence``; intervals.look_confidence where more repeats may
    follow a first look);
    ``breakeven_steps`` (breakeven_of, empty when static never catches up) with its Fieller
    interval (``breakeven_steps_ci_low``/``_high``, inf for never).

    Flags, each with its basis: ``unstable``, leaving out one repeat moves a ratio's interval
    to another side of 1 (``fragile`` names those ratios: fragile_metrics), so that one
    process decides a verdict; ``busy``, a run was measured on a busy machine (load_results);
    ``warmup_capped``, a run's warm-up reached max_warmup_steps still warming up. Counts:
    ``disturbed_runs`` (runs whose 50-step block medians differ by more than
    steady.DISTURBED_BLOCK_SPREAD) and ``outlier_runs`` (outlier_runs); ``disagreeing_repeats``
    names, per implementation, repeats whose median steps fall into groups more than
    OUTLIER_FACTOR apart, with their values (disagreeing_repeats; '' for none).
    ``<impl>_setup_s_amean`` and ``<impl>_median_step_s_amean`` are arithmetic means (the
    break-even's). ``<impl>_max_warmup_steps_run`` is the longest warm-up a run needed,
    ``<impl>_max_block_spread`` the largest block spread, ``<impl>_measured_in`` the cell
    whose jobs measured the runs (another cell's for a shared reference, cells.shared_runs).
    With ``peak_flop_per_s`` (rule peak's matmul rate in FLOP/s by intra-op thread count and
    tf_version), ``peak_flop_per_s`` is the peak at the cell's intra_op_parallelism_threads
    and tf_version and ``<impl>_fraction_of_peak`` the achieved FLOP/s (flop.step_flop
    / median step) over it.

    Raises:
        ValueError: if a cell's runs come from more than one environment
            (check_one_environment), runs of one host overlap in time (check_no_overlap),
            a cell lacks runs of either implementation (names the
            cell), or ``peak_flop_per_s`` lacks a cell's thread count and version.
    """
    check_one_environment(runs)
    check_no_overlap(runs)
    runs = runs.assign(outlier=outlier_runs(runs)).reset_index(drop=True)
    # every column as an array once: a cell's runs are then index arrays into them (Side)
    numeric = {c: runs[c].to_numpy(dtype=float) for c in runs.select_dtypes("number")}
    repeat, impls = runs["repeat"].to_numpy(), runs["impl"].to_numpy()
    flags = {c: runs[c].to_numpy() for c in ("measured_in", "disturbed", "outlier", "busy",
                                             "warmup_settled")}
    rows = []
    for cell_values, positions in runs.groupby(CELL_COLUMNS, sort=False).indices.items():
        row = dict(zip(CELL_COLUMNS, cell_values))
        by_impl = {}
        for impl in ("static", "dynamic"):
            mine = positions[impls[positions] == impl]
            if not len(mine):
                raise ValueError(f"cell {row['cell_id']}: no {impl} runs")
            mine = mine[np.argsort(repeat[mine], kind="stable")]
            by_impl[impl] = Side(repeat[mine], {c: v[mine] for c, v in numeric.items()})
            row.update(_impl_columns(impl, by_impl[impl], flags["measured_in"][mine[0]]))
        row.update(_ratio_columns(by_impl["static"], by_impl["dynamic"], confidence))
        row.update(_flag_columns(by_impl, {name: flag[positions] for name, flag in flags.items()}))
        rows.append(row)
    summary = pd.DataFrame(rows)
    summary["breakeven_steps"] = summary["breakeven_steps"].astype("Int64")
    if peak_flop_per_s is not None:
        _add_fraction_of_peak(summary, peak_flop_per_s)
    return summary


def _impl_columns(impl: str, side: Side, measured_in: str) -> dict:
    """summarize's columns of one implementation of a cell (``<impl>_...``)."""
    sub = side.values
    row = {f"{impl}_repeats": len(side.repeat), f"{impl}_measured_in": measured_in}
    for metric in METRICS:
        estimate, low, high = intervals.geomean_ci(sub[metric])
        row[f"{impl}_{metric}"] = estimate
        row[f"{impl}_{metric}_ci_low"] = low
        row[f"{impl}_{metric}_ci_high"] = high
    # arithmetic means: the break-even (breakeven_of) is where setup + n step of these
    # cross, so cumulative_time draws them
    row[f"{impl}_setup_s_amean"] = float(sub["setup_s"].mean())
    row[f"{impl}_median_step_s_amean"] = float(sub["median_step_s"].mean())
    row[f"{impl}_max_block_spread"] = float(np.nanmax(sub["block_spread"])) if not \
        np.isnan(sub["block_spread"]).all() else math.nan
    row[f"{impl}_max_warmup_steps_run"] = int(sub["warmup_steps_run"].max())
    return row


def _ratio_columns(static: Side, dynamic: Side, confidence: float) -> dict:
    """summarize's static / dynamic columns of a cell: ratios at ``confidence``, pairing,
    break-even."""
    row = {}
    for metric in RATIO_METRICS:
        ratio, low, high = ratio_of(static, dynamic, metric, confidence)
        row[f"ratio_{metric}"] = ratio
        row[f"ratio_{metric}_ci_low"] = low
        row[f"ratio_{metric}_ci_high"] = high
    row["ratio_paired"] = sides(static, dynamic, "setup_s")[2]
    row["ratio_confidence"] = confidence
    steps, low, high = map(whole_steps, breakeven_of(static, dynamic))
    row["breakeven_steps"] = None if math.isinf(steps) else steps
    row["breakeven_steps_ci_low"], row["breakeven_steps_ci_high"] = low, high
    return row


def _flag_columns(by_impl: dict[str, Side], flags: dict[str, np.ndarray]) -> dict:
    """summarize's flags and counts of a cell, from its Sides and its runs' ``flags``."""
    fragile = fragile_metrics(by_impl["static"], by_impl["dynamic"])
    return {
        "fragile": ", ".join(fragile),
        "unstable": bool(fragile),
        "disturbed_runs": int(flags["disturbed"].sum()),
        "outlier_runs": int(flags["outlier"].sum()),
        "disagreeing_repeats": "; ".join(
            f"{impl}: {groups}" for impl, side in by_impl.items()
            if (groups := disagreeing_repeats(side.repeat, side.values["median_step_s"]))),
        "busy": bool(flags["busy"].any()),
        "warmup_capped": bool((flags["warmup_settled"] == False).any()),  # noqa: E712
    }


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


def cumulative_time(summary: pd.DataFrame, points: int = 60) -> pd.DataFrame:
    """Total wall time after n training steps, per cell and implementation.

    ``total_s = setup_s + n * median_step_s``, from the arithmetic means over runs
    (``<impl>_setup_s_amean``, ``<impl>_median_step_s_amean``: the lines cross at the
    break-even, intervals.breakeven_ci), for n from 0 to a horizon of twice the
    break-even step count (or 100 steps when there is none, or it is 0). Long format:
    the CELL_COLUMNS, impl, steps, total_s, breakeven_steps and its interval.
    """
    parts = []
    for position, breakeven in enumerate(summary["breakeven_steps"]):
        horizon = 2 * int(breakeven) if pd.notna(breakeven) and breakeven > 0 else 100
        steps = np.unique(np.linspace(0, horizon, points).round().astype(int))
        parts.append((np.repeat(position, 2 * len(steps)), np.repeat(steps, 2),
                      np.tile(["static", "dynamic"], len(steps))))
    if not parts:
        return pd.DataFrame(columns=[*CELL_COLUMNS, "impl", "steps", "total_s",
                                     "breakeven_steps", "breakeven_steps_ci_low",
                                     "breakeven_steps_ci_high"])
    cell, steps, impl = (np.concatenate(column) for column in zip(*parts))
    columns = ["breakeven_steps", "breakeven_steps_ci_low", "breakeven_steps_ci_high"]
    out = summary[CELL_COLUMNS].iloc[cell].reset_index(drop=True)
    out["impl"], out["steps"] = impl, steps
    static = impl == "static"
    setup = np.where(static, summary["static_setup_s_amean"].to_numpy()[cell],
                     summary["dynamic_setup_s_amean"].to_numpy()[cell])
    step = np.where(static, summary["static_median_step_s_amean"].to_numpy()[cell],
                    summary["dynamic_median_step_s_amean"].to_numpy()[cell])
    out["total_s"] = setup + steps * step
    for column in columns:
        out[column] = summary[column].iloc[cell].reset_index(drop=True)
    return out


