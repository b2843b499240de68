"""Read result JSON files into tidy tables and summarise them (medians, intervals, break-even)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable

import jsonschema
import numpy as np
import pandas as pd
from scipy import stats

from rnnbench.grid import (ABLATION_DEFAULTS, ablation_label, base_cell_id,
                           sequence_length_id, varied_axes)
from rnnbench.schema import validate_result

# Per-run quantities summarised per (cell, implementation); units are in the names.
METRICS = ("graph_construction_s", "session_setup_s", "first_step_s", "graph_optimisation_s",
           "first_step_rest_s", "setup_s",
           "median_step_s", "mean_step_s", "steps_per_s", "achieved_flop_per_s", "node_count",
           "peak_rss_mb")
# Quantities whose static/dynamic ratio the summary reports.
RATIO_METRICS = ("graph_construction_s", "first_step_s", "graph_optimisation_s", "setup_s",
                 "first_100_steps_s", "median_step_s", "peak_rss_mb")
# A cell's id, axes, the id of the cell it ablates and its ablations in words ('' for none).
CELL_COLUMNS = ["cell_id", "cell", "batch_size", "max_len", "sequence_length", "num_units",
                "input_dim", "api", "tf_version", *ABLATION_DEFAULTS, "base_cell_id", "ablations"]
# A run whose measured step times spread more than this (IQR / median) is flagged unstable.
UNSTABLE_IQR_OVER_MEDIAN = 0.05
# Rolling window (steps) of settled_after_step.
SETTLE_WINDOW = 5


def load_results(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run from result JSON files; units in column names.

    ``setup_s`` = graph_construction_s + session_setup_s + first_step_s: everything a run
    pays before its second step. ``first_step_rest_s`` = first_step_s - graph_optimisation_s
    (bench.grappler's estimate), at least 0: executor creation and the step itself.
    ``sequence_length`` is the setting's id (``10``, ``full``, ``u5-20``), the ablation axes
    are the cell's settings (parallel_iterations as text), ``base_cell_id`` and
    ``ablations`` say which cell it ablates and how (grid.base_cell_id, grid.ablation_label),
    among the ablation axes that these runs vary (grid.varied_axes).
    ``tf_version`` is the cell's (major.minor, as in the config), ``tensorflow_version`` the
    release that ran (e.g. 2.21.0), ``keras_version`` the Keras of a keras api run.
    ``fetched`` / ``hook_fetched`` name the every-step and the hook fetch sets, ``hook_steps``
    counts the steps that fetched the hook set (bench.fetch_plan).

    Raises:
        ValueError: if ``paths`` is empty, or a file fails the result schema (names the file).
    """
    rows, cells = [], []
    for path in paths:
        result = json.loads(Path(path).read_text())
        try:
            validate_result(result)
        except jsonschema.ValidationError as error:
            raise ValueError(f"{path}: not a valid result: {error.message}") from error
        cell, timings, meta = result["cell"], result["timings"], result["metadata"]
        cells.append(cell)
        rows.append({
            "cell_id": result["cell_id"],
            "impl": result["impl"],
            "repeat": result["repeat"],
            "cell": cell["cell"],
            "batch_size": cell["batch_size"],
            "max_len": cell["max_len"],
            "sequence_length": sequence_length_id(cell["sequence_length"]),
            "num_units": cell["num_units"],
            "input_dim": cell["input_dim"],
            "api": cell["api"],
            "tf_version": cell["tf_version"],
            **{axis: cell[axis] for axis in ABLATION_DEFAULTS},
            "parallel_iterations": str(cell["parallel_iterations"]),  # batch_size or a number
            "graph_construction_s": timings["graph_construction_s"],
            "session_setup_s": timings["session_setup_s"],
            "first_step_s": timings["first_step_s"],
            # None (the keras apis: not measured) becomes NaN
            "graph_optimisation_s": _or_nan(timings["graph_optimisation_s"]),
            # the first step without the optimisation (Grappler alone can take a little longer)
            "first_step_rest_s": max(0.0, timings["first_step_s"]
                                     - _or_nan(timings["graph_optimisation_s"])),
            "setup_s": timings["graph_construction_s"] + timings["session_setup_s"]
            + timings["first_step_s"],
            "median_step_s": timings["median_step_s"],
            "mean_step_s": timings["mean_step_s"],
            # the seed's "first 100 steps": setup (which includes step 1) and 99 more steps
            "first_100_steps_s": timings["graph_construction_s"] + timings["session_setup_s"]
            + timings["first_step_s"] + 99 * timings["median_step_s"],
            "steps_per_s": timings["steps_per_s"],
            "step_iqr_over_median": timings["step_iqr_over_median"],
            "max_step_s": max(timings["step_s"]),
            "n_steps": len(timings["step_s"]),
            "settled_after_step": settled_after_step(timings["warmup_step_s"] + timings["step_s"]),
            "time_steps_per_step": result["work"]["time_steps_per_step"],
            "train_step_flop": result["work"]["train_step_flop"],
            "achieved_flop_per_s": result["work"]["train_step_flop"] / timings["median_step_s"],
            "node_count": result["graph"]["node_count"],
            "graphdef_bytes": result["graph"]["graphdef_bytes"],
            "peak_rss_mb": result["memory"]["peak_rss_mb"],
            "first_loss": result["loss"]["first"],
            "last_loss": result["loss"]["last"],
            "fetched": "+".join(result["protocol"]["fetches"]),
            "hook_fetched": "+".join(result["protocol"]["hook_fetches"]),
            "hook_steps": len(timings["hook_steps"]),
            "warmup_steps": result["protocol"]["warmup_steps"],
            "parallel_iterations_used": result["protocol"]["parallel_iterations"],
            "job_threads": result["job_threads"],
            "device": meta["device"],
            "device_name": meta["device_name"],
            "tensorflow_version": meta["tf_version"],
            "keras_version": meta["keras_version"],
            "python_version": meta["python_version"],
            "python_prefix": meta["python_prefix"],
            "image_sha256": meta["image_sha256"],
            "hostname": meta["hostname"],
            "utc_time": meta["utc_time"],
            "git_commit": meta["git"]["commit"],
        })
    if not rows:
        raise ValueError("load_results: no result files given")
    # each run's reference cell: its varied ablation axes at their references
    varied = varied_axes(cells)
    for row, cell in zip(rows, cells):
        row["base_cell_id"] = base_cell_id(row["cell_id"], cell, varied)
        row["ablations"] = ablation_label(cell, varied)
    order = [c for c in CELL_COLUMNS if c != "cell_id"] + ["impl", "repeat"]
    table = pd.DataFrame(rows).sort_values(order, ignore_index=True)
    table["settled_after_step"] = table["settled_after_step"].astype("Int64")
    return table


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def settled_after_step(step_s: list[float], window: int = SETTLE_WINDOW) -> int | None:
    """How many steps a run needed to settle: the warm-up it actually needed, detected.

    ``step_s``: the steps after the first, in order (warm-up then measured), in seconds. The
    steady band is Tukey's fences of the second half of the steps, [Q1 - 1.5 IQR, Q3 + 1.5
    IQR] (Tukey, "Exploratory Data Analysis", 1977), which the median of a few steady steps
    almost never leaves. The rolling median of ``window`` consecutive steps is computed; when
    the last window whose median lies outside the band starts at step i, the run settled
    after i + (window + 1) // 2 steps (a warm-up of L slow steps leaves windows up to
    L - (window + 1) // 2 outside); 0 when no window does. None when fewer than 2 x
    ``window`` steps were recorded. Robust to isolated slow steps on a noisy machine; a
    warm-up shorter than (window + 1) // 2 steps, or within the fences, is not detected.
    """
    steps = np.asarray(step_s, dtype=float)
    if len(steps) < 2 * window:
        return None
    q1, q3 = np.percentile(steps[len(steps) // 2:], [25, 75])
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    rolling = pd.Series(steps).rolling(window).median().to_numpy()[window - 1:]
    outside = np.flatnonzero((rolling < low) | (rolling > high))
    return 0 if len(outside) == 0 else int(outside[-1]) + (window + 1) // 2


def median_ci(values: np.ndarray, seed: int = 0, confidence: float = 0.95) -> tuple[float, float, float]:
    """Median of ``values`` and its percentile-bootstrap interval (scipy.stats.bootstrap).

    With fewer than 2 values, or all values equal, the interval is (median, median) for
    equal values and (nan, nan) for a single value; any NaN value (a quantity not measured)
    gives (nan, nan, nan). Intervals from 3 repeats are crude: the bootstrap can only
    resample those 3 values.
    """
    values = np.asarray(values, dtype=float)
    if np.isnan(values).any():
        return math.nan, math.nan, math.nan
    median = float(np.median(values))
    if len(values) < 2:
        return median, math.nan, math.nan
    if np.all(values == values[0]):
        return median, median, median
    res = stats.bootstrap((values,), np.median, confidence_level=confidence,
                          method="percentile", n_resamples=2000, rng=np.random.default_rng(seed))
    return median, float(res.confidence_interval.low), float(res.confidence_interval.high)


def ratio_ci(static: np.ndarray, dynamic: np.ndarray, seed: int = 0,
             confidence: float = 0.95) -> tuple[float, float, float]:
    """median(static) / median(dynamic) and its two-sample percentile-bootstrap interval.

    Returns (ratio, nan, nan) when either side has fewer than 2 values, and (nan, nan, nan)
    when a value is NaN (a quantity not measured).
    """
    static = np.asarray(static, dtype=float)
    dynamic = np.asarray(dynamic, dtype=float)
    if np.isnan(static).any() or np.isnan(dynamic).any():
        return math.nan, math.nan, math.nan
    ratio = float(np.median(static) / np.median(dynamic))
    if len(static) < 2 or len(dynamic) < 2:
        return ratio, math.nan, math.nan

    def statistic(s: np.ndarray, d: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(s, axis=axis) / np.median(d, axis=axis)

    res = stats.bootstrap((static, dynamic), statistic, confidence_level=confidence,
                          method="percentile", n_resamples=2000, vectorized=True,
                          rng=np.random.default_rng(seed))
    low, high = res.confidence_interval
    return ratio, float(low), float(high)


def breakeven_steps(static_setup_s: float, static_step_s: float, dynamic_setup_s: float,
                    dynamic_step_s: float) -> int | None:
    """Training steps after which static's total time stays below dynamic's; None for never.

    Total time after n steps beyond the first is ``setup_s + n * step_s`` (setup_s =
    graph construction + session setup + first step). Returns the smallest n >= 0 with
    static_total(m) < dynamic_total(m) for every m >= n, or None when no such n exists
    (static's step is not faster and its setup is not cheaper).
    """
    def static_ahead(n: int) -> bool:
        return static_setup_s + n * static_step_s < dynamic_setup_s + n * dynamic_step_s

    step_gain = dynamic_step_s - static_step_s
    if step_gain <= 0:
        return 0 if step_gain == 0 and static_ahead(0) else None
    n = max(0, math.floor((static_setup_s - dynamic_setup_s) / step_gain) + 1)
    # The division can land one off at an exact tie; settle it with the totals themselves.
    while not static_ahead(n):
        n += 1
    while n > 0 and static_ahead(n - 1):
        n -= 1
    return n


def breakeven_ci(static: pd.DataFrame, dynamic: pd.DataFrame, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float, float]:
    """Break-even steps from the medians over repeats, with a percentile-bootstrap interval.

    ``static`` and ``dynamic`` hold one row per repeat with ``setup_s`` and ``median_step_s``
    (seconds). Each of 2000 bootstrap resamples draws whole repeats (a run's setup with its
    own step time) on each side, with replacement, and computes breakeven_steps of the
    resampled medians; the interval is the 2.5 and 97.5 % quantiles of those (percentile
    bootstrap, as scipy.stats.bootstrap's method="percentile"). 'Never' counts as +inf, which
    scipy's interpolated quantiles would turn into nan (inf - inf), hence this loop and
    quantiles that are draws. Returns (steps, low, high) as floats, inf for never;
    (steps, nan, nan) with fewer than two repeats on a side.
    """
    s_setup, s_step = static["setup_s"].to_numpy(), static["median_step_s"].to_numpy()
    d_setup, d_step = dynamic["setup_s"].to_numpy(), dynamic["median_step_s"].to_numpy()

    def point(s_idx: np.ndarray, d_idx: np.ndarray) -> float:
        steps = breakeven_steps(
            float(np.median(s_setup[s_idx])), float(np.median(s_step[s_idx])),
            float(np.median(d_setup[d_idx])), float(np.median(d_step[d_idx])),
        )
        return math.inf if steps is None else float(steps)

    s_all, d_all = np.arange(len(static)), np.arange(len(dynamic))
    estimate = point(s_all, d_all)
    if len(static) < 2 or len(dynamic) < 2:
        return estimate, math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = np.array([point(rng.choice(s_all, len(s_all)), rng.choice(d_all, len(d_all)))
                      for _ in range(2000)])
    alpha = (1 - confidence) / 2
    # method="lower"/"higher": quantiles that are draws, so +inf stays +inf (no inf - inf)
    low = float(np.quantile(draws, alpha, method="lower"))
    high = float(np.quantile(draws, 1 - alpha, method="higher"))
    return estimate, low, high


def summarize(runs: pd.DataFrame, seed: int = 0,
              peak_flop_per_s: dict[tuple[int, str], float] | None = None) -> pd.DataFrame:
    """One row per cell: per implementation the median and 95 % interval of each METRICS
    column over repeats (``static_<m>``, ``static_<m>_ci_low``, ``static_<m>_ci_high``, same for
    dynamic), the static/dynamic ratio of each RATIO_METRICS column with its interval
    (``ratio_<m>``...), the largest step-time spread (IQR / median) of any run, and
    ``breakeven_steps`` from the medians (empty when static never catches up) with its
    bootstrap interval over repeats (``breakeven_steps_ci_low``/``_high``, inf for never).
    ``unstable`` flags a cell where any run's measured steps spread more than
    UNSTABLE_IQR_OVER_MEDIAN (IQR / median); ``<impl>_max_settled_after_step`` is the largest
    warm-up a run needed (settled_after_step) and ``warmup_too_short`` flags a cell where a
    run's steps settled only after the measurement had begun (after more than warmup_steps).
    With ``peak_flop_per_s`` (rule peak's matmul rate in FLOP/s by intra-op thread count and
    tf_version), ``peak_flop_per_s`` is the peak at the cell's intra_op_parallelism_threads
    and tf_version and
    ``<impl>_fraction_of_peak`` the median achieved FLOP/s (roofline.train_step_flop /
    median step) over it.

    Raises:
        ValueError: if a cell lacks runs of either implementation (names the cell), or
            ``peak_flop_per_s`` lacks a cell's thread count and version.
    """
    rows = []
    for cell_values, group in runs.groupby(CELL_COLUMNS, sort=False):
        row = dict(zip(CELL_COLUMNS, cell_values))
        by_impl = {impl: group[group["impl"] == impl] for impl in ("static", "dynamic")}
        for impl, sub in by_impl.items():
            if sub.empty:
                raise ValueError(f"cell {row['cell_id']}: no {impl} runs")
            row[f"{impl}_repeats"] = len(sub)
            for metric in METRICS:
                median, low, high = median_ci(sub[metric].to_numpy(), seed)
                row[f"{impl}_{metric}"] = median
                row[f"{impl}_{metric}_ci_low"] = low
                row[f"{impl}_{metric}_ci_high"] = high
            row[f"{impl}_max_step_iqr_over_median"] = float(sub["step_iqr_over_median"].max())
            settled = sub["settled_after_step"].dropna()
            row[f"{impl}_max_settled_after_step"] = (
                int(settled.max()) if len(settled) else None)
        for metric in RATIO_METRICS:
            ratio, low, high = ratio_ci(by_impl["static"][metric].to_numpy(),
                                        by_impl["dynamic"][metric].to_numpy(), seed)
            row[f"ratio_{metric}"] = ratio
            row[f"ratio_{metric}_ci_low"] = low
            row[f"ratio_{metric}_ci_high"] = high
        row["breakeven_steps"] = breakeven_steps(
            row["static_setup_s"], row["static_median_step_s"],
            row["dynamic_setup_s"], row["dynamic_median_step_s"],
        )
        _, row["breakeven_steps_ci_low"], row["breakeven_steps_ci_high"] = breakeven_ci(
            by_impl["static"], by_impl["dynamic"], seed)
        row["unstable"] = bool(group["step_iqr_over_median"].max() > UNSTABLE_IQR_OVER_MEDIAN)
        # the measured steps start after warmup_steps (counted from the second step)
        row["warmup_too_short"] = bool(
            (group["settled_after_step"] > group["warmup_steps"]).any())
        rows.append(row)
    summary = pd.DataFrame(rows)
    summary["breakeven_steps"] = summary["breakeven_steps"].astype("Int64")
    if peak_flop_per_s is not None:
        keys = list(zip(summary["intra_op_parallelism_threads"], summary["tf_version"]))
        missing = set(keys) - set(peak_flop_per_s)
        if missing:
            raise ValueError(f"peak_flop_per_s: no peak for (intra_op_parallelism_threads, "
                             f"tf_version) {sorted(missing)}")
        summary["peak_flop_per_s"] = [peak_flop_per_s[key] for key in keys]
        for impl in ("static", "dynamic"):
            summary[f"{impl}_fraction_of_peak"] = (
                summary[f"{impl}_achieved_flop_per_s"] / summary["peak_flop_per_s"])
    for impl in ("static", "dynamic"):
        column = f"{impl}_max_settled_after_step"
        summary[column] = summary[column].astype("Int64")
    return summary


def cumulative_time(summary: pd.DataFrame, points: int = 60) -> pd.DataFrame:
    """Total wall time after n training steps, per cell and implementation, from the medians.

    ``total_s = setup_s + n * median_step_s`` for n from 0 to a horizon of twice the
    break-even step count (or 100 steps when there is none, or it is 0). Long format:
    the CELL_COLUMNS, impl, steps, total_s, breakeven_steps and its interval.
    """
    rows = []
    for _, cell in summary.iterrows():
        breakeven = cell["breakeven_steps"]
        horizon = 2 * int(breakeven) if pd.notna(breakeven) and breakeven > 0 else 100
        for n in np.unique(np.linspace(0, horizon, points).round().astype(int)):
            for impl in ("static", "dynamic"):
                rows.append({
                    **{column: cell[column] for column in CELL_COLUMNS},
                    "impl": impl,
                    "steps": int(n),
                    "total_s": cell[f"{impl}_setup_s"] + n * cell[f"{impl}_median_step_s"],
                    "breakeven_steps": breakeven,
                    "breakeven_steps_ci_low": cell["breakeven_steps_ci_low"],
                    "breakeven_steps_ci_high": cell["breakeven_steps_ci_high"],
                })
    return pd.DataFrame(rows)


def read_table(path: str | Path) -> pd.DataFrame:
    """Read summary.csv, measurements.csv or cumulative_time.csv back with their dtypes:
    sequence_length, parallel_iterations and tf_version as text (``10``, ``full``, ``u5-20``;
    ``batch_size``, ``16``; ``2.10``), ablations as text ('' for none), breakeven_steps (empty: never)
    and the settled_after_step columns as nullable integers."""
    table = pd.read_csv(path, dtype={"sequence_length": str, "parallel_iterations": str,
                                     "ablations": str, "tf_version": str})
    if "ablations" in table:  # a cell without ablations: '' (written as an empty field)
        table["ablations"] = table["ablations"].fillna("")
    for column in table.columns:
        if column == "breakeven_steps" or column.endswith("settled_after_step"):
            table[column] = table[column].astype("Int64")
    return table


def write_partial(expected: list[str], logs: list[str], outdir: str | Path,
                  seed: int = 0) -> pd.DataFrame:
    """After a failed run: list the missing results and summarise the runs that exist.

    Args:
        expected: every result path the grid asks for, of the form
            ``.../<cell_id>/<impl>/repeat<N>.json``.
        logs: the rule log of each of those results, in the same order.
        outdir: where to write ``missing.csv`` (cell_id, impl, repeat, path, log, and the
            log's last line: usually the error) and, when some results exist,
            ``measurements.csv`` and ``summary.csv`` (cells with both implementations only).

    Returns the missing rows.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows, present = [], []
    for path, log in zip(map(Path, expected), map(Path, logs)):
        if path.exists():
            present.append(path)
        else:
            lines = log.read_text().strip().splitlines() if log.exists() else []
            rows.append({"cell_id": path.parent.parent.name, "impl": path.parent.name,
                         "repeat": int(path.stem.removeprefix("repeat")), "path": str(path),
                         "log": str(log), "last_log_line": lines[-1] if lines else ""})
    missing = pd.DataFrame(rows, columns=["cell_id", "impl", "repeat", "path", "log",
                                          "last_log_line"])
    missing.to_csv(outdir / "missing.csv", index=False)
    if present:
        runs = load_results(present)
        runs.to_csv(outdir / "measurements.csv", index=False)
        complete = runs.groupby("cell_id")["impl"].transform("nunique") == 2
        if complete.any():
            summarize(runs[complete], seed=seed).to_csv(outdir / "summary.csv", index=False)
    return missing
