"""The grid's axes and their values: what a config can vary, and each axis's reference value.

It also holds the apis and what each lacks, and how an axis value is named in ids and
tables. A cell is one combination of CELL_AXES; both IMPLEMENTATIONS run on every cell
(rnnbench.grid.cells builds the cells and their ids; docs/layout.md, Cells, datasets and
protocols). Standard library and rnnbench.grid.layout only: claims.py reads this module
when the Snakefile is read, and the timing harness (hook_step) on the GPU machine.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from rnnbench.grid.apis import APIS, DEFAULT_API
from rnnbench.grid.layout import IMPLEMENTATIONS  # noqa: F401  (an axis of every cell)

DEFAULT_TF_VERSION = "2.21"
"""The TensorFlow the venv pins (envs/requirements.txt): its image holds the whole workflow
(aggregation, charts); the images of other versions hold what a training job imports."""

MAX_TRAINING_JOBS = 20_000  # Snakemake's DAG for far more jobs takes minutes and gigabytes
MAX_DATASET_BYTES = 8 * 2**30  # inputs float32 [num_samples, max_len, input_dim] in memory
# Ablation axes and their reference values: TensorFlow's own behaviour, the seed's fetches
# (train_op and loss every step) and parallel_iterations (batch_size), one thread. A cell id
# names an ablation only where it differs from these, so the ids of a grid without
# ablations do not change when an axis is added.
ABLATION_DEFAULTS = {
    "loop_bound": "batch_max",
    "pass_sequence_length": True,
    "meta_optimizer": "on",
    "fetches": "loss",
    "parallel_iterations": "batch_size",
    "swap_memory": False,
    "intra_op_parallelism_threads": 1,
    "inter_op_parallelism_threads": 1,
    "mode": "train",
    "unroll": "max_len",
}
SHAPE_AXES = ("cell", "batch_size", "max_len", "sequence_length", "num_units", "input_dim", "api",
              "tf_version")
"""The axes that are no ablation (what a cell computes, and in which api and TensorFlow): the
one list, in grid order. Tables and labels name a cell by these (LABEL_AXES' order)."""
CELL_AXES = (*SHAPE_AXES, *ABLATION_DEFAULTS)
"""Every axis of a cell, in the order the grid is expanded (cells.cells: ids and job order)."""
LABEL_AXES = ("cell", "api", "tf_version",
              *(axis for axis in SHAPE_AXES if axis not in ("cell", "api", "tf_version")))
"""SHAPE_AXES in the order a cell's words name them ('basic_lstm, keras, max_len 24, ...':
tables.cell_labels, claims' groups)."""
NUMERIC_AXES = ("max_len", "batch_size", "num_units", "input_dim")
"""The numeric axes that are no ablation: the one list. A trend or law claim is along one of
them (claims.check_claim), a grid that varies one gets a chart of the static/dynamic ratios
against it (plan.ratio_axes, charts_varied.ratio_chart), and scaling fits laws along them."""
API_SUFFIXES = {name: api.suffix for name, api in APIS.items()}
"""Each api's cell id suffix (rnnbench.grid.apis: compat_v1, the original, adds none)."""
JAX_APIS = tuple(name for name, api in APIS.items() if api.framework == "jax")
"""The apis on JAX: their jobs never import TensorFlow, and the TensorFlow jobs of the other
apis never import JAX (frameworks.keep_jax_out)."""
KERAS_APIS = tuple(name for name, api in APIS.items() if api.keras)
"""The apis of a Keras layer, unroll=True against unroll=False (tables.keras_table: FINDINGS'
'For Keras users')."""
# Ablation axes that change dynamic_rnn only: static_rnn's graph and steps are the same at
# every value (it has no while loop), so a cell away from its reference in these axes alone
# reuses the reference cell's static runs (cells.shared_runs) instead of measuring them again.
STATIC_INVARIANT_AXES = ("loop_bound", "parallel_iterations", "swap_memory")
# Ablations that only tf.compat.v1's static_rnn / dynamic_rnn and Session have: a keras cell
# away from these defaults is left out of the grid (cells.left_out).
COMPAT_V1_ONLY = ("loop_bound", "fetches", "parallel_iterations", "swap_memory")
# Ablations the JAX apis lack besides those (no Grappler), and the one only jax_scan has (the
# scan's unroll factor of static): cells away from these references in another api are left out.
TENSORFLOW_ONLY = ("meta_optimizer",)
JAX_ONLY = ("unroll",)
# Ablation axes that change static alone (dynamic is always unroll=1): a cell away from its
# reference in these alone reuses the reference cell's dynamic runs (cells.shared_runs).
DYNAMIC_INVARIANT_AXES = ("unroll",)
PROTOCOL_KEYS = ("steps", "min_measure_s", "warmup_steps", "max_warmup_steps", "hook_every",
                 "device", "seed", "grappler_alone")
"""The config keys a training job's protocol holds (bench.run's ``protocol``, with
log_every): the rules train_static / train_dynamic and `rnnbench jax` (rnnbench.commands.jax)
pass these."""


def hook_step(fetches: str, hook_every: int, warmup_steps: int | None, k: int) -> bool:
    """Tell whether step k fetches the hook set.

    Step k counts from 0 = the first step, then the warm-up's, then the measured ones. By
    ``fetches``:
    - ``loss`` / ``train_op``: never (one fetch set throughout).
    - ``hooks``: when k % hook_every == 0, as the seed's Estimator, whose hooks fire on the
      first step and then every ``hook_every`` steps (LoggingTensorHook, SummarySaverHook with
      save_summary_steps). The every-step set first runs in the first warm-up step, so both
      sets are warmed up before the measurement.
    - ``hooks_cold``: the pitfall. The first step and the warm-up never fetch the hook set.
      Measured step j = k - 1 - warmup_steps does when j % hook_every == 0, so the first
      measured step is the hook set's first run.

    Args:
        fetches: the cell's fetches.
        hook_every: steps between hook fetches.
        warmup_steps: the warm-up's length; None while still warming up.
        k: the step.

    Raises:
        ValueError: for an unknown ``fetches`` (names it).
    """
    if fetches in ("loss", "train_op"):
        return False
    if fetches == "hooks":
        return k % hook_every == 0
    if fetches == "hooks_cold":
        measured = None if warmup_steps is None else k - 1 - warmup_steps
        return measured is not None and measured >= 0 and measured % hook_every == 0
    raise ValueError(f"fetches: {fetches!r} is not one of loss, train_op, hooks, hooks_cold")


def inputs_bytes(num_samples: int, max_len: int, input_dim: int) -> int:
    """Return the bytes of a dataset's inputs, float32 [num_samples, max_len, input_dim].

    The inputs are data.py's. The one count the config checks (configcheck) and the
    memory requests (resources.py) use.
    """
    return 4 * num_samples * max_len * input_dim


def axis_value_id(axis: str, value: Any) -> str:
    """Return how the tables name ``value`` of ``axis`` (measurements.csv's column).

    A sequence_length is named by sequence_length_id (``20``, ``full``, ``u5-20``); a claim may
    write ``max_len`` or ``full``, ``{uniform: [5, 20]}`` or ``u5-20``. Any other value is its
    text. A between claim's values are matched by it, before any job
    (configcheck.check_claim_against_grid) and when judged (claims.judge).
    """
    if axis == "sequence_length" and not (isinstance(value, str) and value != "max_len"):
        try:
            return sequence_length_id(value)
        except ValueError:
            pass
    return str(value)


def sequence_length_id(spec: Any) -> str:
    """Short, path-safe name of a sequence_length setting: ``20``, ``full``, ``u5-20``.

    Raises:
        ValueError: if ``spec`` is not an int, "max_len" or {"uniform": [low, high]}.
    """
    if isinstance(spec, bool):
        raise ValueError(f"sequence_length: {spec!r} is not a length")
    if isinstance(spec, int):
        return str(spec)
    if spec == "max_len":
        return "full"
    if isinstance(spec, dict) and set(spec) == {"uniform"} and len(spec["uniform"]) == 2:
        low, high = spec["uniform"]
        return f"u{low}-{high}"
    raise ValueError(f"sequence_length: {spec!r} is not an int, 'max_len' or "
                     "{uniform: [low, high]}")


def sequence_length_spec(label: Any) -> Any:
    """Return the sequence_length setting a table's label names (sequence_length_id's inverse).

    Args:
        label: ``20``, ``full`` or ``u5-20`` (a number may read as ``20.0``).

    Returns:
        20, "max_len" or {"uniform": [5, 20]}.

    Raises:
        ValueError: for a label sequence_length_id does not write (names it).
    """
    text = str(label)
    if text == "full":
        return "max_len"
    found = re.fullmatch(r"u(\d+)-(\d+)", text)
    if found:
        return {"uniform": [int(found.group(1)), int(found.group(2))]}
    if re.fullmatch(r"\d+(\.0)?", text):
        return int(float(text))
    raise ValueError(f"sequence_length: {label!r} is not a label of sequence_length_id")


def sequence_length_bounds(spec: Any, max_len: int) -> tuple[int, int]:
    """Return the smallest and largest sequence_length ``spec`` can produce at ``max_len``.

    Both are in time steps.

    Raises:
        ValueError: if the bounds are not 1 <= low <= high <= max_len; the message names the
            sequence_length setting and the max_len.
    """
    sequence_length_id(spec)  # rejects unknown forms
    if isinstance(spec, int):
        low = high = spec
    elif spec == "max_len":
        low = high = max_len
    else:
        low, high = spec["uniform"]
    if not 1 <= low <= high:
        raise ValueError(f"sequence_length: uniform bounds {[low, high]} need 1 <= low <= high")
    if high > max_len:
        raise ValueError(
            f"sequence_length: {spec!r} reaches {high} time steps, above max_len {max_len}"
        )
    return low, high


def tf_version_key(tf_version: str) -> tuple[int, ...]:
    """Sort key of a major.minor version in release order ("2.9" before "2.12")."""
    return tuple(int(part) for part in tf_version.split("."))


MIN_REPEATS = 3
"""The fewest processes per cell and implementation at which every interval here keeps its
stated coverage in tests/stats/test_intervals.py's simulation (rnnbench.stats.intervals).
At 2, the t-intervals of the geometric mean and the ratio still cover 95 %. But the
break-even interval (one degree of freedom) is unbounded in most experiments, and covers
97.5 %, more than it states. At 1 there is no interval at all."""


def value_of(cell: Mapping[str, Any], name: str) -> Any:
    """Return ``cell``'s value of axis ``name``, or its default where the cell lacks it.

    This is the one home of the axes' defaults: api compat_v1, the venv's tf_version,
    ABLATION_DEFAULTS. A cell may lack an axis when it is a hand-made dict or a row of older
    results.

    Raises:
        KeyError: for an axis without a default that ``cell`` lacks (a shape axis).
    """
    if name in cell:
        return cell[name]
    return {"api": DEFAULT_API, "tf_version": DEFAULT_TF_VERSION, **ABLATION_DEFAULTS}[name]
