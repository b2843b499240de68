"""Read result JSON files into the measurements table, and the tables back.

One row per run, units in column names (load_results). Also: the runs a cell takes from
another (share_runs, shared_in), and the tables read back (read_table).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Iterable

import jsonschema
import numpy as np
import pandas as pd

from rnnbench.grid.axes import (ABLATION_DEFAULTS, CELL_AXES, PROTOCOL_KEYS, sequence_length_id,
                                 value_of)
from rnnbench.grid.cells import Cell, ablation_label, cell_id, protocol_label, shared_runs, varied_axes
from rnnbench.grid.layout import parse_result_path
from rnnbench.measure.schema import validate_result
from rnnbench.measure.steady import DISTURBED_BLOCK_SPREAD

# A cell's id, axes, the ids of related cells (cells.Cell: the cell it ablates, its compat_v1
# twin, itself in the default TensorFlow) and its ablations in words ('' for none).
CELL_COLUMNS = ["cell_id", *CELL_AXES, "base_cell_id", "compat_v1_cell_id", "default_tf_cell_id",
                "ablations"]

LATE_COLUMNS = ("protocol", "jax_version", "init_s", "optimisation_s", "job_start_unix_s")
"""Columns of measurements.csv (load.load_results) that later versions of the workflow
added beside the axes' (axes.CELL_AXES), or renamed (init_s and optimisation_s were
session_setup_s and graph_optimisation_s before results schema 6; job_start_unix_s came with
rnnbench.jobs.exclusive): a table without one is an
older workflow's, which the current findings and compare cannot read (rule all's
set_aside_stale_tables)."""


def at_reference(table: pd.DataFrame) -> pd.Series:
    """Say which rows' cells are their own reference.

    A cell is its own reference when no ablation axis that its grid varies is away from
    axes.ABLATION_DEFAULTS. Read from the ids computed from the axes (``base_cell_id``,
    cells.Cell), never from the words of ``ablations``.

    Args:
        table: measurements.csv, summary.csv, or a table with their cell columns.

    Returns:
        A boolean Series, one per row.
    """
    return table["base_cell_id"] == table["cell_id"]


# A run is measured on a busy machine when the hypervisor stole more than this share of the
# CPU time during it, or the 1-minute load average before or after it exceeds the CPUs it may
# use (more runnable threads than CPUs: the job's own thread plus others').
BUSY_STEAL_SHARE = 0.02
# Where a run recorded the CPUs it may use (metadata.own_cpu_ticks), it is busy when other
# processes took more than this share of those CPUs' time during it (a tenth: about the 7-16 %
# by which fresh processes differ here), or the hypervisor stole more than BUSY_STEAL_SHARE of
# it; the machine-wide load averages then do not count: a job pinned to a quiet CPU (taskset)
# is not busy because another CPU is.
BUSY_OTHERS_SHARE = 0.10
# The result keys of the phases renamed in schema 6 (generic names, per-api words only when
# rendered): the measurements column -> the key a schema 5 result holds it under.
SCHEMA_5_KEYS = {"init_s": "session_setup_s", "optimisation_s": "graph_optimisation_s"}
MAX_SECONDS = 1e7
"""Above any time a run can take (about 116 days), and far below float overflow in the
statistics' sums of squares."""
MIN_STEP_S = 1e-9
"""Below any step a timer can see (perf_counter's resolution is about a nanosecond)."""
RELATED_COLUMNS = ("base_cell_id", "compat_v1_cell_id", "default_tf_cell_id", "ablations")


def load_results(paths: Iterable[str | Path],
                 benchmarks: Iterable[str | Path] | None = None,
                 cells: dict[str, dict] | None = None,
                 protocol: dict | None = None) -> pd.DataFrame:
    """Read result JSON files (schema 5 or 6) into one row per run; units in column names.

    Args:
        paths: the result files.
        benchmarks: Snakemake's ``benchmark:`` file of each run, in the order of ``paths``
            (job_cost); None for none.
        cells: the grid's cells, {cell_id: cell} (rule aggregate's). Each run's recorded cell
            must then be its planned cell's, and every run's TensorFlow threads its cell's.
        protocol: the config's PROTOCOL_KEYS (rule aggregate's). Each run's recorded protocol
            must then be it (_settings_mismatch lists what must match).

    Returns:
        The measurements table, sorted by the cell columns, impl and repeat. Columns of note:

        - ``init_s``: what a run initialises before its first step (compat_v1: the Session and
          the variables; Keras: the model; JAX: parameters, optimizer state and batches on the
          device). ``optimisation_s``: the step's optimisation timed alone (Grappler; XLA's
          compilation for the JAX apis; NaN where not timed alone). Schema 5 results hold them
          as session_setup_s and graph_optimisation_s.
        - ``setup_s`` = graph_construction_s + init_s + first_step_s: everything a run pays
          before its second step. ``first_step_rest_s`` = first_step_s - optimisation_s, at
          least 0: executor creation and the step itself.
        - ``sequence_length``: the setting's id (``10``, ``full``, ``u5-20``). The ablation axes
          are the cell's settings (parallel_iterations as text).
        - ``base_cell_id`` and ``ablations``: which cell it ablates and how (cells.Cell,
          cells.ablation_label), among the ablation axes these runs vary (cells.varied_axes).
          ``compat_v1_cell_id``: the same cell in compat_v1; ``default_tf_cell_id``: in the
          default TensorFlow.
        - ``tf_version``: the cell's (major.minor, as in the config). ``tensorflow_version``:
          the release that ran (e.g. 2.21.0). ``keras_version``: the Keras of a keras api run.
        - ``fetched`` / ``hook_fetched``: the every-step and the hook fetch sets. ``hook_steps``:
          the steps that fetched the hook set (axes.hook_step).
        - ``measured_in``: the cell whose job measured the run (itself here; share_runs adds
          runs of other cells).
        - ``warmup_steps_run`` and ``warmup_settled``: how long the warm-up was and whether it
          ended settled (steady.warm_up). ``disturbed``: the measured steps' 50-step block
          medians differ by more than steady.DISTURBED_BLOCK_SPREAD. ``busy``: measured on a
          busy machine (BUSY_STEAL_SHARE, load averages; the noise columns).
        - ``job_wall_s`` and ``job_max_rss_mb``: what the whole job cost, Python and
          TensorFlow's import included (job_cost; NaN without a benchmark file).
        - ``path`` and ``sha256``: the result file and its hash.

    Raises:
        ValueError: if ``paths`` is empty, or a file is not JSON, fails the result schema,
            records another cell, implementation or repeat than its path says, or ran with
            other settings than its cell's (names the file, the setting and the fix).
    """
    rows, recorded = [], []
    paths = list(paths)
    jobs = dict(zip(map(str, paths), map(job_cost, benchmarks or [])))
    for path in paths:
        raw = Path(path).read_bytes()
        result = _read_result(path, raw, cells, protocol)
        recorded.append(result["cell"])
        rows.append({**_run_columns(result), "path": str(path),
                     "sha256": hashlib.sha256(raw).hexdigest(),
                     **jobs.get(str(path), {"job_wall_s": math.nan, "job_max_rss_mb": math.nan})})
    if not rows:
        raise ValueError("load_results: no result files given")
    _add_related(rows, recorded)
    return _sorted(pd.DataFrame(rows))


def _read_result(path: str | Path, raw: bytes, cells: dict[str, dict] | None = None,
                 protocol: dict | None = None) -> dict:
    """A result file's record, checked against the schema and against its path."""
    fix = ("delete it, and the command that wrote it (the workflow, or rnnbench jax) "
           "measures it anew")
    try:
        result = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:  # truncated, say
        raise ValueError(f"{path}: not a valid result (not JSON: {error}): {fix}") from None
    try:
        validate_result(result)
    except jsonschema.ValidationError as error:  # the version says which fields it needs
        version = result.get("schema_version") if isinstance(result, dict) else None
        raise ValueError(f"{path}: not a valid result (schema_version {version!r}): "
                         f"{error.message}: {fix}") from error
    bad = _bad_timing(result["timings"])
    if bad:
        raise ValueError(f"{path}: not a valid result: {bad}: {fix}")
    where = parse_result_path(path)
    said = (result["cell_id"], result["impl"], result["repeat"])
    if where and where != said:
        raise ValueError(f"{path}: records cell {said[0]}, {said[1]}, repeat {said[2]}, not "
                         f"what its path says ({', '.join(map(str, where))}): the file was "
                         f"copied or moved; {fix}")
    mismatch = _settings_mismatch(result, cells, protocol)
    if mismatch:
        raise ValueError(f"{path}: {mismatch}, so its timing is not its cell's and is never "
                         f"pooled with the others: move it to results/stale/ and run again")
    return result


def _bad_timing(timings: dict) -> str | None:
    """The first of a result's timings that no run can have, in words, or None: a number
    (or a list's item) that is not finite, or not in [0, MAX_SECONDS), or a median or mean
    step below MIN_STEP_S (NaN and Infinity are JSON to Python's reader, and the schema's
    bounds let NaN pass)."""
    for key, value in timings.items():
        for number in value if isinstance(value, list) else [value]:
            if (isinstance(number, (int, float)) and not isinstance(number, bool)
                    and not 0 <= number < MAX_SECONDS):
                return (f"timings.{key} holds {number!r}, not a number from 0 to below "
                        f"{MAX_SECONDS:.0e}")
    for key in ("median_step_s", "mean_step_s"):
        if timings[key] < MIN_STEP_S:
            return (f"timings.{key} is {timings[key]!r} s, below any step a timer can see "
                    f"({MIN_STEP_S:g} s)")
    return None


def _settings_mismatch(result: dict, cells: dict[str, dict] | None = None,
                       protocol: dict | None = None) -> str | None:
    """What a result recorded running with that is not what its cell asks for, in words, or
    None; the one list of what must match before runs are pooled: the cell's axes against
    the planned cell's (``cells``, {cell_id: cell}, where given), the TensorFlow threads the
    run set (metadata), and the protocol it ran (steps, minimum measuring time, warm-up,
    hooks, device, seed, Grappler alone: PROTOCOL_KEYS) against the planned ``protocol``,
    where given. (A job's Snakemake threads, job_threads, may be fewer than its TensorFlow
    threads under --cores 1: Snakemake then runs nothing beside it, and TensorFlow's threads
    still take the machine's cores.)"""
    cell, meta = result["cell"], result["metadata"]
    for key in PROTOCOL_KEYS if protocol else ():
        ran, planned_value = result["protocol"].get(key), protocol[key]
        if ran != planned_value and not (key == "min_measure_s" and ran is not None
                                         and float(ran) == float(planned_value)):
            return (f"ran with {key} {ran!r}, while its protocol "
                    f"({protocol_label(protocol)}) asks for {planned_value!r}")
    planned = (cells or {}).get(result["cell_id"])
    for axis in CELL_AXES if planned else ():
        if cell.get(axis, ABLATION_DEFAULTS.get(axis)) != planned[axis]:
            return (f"ran with {axis} {cell.get(axis)!r}, while its cell "
                    f"{result['cell_id']} asks for {planned[axis]!r}")
    for key in ("intra_op_parallelism_threads", "inter_op_parallelism_threads"):
        if meta.get(key, cell[key]) != cell[key]:
            return f"ran with {key} {meta[key]}, while its cell asks for {cell[key]}"
    return None


def _run_columns(result: dict) -> dict:
    """A run's row of load_results but its file's columns and the related cells'."""
    cell, meta = result["cell"], result["metadata"]
    return {
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
        "unroll": str(value_of(cell, "unroll")),  # max_len or a number
        **_timing_columns(result["timings"]),
        **_noise_columns(result["noise"], meta),
        "time_steps_per_step": result["work"]["time_steps_per_step"],
        "train_step_flop": result["work"]["train_step_flop"],
        "achieved_flop_per_s": result["work"]["train_step_flop"]
        / result["timings"]["median_step_s"],
        "node_count": result["graph"]["node_count"],
        "graphdef_bytes": result["graph"]["graphdef_bytes"],
        "peak_rss_mb": result["memory"]["peak_rss_mb"],
        "first_loss": result["loss"]["first"],
        "last_loss": result["loss"]["last"],
        "data_sha256": result["data"]["sha256"],
        "initial_weights_sha256": result["initial_weights_sha256"],
        **_protocol_columns(result),
        **_meta_columns(meta),
        **_exclusive_columns(result.get("exclusive")),
    }


def _exclusive_columns(exclusive: dict | None) -> dict:
    """When the job held the machine's measuring lock (Unix seconds) and how long it waited
    for it (rnnbench.jobs.exclusive); NaN for a result without (schema 5, rnnbench jax). And
    the other measuring jobs seen measuring beside it, at its start or end
    (rnnbench.jobs.overlap): how many (``others_measuring``; NaN where not looked for) and
    their folders (``others_measuring_in``, sorted, "; " between)."""
    exclusive = exclusive or {}
    seen = {(other["pid"], other["folder"]) for when in ("others_at_start", "others_at_end")
            for other in exclusive.get(when) or []}
    looked = any(when in exclusive for when in ("others_at_start", "others_at_end"))
    return {"job_start_unix_s": exclusive.get("start_s", math.nan),
            "job_end_unix_s": exclusive.get("end_s", math.nan),
            "lock_waited_s": exclusive.get("waited_s", math.nan),
            "others_measuring": len(seen) if looked else math.nan,
            "others_measuring_in": "; ".join(sorted({folder or "?" for _, folder in seen}))
            or None}


def _phase(timings: dict, name: str) -> float | None:
    """A phase's seconds under its schema 6 name, or its schema 5 one (SCHEMA_5_KEYS)."""
    return timings[name] if name in timings else timings[SCHEMA_5_KEYS[name]]


def _timing_columns(timings: dict) -> dict:
    """The timing columns of a run, from its record's ``timings``."""
    init, optimisation = _phase(timings, "init_s"), _phase(timings, "optimisation_s")
    setup = timings["graph_construction_s"] + init + timings["first_step_s"]
    return {
        "graph_construction_s": timings["graph_construction_s"],
        "init_s": init,
        "first_step_s": timings["first_step_s"],
        # None (the keras apis: not measured) becomes NaN
        "optimisation_s": _or_nan(optimisation),
        # the first step without the optimisation (Grappler alone can take a little
        # longer); NaN where it was not timed alone (max(0.0, nan) would give 0.0)
        "first_step_rest_s": (np.nan if optimisation is None
                              else max(0.0, timings["first_step_s"] - optimisation)),
        "setup_s": setup,
        "median_step_s": timings["median_step_s"],
        "mean_step_s": timings["mean_step_s"],
        # the seed's "first 100 steps": setup (which includes step 1) and 99 more steps
        "first_100_steps_s": setup + 99 * timings["median_step_s"],
        "steps_per_s": timings["steps_per_s"],
        "step_iqr_over_median": timings["step_iqr_over_median"],
        "max_step_s": max(timings["step_s"]),
        "n_steps": len(timings["step_s"]),
        "warmup_steps_run": len(timings["warmup_step_s"]),
        "warmup_settled": timings["warmup_settled"],
        "block_spread": _or_nan(timings["block_spread"]),
        "disturbed": bool((timings["block_spread"] or 0) > DISTURBED_BLOCK_SPREAD),
    }


def _noise_columns(noise: dict, meta: dict) -> dict:
    """What disturbed a run's machine (load averages, steal, clock) and whether it was busy."""
    load_before, load_after = (_or_nan(loads[0] if loads else None) for loads in
                               (noise["load_average_before"], noise["load_average_after"]))
    return {
        "load_before": load_before,
        "load_after": load_after,
        "steal_share": _or_nan(noise["steal_share"]),
        "cpu_governor": noise["cpu_governor"],
        "cpu_mhz": _or_nan(noise["cpu_mhz_before"]),
        "others_share": _or_nan(noise.get("others_share")),
        "busy": _busy(noise, meta, (load_before, load_after)),
        **_process_columns(noise, meta),
    }


def _process_columns(noise: dict, meta: dict) -> dict:
    """The machine's speed during a run (the mean of its checks before and after the measured
    steps), where its process ran and whether its address space was randomised
    (rnnbench.measure.process); NaN (aslr: None) for a result without."""
    checks = [noise.get(f"speed_{when}") or {} for when in ("before", "after")]
    place = noise.get("placement") or {}
    return {
        **{f"speed_{name}": float(np.mean([c.get(name, np.nan) for c in checks]))
           for name in ("python_ns", "matmul_gflop_s")},
        "cpus_ran_on": " ".join(map(str, place["cpus"])) if place.get("cpus") else None,
        "migrations": _or_nan(place.get("migrations")),
        "involuntary_switches": _or_nan(place.get("involuntary_switches")),
        "aslr": meta.get("aslr"),
        "ld_preload": place.get("ld_preload"),
        # the timing variables set, as NAME=value words in name order; None where none was
        # set or the result predates the record
        "timing_env": " ".join(f"{name}={value}" for name, value
                               in sorted((place.get("timing_env") or {}).items())) or None,
    }


def _busy(noise: dict, meta: dict, loads: tuple[float, float]) -> bool:
    """Whether a run was measured on a busy machine: on the CPUs it may use where it recorded
    them (BUSY_OTHERS_SHARE), else machine-wide (BUSY_STEAL_SHARE; a load average above the
    CPUs; NaN, no load average, compares False)."""
    if noise.get("others_share") is not None:
        return bool(noise["others_share"] > BUSY_OTHERS_SHARE
                    or (noise.get("own_cpus_steal_share") or 0) > BUSY_STEAL_SHARE)
    return bool((noise["steal_share"] or 0) > BUSY_STEAL_SHARE
                or any(load > _cpus(meta) for load in loads))


def _protocol_columns(result: dict) -> dict:
    """What a run fetched and how it warmed up (its protocol), and its job's threads."""
    protocol = result["protocol"]
    return {
        "fetched": "+".join(protocol["fetches"]),
        "hook_fetched": "+".join(protocol["hook_fetches"]),
        "hook_steps": len(result["timings"]["hook_steps"]),
        "warmup_steps": protocol["warmup_steps"],
        "protocol": protocol_label(protocol),
        "parallel_iterations_used": protocol["parallel_iterations"],
        "job_threads": result["job_threads"],
    }


def _meta_columns(meta: dict) -> dict:
    """Where and with what a run ran (its metadata), and its environment."""
    return {
        "device": meta["device"],
        "device_name": meta["device_name"],
        "cpu_simd": meta.get("cpu_simd"),
        "cpus": _cpus(meta),
        "tensorflow_version": meta["tf_version"],
        "keras_version": meta["keras_version"],
        "numpy_version": meta.get("numpy_version"),
        "jax_version": meta.get("jax_version"),  # the JAX apis' runs (axes.JAX_APIS)
        "python_version": meta["python_version"],
        "python_prefix": meta["python_prefix"],
        "image_sha256": meta["image_sha256"],
        "hostname": meta["hostname"],
        "utc_time": meta["utc_time"],
        "git_commit": meta["git"]["commit"],
        "git_dirty": meta["git"]["dirty"],
        "snakemake_run": meta.get("snakemake_run"),
        "environment": environment(meta),
    }


def _add_related(rows: list[dict], cells: list[dict]) -> None:
    """Each run's related cells (cells.Cell, from its axes): its reference (its varied
    ablation axes at their references), its compat_v1 twin, itself in the default
    TensorFlow; named by the id their runs carry (the workflow's ids are cells.cell_id's;
    hand-made runs' may differ), found by their axes; and its ablations in words. Each
    distinct cell is worked out once, however many runs record it."""
    keys = [repr(cell) for cell in cells]  # alike in repr: alike in every axis
    distinct = dict(zip(keys, cells))
    varied = varied_axes(distinct.values())
    values = {key: (Cell.of(cell, varied), ablation_label(cell, varied))
              for key, cell in distinct.items()}
    recorded = {}
    for row, key in zip(rows, keys):
        recorded.setdefault(values[key][0].id, row["cell_id"])
    for row, key in zip(rows, keys):
        value, label = values[key]
        row.update({column: row["cell_id"] if related == value.id else recorded.get(related, related)
                    for column, related in (("base_cell_id", value.reference_id),
                                            ("compat_v1_cell_id", value.compat_v1_id),
                                            ("default_tf_cell_id", value.default_tf_id))})
        row["ablations"] = label


def environment(meta: dict) -> str:
    """Return a run's fingerprint, in words.

    Runs of one cell with different fingerprints are never pooled. It names the CPU model,
    widest vector set (metadata.cpu_simd; older runs lack it), the CPUs it may use, device,
    TensorFlow release and build (or JAX and its backend), Python, the Apptainer image
    (or bare), and a process run without address-space randomisation (``setarch -R``: its
    processes agree far more closely, all in one layout; docs/method.md, Repeats that
    disagree). The host name is left out on purpose, unlike pyperf's check:
    identical nodes of a cluster partition may share a grid. A machine of another kind, or
    other software, may not.

    Args:
        meta: a result's metadata (metadata.collect).

    Returns:
        The fingerprint, one line: 'CPU model (simd, N CPUs), device, framework, Python
        version, image[, without ASLR]'.
    """
    build = (f"CUDA {meta['cuda_version']}, cuDNN {meta['cudnn_version']}"
             if meta["is_cuda_build"] else "CPU build")
    device = meta["device_name"] if meta["device"] == "gpu" else "CPU"
    image = f"image {meta['image_sha256'][:12]}" if meta["image_sha256"] else "bare"
    framework = (f"JAX {meta['jax_version']} ({meta['jax_backend']} backend)"
                 if meta.get("jax_version") else f"TensorFlow {meta['tf_version']} ({build})")
    simd = f"{meta['cpu_simd']}, " if meta.get("cpu_simd") else ""
    layout = ", without ASLR" if meta.get("aslr") is False else ""
    return (f"{meta['cpu_model']} ({simd}{_cpus(meta)} CPUs), {device}, {framework}, "
            f"Python {meta['python_version']}, {image}{layout}")


def _cpus(meta: dict) -> int:
    """The CPUs a run's process may use (its affinity), else the machine's."""
    return meta.get("cpu_affinity") or meta["cpu_count"]


SAME_IN_A_CELL = ("environment", "data_sha256", "initial_weights_sha256", "keras_version",
                  "numpy_version", "git_commit", "ld_preload", "timing_env")
"""What every run one cell's jobs measured must share before its runs are pooled: the
fingerprint (environment), the data and the initial weights (both implementations train
from the same), the Keras and NumPy releases (the fingerprint names TensorFlow's), the
workflow's code (its git commit), a library preloaded into the process (LD_PRELOAD: an
allocator such as tcmalloc changes step times) and the environment variables that change
kernels or thread pools (rnnbench.measure.process.TIMING_VARIABLES: oneDNN, OpenMP, XLA)."""


def check_one_environment(runs: pd.DataFrame) -> None:
    """Refuse to pool runs of one cell that differ in any of SAME_IN_A_CELL.

    Every cell's runs (both implementations, shared runs included) must share one
    fingerprint; the runs its jobs measured (a shared run's data may be another cell's) one
    data, initial weights, Keras and NumPy. A table written before a column was recorded
    (a committed measurements.csv) is checked on the columns it has.

    Args:
        runs: load_results's table.

    Raises:
        ValueError: naming the first such cell and setting, each value and a file with it.
    """
    for column in (c for c in SAME_IN_A_CELL if c in runs):  # older tables lack some
        values = runs[column].astype(object).fillna("none")
        # the fingerprint across all a cell pools; the inputs across what its jobs measured
        cell = runs["cell_id" if column == "environment" else "measured_in"]
        counts = values.groupby(cell, sort=False).nunique()
        for cell_id in counts.index[counts > 1][:1]:  # the first such cell, in table order
            mine = cell == cell_id
            where = "; ".join(f"{value} (e.g. {files.iloc[0]})" for value, files
                              in runs.loc[mine, "path"].groupby(values[mine], sort=True))
            words = (f"come from {counts[cell_id]} environments" if column == "environment"
                     else f"hold {counts[cell_id]} values of {column}")
            raise ValueError(
                f"cell {cell_id}: its runs {words}, which are "
                f"never pooled: {where}. Keep one environment's results in this folder (move "
                "the others to a folder of their own, or to results/stale/ to measure them "
                "anew)")


def check_folders_one_environment(tables: list[pd.DataFrame], folders: list, doing: str
                                  ) -> None:
    """Refuse runs of several results folders whose environments (fingerprints) differ.

    Args:
        tables: each folder's runs (measurements.csv rows: an ``environment`` column).
        folders: the folders, named in the message.
        doing: what is never done to such runs, for the message ("pooled", "compared").

    Raises:
        ValueError: naming each folder and its environments.
    """
    seen = {str(folder): sorted(set(table["environment"])) for folder, table in
            zip(folders, tables)}
    if len({tuple(v) for v in seen.values()}) > 1:
        raise ValueError(f"runs of different environments are never {doing}: {seen}")


def check_no_overlap(runs: pd.DataFrame) -> None:
    """Refuse to summarise runs that were measured at the same time on one host.

    Their spans (job_start_unix_s to job_end_unix_s, while each held rnnbench.jobs.exclusive's
    lock) overlap, so each disturbed the other's timings. The cause is a lock file that the jobs
    did not share: another RNNBENCH_MEASURING_LOCK, a /tmp of their own. Runs without spans
    (schema 5, rnnbench jax) are not compared; a run shared by several cells is one run.

    Args:
        runs: load_results's table (a table without the span columns passes).

    Raises:
        ValueError: naming both files, the host and the fix.
    """
    if not {"job_start_unix_s", "job_end_unix_s"} <= set(runs):  # a table written before
        return
    spans = runs.dropna(subset=["job_start_unix_s", "job_end_unix_s"]).drop_duplicates("path")
    for host, group in spans.groupby("hostname", sort=True):
        group = group.sort_values("job_start_unix_s", kind="stable")
        ends = group["job_end_unix_s"].cummax().shift()
        late = group[group["job_start_unix_s"] < ends]
        if late.empty:
            continue
        run = late.iloc[0]
        earlier = group[(group["path"] != run["path"])
                        & (group["job_start_unix_s"] <= run["job_start_unix_s"])
                        & (group["job_end_unix_s"] > run["job_start_unix_s"])].iloc[0]
        raise ValueError(
            f"{run['path']} and {earlier['path']} were measured at the same time on {host} "
            f"({len(late)} run(s) overlap another), so each disturbed the other's timings; "
            "their jobs did not share one measuring lock (RNNBENCH_MEASURING_LOCK, /tmp). "
            "Move the overlapping results to results/stale/ and run again to measure them alone")


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    order = [c for c in CELL_COLUMNS if c != "cell_id"] + ["impl", "repeat"]
    return table.sort_values(order, ignore_index=True)


def share_runs(runs: pd.DataFrame, shared: dict[tuple[str, str], str]) -> pd.DataFrame:
    """Add the runs each cell takes from another cell.

    Args:
        runs: load_results's table.
        shared: (cell_id, impl) -> the cell whose runs of impl serve it (cells.shared_runs,
            shared_in).

    Returns:
        ``runs`` plus, for each entry, the source cell's runs of impl under cell_id: with the
        cell's axes, its related cells' ids and ``ablations`` (from its own runs of the other
        implementation), and ``measured_in`` the cell that ran them. Sorted as load_results'.
        An entry whose source or own runs are absent (a partial run) adds nothing.
    """
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
    """Read cells.shared_runs's mapping from the runs themselves.

    It serves a result set without its config: a folder sent back, or ``rnnbench jax``'s
    output. Cells are matched by their axes, so hand-made ids serve too.

    Args:
        runs: load_results's table.

    Returns:
        (cell_id, impl) -> the cell whose runs of impl serve it: for each cell with no runs of
        impl where cells.shared_runs, given the runs' cells, names a cell that has them.
    """
    axes = [c for c in CELL_COLUMNS if c not in ("cell_id", *RELATED_COLUMNS)]
    table = runs.drop_duplicates("cell_id")
    # cells.cell_id needs a sequence_length setting where the table holds its id: any
    # setting unique per id serves, as these ids are compared among these cells alone
    settings = {name: position for position, name
                in enumerate(dict.fromkeys(table["sequence_length"].astype(str)))}
    cells, recorded = {}, {}
    for name, row in zip(table["cell_id"], table[axes].to_dict("records")):
        row["sequence_length"] = settings[str(row["sequence_length"])]
        cells.setdefault(cell_id(row), row)
        recorded.setdefault(cell_id(row), name)
    measured = set(zip(runs["cell_id"], runs["impl"]))
    out = {}
    for (name, impl), source in shared_runs(cells).items():
        name, source = recorded[name], recorded[source]
        if (name, impl) not in measured and (source, impl) in measured and source != name:
            out[(name, impl)] = source
    return out


def job_cost(benchmark: str | Path) -> dict[str, float]:
    """Read a training job's whole wall time and peak memory from its Snakemake benchmark TSV.

    The file has one header line and one line of values (snakemake.benchmark.BenchmarkRecord).

    Args:
        benchmark: the job's ``benchmark:`` file.

    Returns:
        {'job_wall_s': seconds (column s), 'job_max_rss_mb': MB (column max_rss)}; NaN for a
        file that is missing or has no values.
    """
    try:
        header, values = Path(benchmark).read_text().splitlines()[:2]
        row = dict(zip(header.split("\t"), values.split("\t")))
        return {"job_wall_s": float(row["s"]), "job_max_rss_mb": float(row["max_rss"])}
    except (OSError, ValueError, KeyError):
        return {"job_wall_s": math.nan, "job_max_rss_mb": math.nan}


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def read_table(path: str | Path) -> pd.DataFrame:
    """Read summary.csv, measurements.csv or cumulative_time.csv back with their dtypes.

    Args:
        path: the CSV file.

    Returns:
        The table. sequence_length, parallel_iterations, unroll and tf_version are text
        (``10``, ``full``, ``u5-20``; ``batch_size``, ``16``; ``2.10``). ablations, fragile and
        disagreeing_repeats are text ('' for none). breakeven_steps is a nullable integer
        (empty: never).
    """
    table = pd.read_csv(path, dtype={"sequence_length": str, "parallel_iterations": str,
                                     "unroll": str,
                                     "ablations": str, "fragile": str, "tf_version": str,
                                     "disagreeing_repeats": str})
    for column in ("ablations", "fragile", "disagreeing_repeats"):  # none: '' (an empty field)
        if column in table:
            table[column] = table[column].fillna("")
    if "breakeven_steps" in table:
        table["breakeven_steps"] = table["breakeven_steps"].astype("Int64")
    # pandas 3 reads a column to a block: consolidated, a later insert does not warn
    return table.copy()
