"""Expand a validated config into the experiment grid: cells, datasets and run targets.

A *cell* is one combination of the grid axes (CELL_AXES: cell, batch_size, max_len,
sequence_length, num_units, input_dim, and the ablation axes of ABLATION_DEFAULTS).
Both implementations, static_rnn and dynamic_rnn, run on every cell.
A *dataset* is one distinct data shape; cells that differ only in cell type, batch_size or
an ablation share it. The *protocol* holds the settings that change a timing but are not
grid axes (device, steps, warm-up, hook_every, num_samples, seed); it names the results
folder, so a new protocol never overwrites results measured under another.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any, Iterator

CONFIG_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"
IMPLEMENTATIONS = ("static", "dynamic")
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
}
CELL_AXES = ("cell", "batch_size", "max_len", "sequence_length", "num_units", "input_dim", "api",
             *ABLATION_DEFAULTS)
# The APIs a cell can be written in (rnnbench.model: compat_v1; rnnbench.keras_model: keras,
# keras_xla), and their id suffixes (compat_v1, the original, adds none).
API_SUFFIXES = {"compat_v1": "", "keras": "_keras", "keras_xla": "_kerasxla"}
# Ablations that only tf.compat.v1's static_rnn / dynamic_rnn and Session have: a keras cell
# away from these defaults is left out of the grid (cells()).
COMPAT_V1_ONLY = ("loop_bound", "fetches", "parallel_iterations", "swap_memory")
FETCHES = {
    "train_op": "train_op fetched alone",
    "loss": "train_op and loss",
    "hooks": "the Estimator's hook fetches",
    "hooks_cold": "hook fetches not warmed up",
}
"""The fetches axis: what each training step fetches (bench.fetch_plan), in words."""


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
    raise ValueError(f"sequence_length: {spec!r} is not an int, 'max_len' or {{uniform: [low, high]}}")


def sequence_length_bounds(spec: Any, max_len: int) -> tuple[int, int]:
    """Smallest and largest sequence_length (time steps) that ``spec`` can produce at ``max_len``.

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


def _floats(value: Any, key: str) -> Iterator[tuple[str, float]]:
    """(key, value) of every float inside a config value (lists and mappings searched)."""
    if isinstance(value, float):
        yield key, value
    elif isinstance(value, list):
        for item in value:
            yield from _floats(item, key)
    elif isinstance(value, dict):
        for inner_key, item in value.items():
            yield from _floats(item, f"{key}.{inner_key}")


def check_config(config: dict) -> None:
    """Checks that the JSON-Schema cannot express; run before any job starts.

    Args:
        config: a config already validated (and given its defaults) by the JSON-Schema.

    Raises:
        ValueError: naming the key and the bad value, if a number outside ``claims`` is a
            float (JSON-Schema's "integer" admits 4.0; every such number counts something), a
            sequence_length
            exceeds some max_len in the grid, num_samples < a batch_size, the grid has
            duplicate sequence_length settings, fetches hooks comes without a warm-up step,
            ablation_design one_at_a_time meets an ablation axis without its reference value,
            or the grid asks for more than
            MAX_TRAINING_JOBS jobs or a dataset above MAX_DATASET_BYTES.
    """
    for key, value in config.items():
        if key == "claims":  # the seeds' figures are ratios
            continue
        for where, number in _floats(value, key):
            raise ValueError(f"{where}: {number!r} is not an integer")
    ids = [sequence_length_id(s) for s in config["sequence_length"]]
    if len(set(ids)) != len(ids):
        raise ValueError(f"sequence_length: duplicate settings in {config['sequence_length']!r}")
    for spec, max_len in itertools.product(config["sequence_length"], config["max_len"]):
        sequence_length_bounds(spec, max_len)
    if config["ablation_design"] == "one_at_a_time":
        for axis, default in ABLATION_DEFAULTS.items():
            if default not in config[axis]:
                raise ValueError(
                    f"{axis}: ablation_design one_at_a_time varies each ablation axis around "
                    f"its reference {default!r}, which {config[axis]!r} lacks")
    if "hooks" in config["fetches"] and config["warmup_steps"] < 1:
        raise ValueError("fetches: hooks needs warmup_steps >= 1 (its every-step fetch set "
                         f"first runs in the first warm-up step), not {config['warmup_steps']}")
    for batch_size in config["batch_size"]:
        if batch_size > config["num_samples"]:
            raise ValueError(
                f"batch_size: {batch_size} is above num_samples {config['num_samples']}"
            )
    # an upper bound (cells() leaves out a few redundant cells), computed without listing them
    ablation_cells = (1 + sum(len(config[a]) - 1 for a in ABLATION_DEFAULTS)
                      if config["ablation_design"] == "one_at_a_time"
                      else math.prod(len(config[a]) for a in ABLATION_DEFAULTS))
    jobs = (len(IMPLEMENTATIONS) * config["repeats"] * ablation_cells
            * math.prod(len(config[a]) for a in CELL_AXES if a not in ABLATION_DEFAULTS))
    if jobs > MAX_TRAINING_JOBS:
        raise ValueError(f"the grid asks for {jobs} training jobs (repeats {config['repeats']}), "
                         f"above {MAX_TRAINING_JOBS}: split it into several configs")
    dataset_bytes = 4 * config["num_samples"] * max(config["max_len"]) * max(config["input_dim"])
    if dataset_bytes > MAX_DATASET_BYTES:
        raise ValueError(
            f"num_samples: {config['num_samples']} sequences of max_len {max(config['max_len'])} x "
            f"input_dim {max(config['input_dim'])} make a {dataset_bytes / 2**30:.1f} GiB dataset, "
            f"above {MAX_DATASET_BYTES / 2**30:.0f} GiB"
        )


def validate_config(config: dict) -> None:
    """Validate ``config`` in place: JSON-Schema (filling in defaults), then check_config.

    Raises:
        snakemake.exceptions.WorkflowError: from the schema, naming the key and the value.
        ValueError: from check_config.
    """
    from snakemake.utils import validate

    validate(config, schema=str(CONFIG_SCHEMA), set_default=True)
    check_config(config)


def protocol_id(config: dict, image: str | None = None) -> str:
    """Folder name for the settings that change timings but are not grid axes (log_every,
    which changes no measurement, is left out), and the Apptainer image the rules run in
    (``image``: its name, e.g. ``rnnbench-cpu-<key>``; None for a bare run)."""
    return "_".join(
        [
            config["device"],
            f"n{config['num_samples']}",
            f"steps{config['steps']}",
            f"warmup{config['warmup_steps']}",
            f"hooks{config['hook_every']}",
            f"seed{config['seed']}",
        ]
        + ([] if config["grappler_alone"] else ["nograppleralone"])
        + ([image] if image else [])
    )


def dataset_id(max_len: int, sequence_length: Any, input_dim: int, num_units: int,
               num_samples: int, seed: int) -> str:
    """Name of the dataset one cell reads (labels range over num_units classes)."""
    return (
        f"ml{max_len}_sl{sequence_length_id(sequence_length)}_in{input_dim}"
        f"_cls{num_units}_n{num_samples}_seed{seed}"
    )


def _ablations(cell: Any) -> list[tuple[str, str]]:
    """(cell id suffix, words) of each ablation axis where ``cell`` (a dict or a table row;
    missing axes count as their defaults) differs from ABLATION_DEFAULTS, in CELL_AXES order."""
    get = {**ABLATION_DEFAULTS, **{axis: cell[axis] for axis in ABLATION_DEFAULTS
                                   if axis in cell}}
    out = []
    if get["loop_bound"] != "batch_max":
        out.append(("_lbmaxlen", "dynamic loops to max_len"))
    if not bool(get["pass_sequence_length"]):
        out.append(("_nosl", "no sequence_length"))
    if get["meta_optimizer"] != "on":
        out.append(("_nomo", "no Grappler"))
    if get["fetches"] != "loss":
        out.append((f"_f{get['fetches'].replace('_', '')}", FETCHES[get["fetches"]]))
    if str(get["parallel_iterations"]) != "batch_size":
        out.append((f"_pi{get['parallel_iterations']}",
                    f"parallel_iterations {get['parallel_iterations']}"))
    if bool(get["swap_memory"]):
        out.append(("_swap", "swap_memory"))
    for axis, short in (("intra_op_parallelism_threads", "intra"),
                        ("inter_op_parallelism_threads", "inter")):
        if int(get[axis]) != 1:
            out.append((f"_{short}{get[axis]}", f"{get[axis]} {short}-op threads"))
    return out


def cell_id(cell: dict) -> str:
    """Name of a cell, e.g. ``basic_lstm_bs32_ml100_sl10_nu64_in16``; the keras apis add
    ``_keras`` / ``_kerasxla``; then each ablation away from ABLATION_DEFAULTS adds a suffix,
    in CELL_AXES order: ``_lbmaxlen`` (loop_bound max_len),
    ``_nosl`` (no sequence_length), ``_nomo`` (meta_optimizer off), ``_ftrainop`` /
    ``_fhooks`` / ``_fhookscold`` (fetches), ``_pi<N>`` (parallel_iterations), ``_swap``
    (swap_memory), ``_intra<N>`` / ``_inter<N>`` (TensorFlow's threads)."""
    name = (
        f"{cell['cell']}_bs{cell['batch_size']}_ml{cell['max_len']}"
        f"_sl{sequence_length_id(cell['sequence_length'])}"
        f"_nu{cell['num_units']}_in{cell['input_dim']}"
    )
    return name + API_SUFFIXES[cell.get("api", "compat_v1")] + "".join(
        suffix for suffix, _ in _ablations(cell))


def ablation_label(cell: Any) -> str:
    """The ablations of a cell (a dict or a table row with the ablation axes) away from
    ABLATION_DEFAULTS, in words ('dynamic loops to max_len, no Grappler'); '' for none."""
    return ", ".join(words for _, words in _ablations(cell))


def ablated_axes(cell: Any) -> list[str]:
    """The ablation axes (keys of ABLATION_DEFAULTS) where ``cell`` differs from the defaults."""
    return [axis for axis in ABLATION_DEFAULTS if axis in cell and _ablations({axis: cell[axis]})]


def base_cell_id(name: str, cell: Any) -> str:
    """The id of the cell without ablations (every ablation axis at ABLATION_DEFAULTS) that
    the cell called ``name`` (its cell_id) with axes ``cell`` ablates: ``name`` without its
    ablation suffixes; ``name`` itself when it has none.

    Raises:
        ValueError: if ``name`` does not end with the suffixes of ``cell``'s ablations.
    """
    suffix = "".join(part for part, _ in _ablations(cell))
    if not name.endswith(suffix):
        raise ValueError(f"cell id {name!r} does not end with its ablations' {suffix!r}")
    return name[:len(name) - len(suffix)]


def charted_ablation_axes(cells: list) -> list[str]:
    """The ablation axes that get a chart (charts.ablation_chart): those taking at least two
    values among the ``cells`` (dicts or table rows) that differ from the defaults in that
    axis alone."""
    out = []
    for axis in ABLATION_DEFAULTS:
        values = {str(cell[axis]) for cell in cells if set(ablated_axes(cell)) <= {axis}}
        if len(values) > 1:
            out.append(axis)
    return out


def job_threads(cell: dict) -> int:
    """Snakemake threads of a cell's training job: the most TensorFlow threads it asks for."""
    return max(cell.get("intra_op_parallelism_threads", 1),
               cell.get("inter_op_parallelism_threads", 1))


def cells(config: dict) -> dict[str, dict]:
    """All cells of the grid, keyed by cell_id, in grid order.

    Each value holds the cell's axes plus ``dataset`` (its dataset_id). Cells with
    loop_bound max_len and pass_sequence_length false are left out: without sequence_length
    every step runs anyway (the same runs as loop_bound batch_max). With ``ablation_design``
    one_at_a_time, so are the cells that change more than one ablation axis away from
    ABLATION_DEFAULTS (each ablation is measured against its reference alone, not in every
    combination with the others). So are cells of the keras apis with an ablation in
    COMPAT_V1_ONLY (they have no such setting).
    """
    out = {}
    one_at_a_time = config.get("ablation_design") == "one_at_a_time"
    for values in itertools.product(*(config[axis] for axis in CELL_AXES)):
        cell = dict(zip(CELL_AXES, values))
        if cell["loop_bound"] == "max_len" and not cell["pass_sequence_length"]:
            continue
        if one_at_a_time and len(ablated_axes(cell)) > 1:
            continue
        if cell["api"] != "compat_v1" and set(ablated_axes(cell)) & set(COMPAT_V1_ONLY):
            continue
        cell["dataset"] = dataset_id(
            cell["max_len"], cell["sequence_length"], cell["input_dim"], cell["num_units"],
            config["num_samples"], config["seed"],
        )
        out[cell_id(cell)] = cell
    return out


def datasets(config: dict) -> dict[str, dict]:
    """Every distinct dataset the grid needs, keyed by dataset_id, with its parameters."""
    out = {}
    for cell in cells(config).values():
        out[cell["dataset"]] = {
            "max_len": cell["max_len"],
            "sequence_length": cell["sequence_length"],
            "input_dim": cell["input_dim"],
            "num_classes": cell["num_units"],
            "num_samples": config["num_samples"],
            "seed": config["seed"],
        }
    return out
