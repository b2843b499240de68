"""Expand a validated config into the experiment grid: cells, ids, datasets, shared runs.

A cell is one combination of axes.CELL_AXES; cells that differ only in cell type,
batch_size or an ablation share a dataset; the protocol (settings that change a timing but
are not axes) names the results folder. Cells are chosen by their axis values, and their
ids computed from them (cell_id, Cell), never edited. The terms: docs/layout.md, Cells,
datasets and protocols.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable

from rnnbench.grid.apis import APIS
from rnnbench.grid.axes import (value_of, ABLATION_DEFAULTS, API_SUFFIXES, CELL_AXES, COMPAT_V1_ONLY,
                           DYNAMIC_INVARIANT_AXES, JAX_ONLY, STATIC_INVARIANT_AXES,
                           TENSORFLOW_ONLY, sequence_length_bounds, sequence_length_id)
from rnnbench.grid.axes import DEFAULT_TF_VERSION
from rnnbench.grid.vocabulary import ablation_words

LOOP_BOUND_ONCE = ("loop_bound max_len where every sequence is max_len long is the loop_bound "
                   "batch_max cell")
ONE_AT_A_TIME = ("ablation_design one_at_a_time measures one ablation axis away from its "
                 "reference at a time")
"""Two of left_out's reasons that the design implies and the docs describe: config_warnings
leaves them unsaid."""


def protocol_id(config: dict, image: str | None = None) -> str:
    """Return the results folder's name for a config's protocol and the image the rules run in.

    The protocol is the settings that change timings but are not grid axes; log_every, which
    changes no measurement, is left out.

    Args:
        config: the validated config.
        image: the Apptainer image's name, e.g. ``rnnbench-cpu-<key>``; None for a bare run.
    """
    return "_".join([config["device"], f"n{config['num_samples']}", protocol_label(config)]
                    + ([image] if image else []))


def protocol_label(protocol: dict) -> str:
    """Name the training protocol's settings that change timings, as a result records them.

    These are bench.run's ``protocol`` (PROTOCOL_KEYS less device): steps and min_measure_s
    (seconds), warm-up steps, hook_every, seed, and Grappler timed alone. The label is part of
    protocol_id's folder name, and measurements.csv's column ``protocol``, by which compare
    keeps runs of other protocols apart.
    """
    return "_".join(
        [
            f"steps{protocol['steps']}-{float(protocol['min_measure_s']) + 0.0!r}s",  # -0.0: 0.0
            f"warmup{protocol['warmup_steps']}-{protocol['max_warmup_steps']}",
            f"hooks{protocol['hook_every']}",
            f"seed{protocol['seed']}",
        ]
        + (["grappleralone"] if protocol["grappler_alone"] else [])
    )


def dataset_id(max_len: int, sequence_length: Any, input_dim: int, num_units: int,
               num_samples: int, seed: int) -> str:
    """Name of the dataset one cell reads (labels range over num_units classes)."""
    return (
        f"ml{max_len}_sl{sequence_length_id(sequence_length)}_in{input_dim}"
        f"_cls{num_units}_n{num_samples}_seed{seed}"
    )


def _ablation_suffix(axis: str, value: Any) -> str | None:
    """The cell id suffix of ``axis`` at ``value``, or None at its reference value."""
    if axis == "loop_bound":
        return "_lbmaxlen" if value != "batch_max" else None
    if axis == "pass_sequence_length":
        return "_nosl" if not bool(value) else None
    if axis == "meta_optimizer":
        return "_nomo" if value != "on" else None
    if axis == "fetches":
        return f"_f{value.replace('_', '')}" if value != "loss" else None
    if axis == "parallel_iterations":
        return f"_pi{value}" if str(value) != "batch_size" else None
    if axis == "swap_memory":
        return "_swap" if bool(value) else None
    if axis in ("intra_op_parallelism_threads", "inter_op_parallelism_threads"):
        return f"_{axis.split('_')[0]}{value}" if int(value) != 1 else None
    if axis == "mode":
        return "_infer" if value != "train" else None
    if axis == "unroll":
        return f"_u{value}" if str(value) != "max_len" else None
    raise KeyError(f"unknown ablation axis {axis!r}")


def _ablations(cell: Any) -> list[tuple[str, str, str]]:
    """(axis, cell id suffix, words) of each ablation axis where ``cell`` (a dict or a table
    row; missing axes count as their defaults) differs from ABLATION_DEFAULTS, in CELL_AXES
    order."""
    out = []
    for axis in ABLATION_DEFAULTS:
        value = cell[axis] if axis in cell else ABLATION_DEFAULTS[axis]
        suffix = _ablation_suffix(axis, value)
        if suffix is not None:
            out.append((axis, suffix, ablation_words(axis, value)))
    return out


def cell_id(cell: dict) -> str:
    """Name a cell, e.g. ``basic_lstm_bs32_ml100_sl10_nu64_in16``.

    Suffixes follow, in this order:
    - the other apis' API_SUFFIXES (``_keras``, ``_kerasxla``, ``_kerasjax``, ``_jaxscan``);
    - ``_tf<version>`` for a TensorFlow other than DEFAULT_TF_VERSION (the venv's), e.g.
      ``_tf2.12``;
    - one per ablation away from ABLATION_DEFAULTS, in CELL_AXES order: ``_lbmaxlen``
      (loop_bound max_len), ``_nosl`` (no sequence_length), ``_nomo`` (meta_optimizer off),
      ``_ftrainop`` / ``_fhooks`` / ``_fhookscold`` (fetches), ``_pi<N>``
      (parallel_iterations), ``_swap`` (swap_memory), ``_intra<N>`` / ``_inter<N>``
      (TensorFlow's threads), ``_infer`` (mode inference), ``_u<N>`` (jax_scan's unroll).
    """
    name = (
        f"{cell['cell']}_bs{cell['batch_size']}_ml{cell['max_len']}"
        f"_sl{sequence_length_id(cell['sequence_length'])}"
        f"_nu{cell['num_units']}_in{cell['input_dim']}"
    )
    return name + API_SUFFIXES[value_of(cell, "api")] + tf_version_suffix(
        value_of(cell, "tf_version")) + "".join(
        suffix for _, suffix, _ in _ablations(cell))


def tf_version_suffix(tf_version: str) -> str:
    """Return the cell id suffix of a TensorFlow version.

    Args:
        tf_version: major.minor, e.g. '2.12'.

    Returns:
        '' for DEFAULT_TF_VERSION, else ``_tf<version>``.
    """
    return "" if tf_version == DEFAULT_TF_VERSION else f"_tf{tf_version}"


def varied_axes(cells: Iterable) -> set[str]:
    """Return the ablation axes that take more than one value among ``cells``.

    An axis at one value throughout (e.g. every cell at 2 intra-op threads) is no ablation of
    that grid: its value is everyone's reference.

    Args:
        cells: the cells (dicts or table rows; a missing axis counts as its default).

    Returns:
        The set of such axes.
    """
    values: dict[str, set] = {axis: set() for axis in ABLATION_DEFAULTS}
    for cell in cells:
        for axis in ABLATION_DEFAULTS:
            values[axis].add(str(cell[axis]) if axis in cell else str(ABLATION_DEFAULTS[axis]))
    return {axis for axis, seen in values.items() if len(seen) > 1}


def ablated_axes(cell: Any, varied: Iterable[str] | None = None) -> list[str]:
    """Return the ablation axes where ``cell`` differs from ABLATION_DEFAULTS.

    Args:
        cell: a dict or a table row (a missing axis counts as its default).
        varied: the axes to consider (varied_axes of its grid); None for every ablation axis.

    Returns:
        The axes, in CELL_AXES order.
    """
    return [axis for axis, _, _ in _ablations(cell) if varied is None or axis in varied]


def ablation_label(cell: Any, varied: Iterable[str] | None = None) -> str:
    """Say a cell's ablations away from ABLATION_DEFAULTS in words.

    Args:
        cell: a dict or a table row (a missing axis counts as its default).
        varied: the axes to consider (varied_axes of its grid); None for every ablation axis.

    Returns:
        E.g. 'dynamic loops to max_len, no Grappler'; '' for none.
    """
    return ", ".join(words for axis, _, words in _ablations(cell)
                     if varied is None or axis in varied)


@dataclass(frozen=True)
class Cell:
    """A measured cell as a value: its id and the ids of the cells it is compared with.

    Each id is computed once from the cell's axes (cell_id of the axes changed), never by
    editing an id string. load.load_results writes them as columns.

    Attributes:
        id: cell_id of the cell's axes.
        reference_id: the same cell with every ablation axis of ``varied`` (varied_axes of its
            grid; None: every ablation axis) at ABLATION_DEFAULTS. Its ablations are measured
            against this cell; it is its own id when it ablates none.
        compat_v1_id: the same cell in api compat_v1 (a keras cell's unroll=False is compared
            with its dynamic_rnn).
        default_tf_id: the same cell in DEFAULT_TF_VERSION (a row of the versions table).
    """

    id: str
    reference_id: str
    compat_v1_id: str
    default_tf_id: str

    @classmethod
    def of(cls, axes: Any, varied: Iterable[str] | None = None) -> "Cell":
        """Return the Cell of ``axes``.

        Args:
            axes: a cell dict as cells() gives it and a result records it (missing ablation axes
                count as their defaults).
            varied: as Cell's ``reference_id`` says.
        """
        axes = dict(axes)
        at_reference = {axis: ABLATION_DEFAULTS[axis] for axis in ablated_axes(axes, varied)}
        return cls(id=cell_id(axes), reference_id=cell_id({**axes, **at_reference}),
                   compat_v1_id=cell_id({**axes, "api": "compat_v1"}),
                   default_tf_id=cell_id({**axes, "tf_version": DEFAULT_TF_VERSION}))


def _api_lacks(cell: dict, ablated: set[str]) -> str | None:
    """left_out's reasons about what ``cell``'s api lacks (``ablated``: its ablation axes away
    from their references), or None."""
    api = APIS[cell["api"]]
    if not api.tf1_settings and ablated & set(COMPAT_V1_ONLY):
        return (f"api {api.name} has no " + ", ".join(sorted(ablated & set(COMPAT_V1_ONLY)))
                + " setting (compat_v1 only)")
    if api.framework == "jax" and ablated & set(TENSORFLOW_ONLY):
        return (f"api {api.name} has no "
                + ", ".join(sorted(ablated & set(TENSORFLOW_ONLY))) + " setting (no Grappler)")
    if api.framework == "jax" and cell["tf_version"] != DEFAULT_TF_VERSION:
        return (f"api {api.name} imports no TensorFlow: it runs at tf_version "
                f"{DEFAULT_TF_VERSION} only")
    if not api.unroll_factor and ablated & set(JAX_ONLY):
        return f"api {api.name} has no unroll factor (jax_scan only)"
    return None


def left_out(cell: dict, config: dict) -> str | None:
    """Say why the grid leaves out ``cell``, in words naming the config's keys; None if measured.

    cells() and the config's messages (configcheck.config_warnings,
    configcheck.check_cross_fields) both read this one rule. Left out:
    - loop_bound max_len with pass_sequence_length false: without sequence_length every step
      runs anyway (the runs of loop_bound batch_max);
    - loop_bound max_len where every sequence is max_len long and the grid has batch_max (the
      same loop bound);
    - with ``ablation_design`` one_at_a_time, a cell more than one varied ablation axis away
      from ABLATION_DEFAULTS: each ablation is measured against its reference alone;
    - a keras or jax_scan cell with an ablation in COMPAT_V1_ONLY (they have no such setting);
    - the JAX_APIS away from TENSORFLOW_ONLY's references, or at another tf_version than the
      venv's; other apis away from JAX_ONLY's references;
    - a numeric unroll >= max_len where the grid has unroll max_len (the scan unrolls fully
      either way);
    - mode inference with fetches other than loss (vocabulary.MODES).

    Args:
        cell: a combination of the CELL_AXES of ``config``.
        config: the validated config.
    """
    if cell["loop_bound"] == "max_len" and not cell["pass_sequence_length"]:
        return ("loop_bound max_len needs pass_sequence_length true (without it the loop "
                "runs to max_len anyway: loop_bound batch_max's runs)")
    if (cell["loop_bound"] == "max_len" and "batch_max" in config["loop_bound"]
            and sequence_length_bounds(cell["sequence_length"], cell["max_len"])[0]
            == cell["max_len"]):
        return LOOP_BOUND_ONCE
    varied = {axis for axis in ABLATION_DEFAULTS if len(config[axis]) > 1}
    if (config.get("ablation_design") == "one_at_a_time"
            and len(ablated_axes(cell, varied)) > 1):
        return ONE_AT_A_TIME
    lacks = _api_lacks(cell, set(ablated_axes(cell)))  # one value away from the reference too
    if lacks:
        return lacks
    if (cell["unroll"] != "max_len" and cell["unroll"] >= cell["max_len"]
            and "max_len" in config["unroll"]):
        return "an unroll at or above max_len is unroll max_len (the scan unrolls fully)"
    if cell["mode"] == "inference" and cell["fetches"] != "loss":
        return "mode inference fetches the loss alone (fetches loss)"
    return None


def cells(config: dict) -> dict[str, dict]:
    """Return all cells of the grid that it measures (those left_out does not name).

    Args:
        config: the validated config.

    Returns:
        {cell_id: cell}, in grid order. Each cell holds its axes plus ``dataset`` (its
        dataset_id).
    """
    out = {}
    for values in itertools.product(*(config[axis] for axis in CELL_AXES)):
        cell = dict(zip(CELL_AXES, values))
        if left_out(cell, config):
            continue
        cell["dataset"] = dataset_id(
            cell["max_len"], cell["sequence_length"], cell["input_dim"], cell["num_units"],
            config["num_samples"], config["seed"],
        )
        out[cell_id(cell)] = cell
    return out


def resolved(cell: dict) -> tuple:
    """Return the cell as the runs see it, to tell apart cells that only look different.

    Args:
        cell: a cell of cells() (its ``dataset`` is ignored).

    Returns:
        A sorted tuple of (axis, repr(value)). A sequence_length of one length (an int,
        "max_len", or {uniform: [n, n]}) reads as that length; parallel_iterations "batch_size"
        and unroll "max_len" as the numbers they stand for.
    """
    low, high = sequence_length_bounds(cell["sequence_length"], cell["max_len"])
    values = {**cell, "sequence_length": low if low == high else (low, high),
              "parallel_iterations": cell["batch_size"] if cell.get("parallel_iterations")
              == "batch_size" else cell.get("parallel_iterations"),
              "unroll": cell["max_len"] if cell.get("unroll") == "max_len" else cell.get("unroll")}
    values.pop("dataset", None)
    return tuple(sorted((key, repr(value)) for key, value in values.items()))


def same_cells(grid: dict[str, dict]) -> tuple[str, str] | None:
    """Find two ids of ``grid`` whose cells are one (resolved).

    An axis that lists a value twice in two spellings (sequence_length 8 beside max_len at
    max_len 8) would measure one cell twice, as two cells.

    Args:
        grid: cells() of a config.

    Returns:
        The first such pair of ids, or None.
    """
    seen: dict[tuple, str] = {}
    for name, cell in grid.items():
        key = resolved(cell)
        if key in seen:
            return seen[key], name
        seen[key] = name
    return None


def left_out_reasons(config: dict) -> dict[str, int]:
    """Count the combinations of the grid's axes that each of left_out's reasons leaves out.

    What config_warnings and the config checks tell a user whose cells went missing.

    Args:
        config: the validated config.

    Returns:
        {reason: count}, most first.
    """
    found: dict[str, int] = {}
    for values in itertools.product(*(config[axis] for axis in CELL_AXES)):
        reason = left_out(dict(zip(CELL_AXES, values)), config)
        if reason:
            found[reason] = found.get(reason, 0) + 1
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def shared_runs(cells: dict[str, dict]) -> dict[tuple[str, str], str]:
    """Map the runs a cell takes from another cell instead of measuring them.

    A cell away from its reference in some STATIC_INVARIANT_AXES (among the grid's varied
    axes) takes the static runs of the same cell with those axes at their references, when the
    grid has it. So an ablation that changes dynamic_rnn alone does not re-measure an unchanged
    static_rnn. Likewise a cell away in DYNAMIC_INVARIANT_AXES (the scan's unroll) takes its
    reference's dynamic runs. Planning (which jobs run) and aggregation (which rows a cell gets)
    both read this one mapping.

    Args:
        cells: the grid (cells()), or the cells of a results table, keyed by id.

    Returns:
        {(cell_id, impl): the id of the cell whose runs of impl serve it}.
    """
    varied = varied_axes(cells.values())
    out = {}
    for name, cell in cells.items():
        for impl, invariant in (("static", STATIC_INVARIANT_AXES),
                                ("dynamic", DYNAMIC_INVARIANT_AXES)):
            axes = [axis for axis in ablated_axes(cell, varied) if axis in invariant]
            if axes:
                reference = cell_id({**cell, **{axis: ABLATION_DEFAULTS[axis] for axis in axes}})
                if reference in cells:
                    out[(name, impl)] = reference
    return out


def datasets(config: dict) -> dict[str, dict]:
    """Return every distinct dataset the grid needs.

    Args:
        config: the validated config.

    Returns:
        {dataset_id: its parameters}: max_len, sequence_length, input_dim, num_classes,
        num_samples, seed.
    """
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
