"""Read result JSON files into tidy tables and summarise them (medians, intervals, break-even)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Iterable, NamedTuple

import jsonschema
import numpy as np
import pandas as pd

from rnnbench import intervals
from rnnbench.grid import (ABLATION_DEFAULTS, Cell, ablation_label, protocol_label,
                           sequence_length_id, varied_axes)
from rnnbench.schema import validate_result
from rnnbench.steady import DISTURBED_BLOCK_SPREAD

# Per-run quantities summarised per (cell, implementation); units are in the names.
METRICS = ("graph_construction_s", "session_setup_s", "first_step_s", "graph_optimisation_s",
           "first_step_rest_s", "setup_s",
           "median_step_s", "mean_step_s", "steps_per_s", "achieved_flop_per_s", "node_count",
           "peak_rss_mb")
# Quantities whose static/dynamic ratio the summary reports.
RATIO_METRICS = ("graph_construction_s", "first_step_s", "graph_optimisation_s", "setup_s",
                 "first_100_steps_s", "median_step_s", "peak_rss_mb")
# A cell's id, axes, the ids of related cells (grid.Cell: the cell it ablates, its compat_v1
# twin, itself in the default TensorFlow) and its ablations in words ('' for none).
CELL_COLUMNS = ["cell_id", "cell", "batch_size", "max_len", "sequence_length", "num_units",
                "input_dim", "api", "tf_version", *ABLATION_DEFAULTS, "base_cell_id",
                "compat_v1_cell_id", "default_tf_cell_id", "ablations"]
# A process whose median step is this many times slower or faster than the median process of
# its cell and implementation is an outlier: 1.5x is over 3 times the 7-16 % by which fresh
# processes differ here (rnnbench/steady.py), and what two of three repeats at 330 ms against
# one at 131 ms would show.
OUTLIER_FACTOR = 1.5
# A run is measured on a busy machine when the hypervisor stole more than this share of the
# CPU time during it, or the 1-minute load average before or after it exceeds the CPUs it may
# use (more runnable threads than CPUs: the job's own thread plus others').
BUSY_STEAL_SHARE = 0.02


def load_results(paths: Iterable[str | Path],
                 benchmarks: Iterable[str | Path] | None = None) -> pd.DataFrame:
    """One row per run from result JSON files; units in column names.

    ``setup_s`` = graph_construction_s + session_setup_s + first_step_s: everything a run
    pays before its second step. ``first_step_rest_s`` = first_step_s - graph_optimisation_s
    (bench.grappler's estimate), at least 0: executor creation and the step itself.
    ``sequence_length`` is the setting's id (``10``, ``full``, ``u5-20``), the ablation axes
    are the cell's settings (parallel_iterations as text), ``base_cell_id`` and
    ``ablations`` say which cell it ablates and how (grid.Cell, grid.ablation_label),
    among the ablation axes that these runs vary (grid.varied_axes); ``compat_v1_cell_id``
    is the same cell in compat_v1, ``default_tf_cell_id`` in the default TensorFlow.
    ``tf_version`` is the cell's (major.minor, as in the config), ``tensorflow_version`` the
    release that ran (e.g. 2.21.0), ``keras_version`` the Keras of a keras api run.
    ``fetched`` / ``hook_fetched`` name the every-step and the hook fetch sets, ``hook_steps``
    counts the steps that fetched the hook set (bench.fetch_plan). ``measured_in`` is the
    cell whose job measured the run (itself here; share_runs adds runs of other cells).
    ``warmup_steps_run`` and ``warmup_settled`` say how long the warm-up was and whether it
    ended settled (steady.warm_up); ``disturbed`` flags a run whose measured steps' 50-step
    block medians differ by more than steady.DISTURBED_BLOCK_SPREAD; ``busy`` one measured on
    a busy machine (BUSY_STEAL_SHARE, load averages; the noise columns).

    ``job_wall_s`` and ``job_max_rss_mb`` are what the whole job cost, Python and TensorFlow's
    import included, from Snakemake's ``benchmark:`` file of the run (``benchmarks``, in the
    order of ``paths``; NaN without).

    Raises:
        ValueError: if ``paths`` is empty, or a file is not JSON, fails the result schema or
            records another cell, implementation or repeat than its path says (names the
            file and the fix).
    """
    rows, cells = [], []
    paths = list(paths)
    jobs = dict(zip(map(str, paths), map(job_cost, benchmarks or [])))
    for path in paths:
        fix = ("delete it, and the command that wrote it (the workflow, or jax_standalone.py) "
               "measures it anew")
        raw = Path(path).read_bytes()
        try:
            result = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:  # truncated, say
            raise ValueError(f"{path}: not a valid result (not JSON: {error}): {fix}") from None
        try:
            validate_result(result)
        except jsonschema.ValidationError as error:
            raise ValueError(f"{path}: not a valid result: {error.message}: {fix}") from error
        where = _path_says(path)
        said = (result["cell_id"], result["impl"], result["repeat"])
        if where and where != said:
            raise ValueError(f"{path}: records cell {said[0]}, {said[1]}, repeat {said[2]}, not "
                             f"what its path says ({', '.join(map(str, where))}): the file was "
                             f"copied or moved; {fix}")
        cell, timings, meta = result["cell"], result["timings"], result["metadata"]
        noise = result["noise"]
        cells.append(cell)
        load_before, load_after = (_or_nan(loads[0] if loads else None) for loads in
                                   (noise["load_average_before"], noise["load_average_after"]))
        rows.append({
            "cell_id": result["cell_id"],
            "measured_in": result["cell_id"],
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
            # (results written before an axis existed were at its reference)
            **{axis: cell.get(axis, default) for axis, default in ABLATION_DEFAULTS.items()},
            "parallel_iterations": str(cell["parallel_iterations"]),  # batch_size or a number
            "unroll": str(cell.get("unroll", "max_len")),  # max_len or a number
            "graph_construction_s": timings["graph_construction_s"],
            "session_setup_s": timings["session_setup_s"],
            "first_step_s": timings["first_step_s"],
            # None (the keras apis: not measured) becomes NaN
            "graph_optimisation_s": _or_nan(timings["graph_optimisation_s"]),
            # the first step without the optimisation (Grappler alone can take a little
            # longer); NaN where it was not timed alone (max(0.0, nan) would give 0.0)
            "first_step_rest_s": (np.nan if timings["graph_optimisation_s"] is None
                                  else max(0.0, timings["first_step_s"]
                                           - timings["graph_optimisation_s"])),
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
            "warmup_steps_run": len(timings["warmup_step_s"]),
            "warmup_settled": timings["warmup_settled"],
            "block_spread": _or_nan(timings["block_spread"]),
            "disturbed": bool((timings["block_spread"] or 0) > DISTURBED_BLOCK_SPREAD),
            "load_before": load_before,
            "load_after": load_after,
            "steal_share": _or_nan(noise["steal_share"]),
            "cpu_governor": noise["cpu_governor"],
            "cpu_mhz": _or_nan(noise["cpu_mhz_before"]),
            # NaN (no load average) compares False
            "busy": bool((noise["steal_share"] or 0) > BUSY_STEAL_SHARE
                         or any(load > _cpus(meta) for load in (load_before, load_after))),
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
            "protocol": protocol_label(result["protocol"]),
            "parallel_iterations_used": result["protocol"]["parallel_iterations"],
            "job_threads": result["job_threads"],
            "device": meta["device"],
            "device_name": meta["device_name"],
            "cpus": _cpus(meta),
            "tensorflow_version": meta["tf_version"],
            "keras_version": meta["keras_version"],
            "jax_version": meta.get("jax_version"),  # api jax_scan's runs (no TensorFlow)
            "python_version": meta["python_version"],
            "python_prefix": meta["python_prefix"],
            "image_sha256": meta["image_sha256"],
            "hostname": meta["hostname"],
            "utc_time": meta["utc_time"],
            "git_commit": meta["git"]["commit"],
            "environment": environment(meta),
            "path": str(path),
            "sha256": hashlib.sha256(raw).hexdigest(),
            **jobs.get(str(path), {"job_wall_s": math.nan, "job_max_rss_mb": math.nan}),
        })
    if not rows:
        raise ValueError("load_results: no result files given")
    # each run's related cells (grid.Cell, from its axes): its reference (its varied ablation
    # axes at their references), its compat_v1 twin, itself in the default TensorFlow; named
    # by the id their runs carry (the workflow's ids are grid.cell_id's; hand-made runs' may
    # differ), found by their axes
    varied = varied_axes(cells)
    values = [Cell.of(cell, varied) for cell in cells]
    recorded = {}
    for row, value in zip(rows, values):
        recorded.setdefault(value.id, row["cell_id"])
    for row, cell, value in zip(rows, cells, values):
        row.update({column: row["cell_id"] if related == value.id else recorded.get(related, related)
                    for column, related in (("base_cell_id", value.reference_id),
                                            ("compat_v1_cell_id", value.compat_v1_id),
                                            ("default_tf_cell_id", value.default_tf_id))})
        row["ablations"] = ablation_label(cell, varied)
    return _sorted(pd.DataFrame(rows))


def environment(meta: dict) -> str:
    """What a run's timings depend on beyond the cell, in words (its fingerprint): CPU model and
    the CPUs it may use, device, TensorFlow release and build, Python, and the Apptainer image
    (or bare). Runs of one cell with different fingerprints are never pooled (summarize).
    The host name is left out on purpose, unlike pyperf's check: identical nodes of a cluster
    partition may share a grid; a machine of another kind, or other software, may not."""
    build = (f"CUDA {meta['cuda_version']}, cuDNN {meta['cudnn_version']}"
             if meta["is_cuda_build"] else "CPU build")
    device = meta["device_name"] if meta["device"] == "gpu" else "CPU"
    image = f"image {meta['image_sha256'][:12]}" if meta["image_sha256"] else "bare"
    framework = (f"JAX {meta['jax_version']} ({meta['jax_backend']} backend)"
                 if meta.get("jax_version") else f"TensorFlow {meta['tf_version']} ({build})")
    return (f"{meta['cpu_model']} ({_cpus(meta)} CPUs), {device}, {framework}, "
            f"Python {meta['python_version']}, {image}")


def _cpus(meta: dict) -> int:
    """The CPUs a run's process may use (its affinity), else the machine's."""
    return meta.get("cpu_affinity") or meta["cpu_count"]


def check_one_environment(runs: pd.DataFrame) -> None:
    """Refuse to pool: every cell's runs (both implementations, shared runs included) must
    come from one environment (fingerprint).

    Raises:
        ValueError: naming the cell, each environment and a file measured in it.
    """
    for cell_id, group in runs.groupby("cell_id", sort=False):
        if group["environment"].nunique() > 1:
            where = "; ".join(f"{env} (e.g. {files.iloc[0]})" for env, files
                              in group.groupby("environment", sort=True)["path"])
            raise ValueError(
                f"cell {cell_id}: its runs come from {group['environment'].nunique()} "
                f"environments, which are never pooled: {where}. Keep one environment's "
                "results in this folder (move the others to a folder of their own)")


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    order = [c for c in CELL_COLUMNS if c != "cell_id"] + ["impl", "repeat"]
    return table.sort_values(order, ignore_index=True)


def share_runs(runs: pd.DataFrame, shared: dict[tuple[str, str], str]) -> pd.DataFrame:
    """``runs`` (load_results) plus, for every (cell_id, impl) that grid.shared_runs says is
    measured in another cell, that cell's runs of impl under cell_id: the cell's axes, its
    related cells' ids and ``ablations`` (from its own runs of the other implementation),
    ``measured_in`` the cell that ran them. An entry whose source or own runs are absent (a
    partial run) adds nothing."""
    added = []
    for (name, impl), source in shared.items():
        rows = runs[(runs["cell_id"] == source) & (runs["impl"] == impl)].copy()
        own = runs[runs["cell_id"] == name]
        if rows.empty or own.empty:
            continue
        for column in CELL_COLUMNS:
            rows[column] = own[column].iloc[0]
        added.append(rows)
    return _sorted(pd.concat([runs, *added], ignore_index=True)) if added else runs


def shared_in(runs: pd.DataFrame) -> dict[tuple[str, str], str]:
    """grid.shared_runs's mapping, read from the runs themselves, for a result set without its
    config (a folder sent back, jax_standalone.py's output): (cell_id, impl) -> the cell whose
    runs of impl serve it, for each cell that has no runs of impl, is away from its reference
    in invariant axes of impl alone (grid.STATIC_INVARIANT_AXES for static,
    DYNAMIC_INVARIANT_AXES for dynamic), and whose cell at those references has runs of impl
    in ``runs``."""
    from rnnbench.grid import DYNAMIC_INVARIANT_AXES, STATIC_INVARIANT_AXES

    axes = [c for c in CELL_COLUMNS if c not in ("cell_id", "base_cell_id", "compat_v1_cell_id",
                                                 "default_tf_cell_id", "ablations")]
    cells = runs.drop_duplicates("cell_id").set_index("cell_id")[axes].astype(str)
    measured = set(zip(runs["cell_id"], runs["impl"]))
    out = {}
    for impl, invariant in (("static", STATIC_INVARIANT_AXES), ("dynamic", DYNAMIC_INVARIANT_AXES)):
        at_reference = cells.assign(**{a: str(ABLATION_DEFAULTS[a]) for a in invariant})
        owner = {tuple(row): name for name, row in cells.iterrows() if (name, impl) in measured
                 and tuple(row) == tuple(at_reference.loc[name])}
        for name, row in at_reference.iterrows():
            source = owner.get(tuple(row))
            if (name, impl) not in measured and source and source != name:
                out[(name, impl)] = source
    return out


def _path_says(path: str | Path) -> tuple[str, str, int] | None:
    """(cell_id, impl, repeat) that a result's path names, for the workflow's layout
    ``.../<cell_id>/<static|dynamic>/repeat<N>.json``; None for another layout."""
    path = Path(path)
    match = re.fullmatch(r"repeat(\d+)\.json", path.name)
    if not match or path.parent.name not in ("static", "dynamic"):
        return None
    return path.parent.parent.name, path.parent.name, int(match[1])


def job_cost(benchmark: str | Path) -> dict[str, float]:
    """A training job's whole wall time (s, seconds) and peak resident memory (max_rss, MB)
    from its Snakemake ``benchmark:`` TSV (one header line, one line of values:
    snakemake.benchmark.BenchmarkRecord); NaN for a file that is missing or has no values."""
    try:
        header, values = Path(benchmark).read_text().splitlines()[:2]
        row = dict(zip(header.split("\t"), values.split("\t")))
        return {"job_wall_s": float(row["s"]), "job_max_rss_mb": float(row["max_rss"])}
    except (OSError, ValueError, KeyError):
        return {"job_wall_s": math.nan, "job_max_rss_mb": math.nan}


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


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
    grid.job_priorities)."""
    a, b = Side.of(a), Side.of(b)
    return a.values[column], b.values[column], np.array_equal(a.repeat, b.repeat)


def ratio_of(a: "pd.DataFrame | Side", b: "pd.DataFrame | Side",
             column: str) -> tuple[float, float, float]:
    """The ratio of ``column``'s geometric means over the runs ``a`` and ``b`` (rows of
    load_results, or their Side) and its 95 % interval: intervals.ratio_ci, paired by repeat
    when the repeats match (sides), else Welch's."""
    x, y, paired = sides(a, b, column)
    return intervals.ratio_ci(x, y, paired)


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
"""The ratios that claims are judged on most (findings.QUANTITIES): their fragility makes a
cell unstable."""


def side_of_one(low: float, high: float) -> str:
    """Where an interval lies against 1: 'above', 'below' or 'across' (also for NaN)."""
    return "above" if low > 1 else "below" if high < 1 else "across"


def fragile_metrics(static: "pd.DataFrame | Side", dynamic: "pd.DataFrame | Side") -> list[str]:
    """The VERDICT_METRICS whose static / dynamic interval (ratio_of) moves to another side of
    1 when any one repeat is left out (both of its runs, when paired): a verdict that one
    process decides. Empty with fewer than 3 repeats on a side (nothing to leave out)."""
    static, dynamic = Side.of(static), Side.of(dynamic)
    if min(len(static.repeat), len(dynamic.repeat)) < 3:
        return []
    out = []
    for metric in VERDICT_METRICS:
        whole = side_of_one(*ratio_of(static, dynamic, metric)[1:])
        for repeat in sorted(set(static.repeat) | set(dynamic.repeat)):
            left = ratio_of(static.without(repeat, [metric]), dynamic.without(repeat, [metric]),
                            metric)
            if side_of_one(*left[1:]) != whole:
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


def breakeven_steps(static_setup_s: float, static_step_s: float, dynamic_setup_s: float,
                    dynamic_step_s: float) -> int | None:
    """Training steps after which static's total time (setup_s + n step_s) stays below
    dynamic's, from one pair of setups and step times (seconds); None for never (its step is
    not faster and its setup dearer, or it is ahead at first and overtaken later). The same
    point as breakeven_of's estimate (intervals.breakeven_ci), in whole steps."""
    steps = whole_steps(intervals.breakeven_ci(np.array([static_setup_s - dynamic_setup_s]),
                                               np.array([dynamic_step_s - static_step_s]))[0])
    return None if math.isinf(steps) else int(steps)


def summarize(runs: pd.DataFrame,
              peak_flop_per_s: dict[tuple[int, str], float] | None = None) -> pd.DataFrame:
    """One row per cell (runs: load_results, after share_runs), per implementation the
    geometric mean over processes of each METRICS column with its 95 % t-interval
    (intervals.geomean_ci: ``static_<m>``, ``static_<m>_ci_low``, ``static_<m>_ci_high``, same
    for dynamic); the static/dynamic ratio of each RATIO_METRICS column with its interval
    (ratio_of: paired by repeat; ``ratio_<m>``..., ``ratio_paired`` says whether it was);
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
    whose jobs measured the runs (another cell's for a shared reference, grid.shared_runs).
    With ``peak_flop_per_s`` (rule peak's matmul rate in FLOP/s by intra-op thread count and
    tf_version), ``peak_flop_per_s`` is the peak at the cell's intra_op_parallelism_threads
    and tf_version and ``<impl>_fraction_of_peak`` the achieved FLOP/s (roofline.step_flop
    / median step) over it.

    Raises:
        ValueError: if a cell's runs come from more than one environment
            (check_one_environment), a cell lacks runs of either implementation (names the
            cell), or ``peak_flop_per_s`` lacks a cell's thread count and version.
    """
    check_one_environment(runs)
    rows = []
    runs = runs.assign(outlier=outlier_runs(runs)).reset_index(drop=True)
    # every column as an array once: a cell's runs are then index arrays into them (Side)
    numeric = {c: runs[c].to_numpy(dtype=float) for c in runs.select_dtypes("number")}
    repeat, impls = runs["repeat"].to_numpy(), runs["impl"].to_numpy()
    flags = {c: runs[c].to_numpy() for c in ("measured_in", "disturbed", "outlier", "busy",
                                             "warmup_settled")}
    for cell_values, positions in runs.groupby(CELL_COLUMNS, sort=False).indices.items():
        row = dict(zip(CELL_COLUMNS, cell_values))
        by_impl = {}
        for impl in ("static", "dynamic"):
            mine = positions[impls[positions] == impl]
            if not len(mine):
                raise ValueError(f"cell {row['cell_id']}: no {impl} runs")
            mine = mine[np.argsort(repeat[mine], kind="stable")]
            by_impl[impl] = Side(repeat[mine], {c: v[mine] for c, v in numeric.items()})
            sub = by_impl[impl].values
            row[f"{impl}_repeats"] = len(mine)
            row[f"{impl}_measured_in"] = flags["measured_in"][mine[0]]
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
        static, dynamic = by_impl["static"], by_impl["dynamic"]
        for metric in RATIO_METRICS:
            ratio, low, high = ratio_of(static, dynamic, metric)
            row[f"ratio_{metric}"] = ratio
            row[f"ratio_{metric}_ci_low"] = low
            row[f"ratio_{metric}_ci_high"] = high
        row["ratio_paired"] = sides(static, dynamic, "setup_s")[2]
        steps, low, high = map(whole_steps, breakeven_of(static, dynamic))
        row["breakeven_steps"] = None if math.isinf(steps) else steps
        row["breakeven_steps_ci_low"], row["breakeven_steps_ci_high"] = low, high
        fragile = fragile_metrics(static, dynamic)
        row["fragile"] = ", ".join(fragile)
        row["unstable"] = bool(fragile)
        row["disturbed_runs"] = int(flags["disturbed"][positions].sum())
        row["outlier_runs"] = int(flags["outlier"][positions].sum())
        row["disagreeing_repeats"] = "; ".join(
            f"{impl}: {groups}" for impl, side in by_impl.items()
            if (groups := disagreeing_repeats(side.repeat, side.values["median_step_s"])))
        row["busy"] = bool(flags["busy"][positions].any())
        row["warmup_capped"] = bool((flags["warmup_settled"][positions] == False).any())  # noqa: E712
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
    return summary


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


def read_table(path: str | Path) -> pd.DataFrame:
    """Read summary.csv, measurements.csv or cumulative_time.csv back with their dtypes:
    sequence_length, parallel_iterations, unroll and tf_version as text (``10``, ``full``, ``u5-20``;
    ``batch_size``, ``16``; ``2.10``), ablations as text ('' for none), breakeven_steps (empty: never)
    as a nullable integer."""
    table = pd.read_csv(path, dtype={"sequence_length": str, "parallel_iterations": str,
                                     "unroll": str,
                                     "ablations": str, "fragile": str, "tf_version": str,
                                     "disagreeing_repeats": str})
    for column in ("ablations", "fragile", "disagreeing_repeats"):  # none: '' (an empty field)
        if column in table:
            table[column] = table[column].fillna("")
    if "breakeven_steps" in table:
        table["breakeven_steps"] = table["breakeven_steps"].astype("Int64")
    return table


ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b")
"""The first line of a Python exception message in a log: ``ValueError: ...``,
``tensorflow.python.framework.errors_impl.ResourceExhaustedError: ...``."""


def error_line(lines: list[str]) -> str:
    """What a failed job's log says went wrong: its last exception message line (a
    TensorFlow error is followed by more stack frames, so the last line is no message), else
    its last line; '' for an empty log."""
    for line in reversed(lines):
        if ERROR_LINE.match(line.strip()):
            return line.strip()
    return lines[-1].strip() if lines else ""


def write_partial(expected: list[tuple[str, str, int, str, str]], outdir: str | Path,
                  shared: dict[tuple[str, str], str] | None = None,
                  blocked: dict[str, str] | None = None) -> pd.DataFrame:
    """After a failed run: list the missing results and summarise the runs that exist.

    Args:
        expected: every training job of the grid: (cell_id, impl, repeat, result path, log
            path), as planned (grid.job_priorities); nothing is read from the paths' names.
        outdir: where to write ``missing.csv`` (cell_id, impl, repeat, path, log, and the
            log's error_line) and, when some results exist,
            ``measurements.csv`` and ``summary.csv`` (cells with both implementations only).
        shared: grid.shared_runs of the grid (runs a cell takes from another).
        blocked: why a result could not be written, for results whose job did not run
            (obstacles); it is their error_line.

    Returns the missing rows.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows, present = [], []
    for cell_id, impl, repeat, path, log in expected:
        if Path(path).exists():
            present.append(path)
        else:
            lines = Path(log).read_text().strip().splitlines() if Path(log).is_file() else []
            why = (blocked or {}).get(str(path)) or error_line(lines)
            rows.append({"cell_id": cell_id, "impl": impl, "repeat": repeat, "path": str(path),
                         "log": str(log), "error_line": why})
    missing = pd.DataFrame(rows, columns=["cell_id", "impl", "repeat", "path", "log",
                                          "error_line"])
    missing.to_csv(outdir / "missing.csv", index=False)
    if present:
        runs = share_runs(load_results(present), shared or {})
        runs.to_csv(outdir / "measurements.csv", index=False)
        complete = runs.groupby("cell_id")["impl"].transform("nunique") == 2
        if complete.any():
            summarize(runs[complete]).to_csv(outdir / "summary.csv", index=False)
    return missing
