"""Expand a validated config into the experiment grid: cells, datasets and run targets.

A *cell* is one combination of the grid axes (cell, batch_size, max_len, sequence_length,
num_units, input_dim, and the ablations loop_bound, pass_sequence_length, meta_optimizer).
Both implementations, static_rnn and dynamic_rnn, run on every cell.
A *dataset* is one distinct data shape; cells that differ only in cell type or batch_size
share it. The *protocol* holds the settings that change a timing but are not grid axes
(device, threads, steps, warm-up, fetches, seed); it names the results folder, so a new
protocol never overwrites results measured under another.
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
CELL_AXES = ("cell", "batch_size", "max_len", "sequence_length", "num_units", "input_dim",
             "loop_bound", "pass_sequence_length", "meta_optimizer")
# Ablation axes: a cell id names them only where they differ from these (TensorFlow's own
# behaviour), so the ids of a grid without ablations do not change.
ABLATION_DEFAULTS = {"loop_bound": "batch_max", "pass_sequence_length": True,
                     "meta_optimizer": "on"}
ABLATION_SUFFIXES = ("_lbmaxlen", "_nosl", "_nomo")  # in cell ids, in this order


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
            duplicate sequence_length settings, or the grid asks for more than
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
    for batch_size in config["batch_size"]:
        if batch_size > config["num_samples"]:
            raise ValueError(
                f"batch_size: {batch_size} is above num_samples {config['num_samples']}"
            )
    jobs = len(IMPLEMENTATIONS) * config["repeats"] * math.prod(len(config[a]) for a in CELL_AXES)
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
    intra = config["intra_op_parallelism_threads"]
    inter = config["inter_op_parallelism_threads"]
    threads = f"t{config['threads']}-intra{'job' if intra is None else intra}"
    threads += f"-inter{'job' if inter is None else inter}"
    par = config["parallel_iterations"]
    return "_".join(
        [
            config["device"],
            threads,
            f"n{config['num_samples']}",
            f"steps{config['steps']}",
            f"warmup{config['warmup_steps']}",
            "fetchloss" if config["fetch_loss"] else "trainop",
            f"pi{'batch' if par is None else par}",
            f"seed{config['seed']}",
        ]
        + ([image] if image else [])
    )


def dataset_id(max_len: int, sequence_length: Any, input_dim: int, num_units: int,
               num_samples: int, seed: int) -> str:
    """Name of the dataset one cell reads (labels range over num_units classes)."""
    return (
        f"ml{max_len}_sl{sequence_length_id(sequence_length)}_in{input_dim}"
        f"_cls{num_units}_n{num_samples}_seed{seed}"
    )


def cell_id(cell: dict) -> str:
    """Name of a cell, e.g. ``basic_lstm_bs32_ml100_sl10_nu64_in16``; ablations away from
    ABLATION_DEFAULTS add ``_lbmaxlen`` (loop_bound max_len), ``_nosl`` (no sequence_length),
    ``_nomo`` (meta_optimizer off)."""
    name = (
        f"{cell['cell']}_bs{cell['batch_size']}_ml{cell['max_len']}"
        f"_sl{sequence_length_id(cell['sequence_length'])}"
        f"_nu{cell['num_units']}_in{cell['input_dim']}"
    )
    if cell.get("loop_bound", "batch_max") == "max_len":
        name += ABLATION_SUFFIXES[0]
    if not cell.get("pass_sequence_length", True):
        name += ABLATION_SUFFIXES[1]
    if cell.get("meta_optimizer", "on") == "off":
        name += ABLATION_SUFFIXES[2]
    return name


def ablation_label(cell: Any) -> str:
    """The ablations of a cell (a dict or a table row with the ablation axes) away from
    ABLATION_DEFAULTS, in words ('dynamic loops to max_len, no Grappler'); '' for none."""
    names = []
    if cell["loop_bound"] != ABLATION_DEFAULTS["loop_bound"]:
        names.append("dynamic loops to max_len")
    if bool(cell["pass_sequence_length"]) != ABLATION_DEFAULTS["pass_sequence_length"]:
        names.append("no sequence_length")
    if cell["meta_optimizer"] != ABLATION_DEFAULTS["meta_optimizer"]:
        names.append("no Grappler")
    return ", ".join(names)


def base_cell_id(name: str) -> str:
    """The id of the cell without ablations that ``name`` (a cell_id) ablates."""
    for suffix in ABLATION_SUFFIXES:
        name = name.replace(suffix, "")
    return name


def cells(config: dict) -> dict[str, dict]:
    """All cells of the grid, keyed by cell_id, in grid order.

    Each value holds the cell's axes plus ``dataset`` (its dataset_id). Cells with
    loop_bound max_len and pass_sequence_length false are left out: without sequence_length
    every step runs anyway (the same runs as loop_bound batch_max).
    """
    out = {}
    for values in itertools.product(*(config[axis] for axis in CELL_AXES)):
        cell = dict(zip(CELL_AXES, values))
        if cell["loop_bound"] == "max_len" and not cell["pass_sequence_length"]:
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
