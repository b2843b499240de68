"""The resources (memory, run time) of a training job, sized from its grid cell.

They are what a cluster is asked for, and the bounds each job's watchdog holds it to
(rnnbench.jobs.watchdog). check_fits refuses a grid whose largest job does not fit the
machine, before any job. They are deliberate over-estimates from runs measured here;
override them with ``--set-resources``. The formulas and how they were sized:
docs/running.md, How a measuring job is bounded.
"""

from __future__ import annotations

import math

from rnnbench.grid import flop
from rnnbench.grid.apis import api_of
from rnnbench.grid.axes import inputs_bytes, sequence_length_bounds, value_of

BASE_MB = 1024  # Python + TensorFlow + tf_keras: about 620 MiB peak RSS seen before any graph
GPU_HOST_MB = 2048  # device gpu: CUDA, cuDNN and cuBLAS in host memory; a guess (no GPU here)
STATIC_MB_PER_STEP = 8  # static graph: about 5.7 MiB per unrolled time step seen (64 units)
BYTES_PER_ACTIVATION = 16  # float32, kept for the forward pass, its gradient and Adam (x4)
BYTES_PER_WEIGHT = 16  # float32 weight, its gradient, Adam's two moments
BASE_MINUTES = 5  # process start, TensorFlow import (6-8 s seen), session, writing the result
STATIC_SETUP_S_PER_STEP = 1.0  # graph construction + optimisation: 0.35-0.45 s per step seen
CPU_FLOP_PER_S = 1e10  # a slow core's float32 rate, so long grids are not killed early
COMPILED_MARGIN = 1.5  # on the fit: the fit passes within 15 % of its points' largest (60)


def unrolled_steps(cell: dict, impl: str) -> int:
    """Return the time steps ``impl`` unrolls into its graph.

    Args:
        cell: the grid cell (max_len; unroll where it differs from the default).
        impl: "static" or "dynamic".

    Returns:
        For static, max_len (jax_scan: its unroll factor where the cell sets one below
        max_len); for dynamic, 0 (a loop of one step).
    """
    if impl != "static":
        return 0
    unroll = value_of(cell, "unroll")
    return cell["max_len"] if unroll == "max_len" else min(int(unroll), cell["max_len"])


def compiled_cost(cell: dict, impl: str) -> tuple[float, float]:
    """Return what static's compiled, unrolled graph adds to a job, in (MiB, seconds).

    This is the api's compiled_fit (rnnbench.grid.apis) at unrolled_steps, without margin, as
    it added to a job of the calibration run; (0, 0) for an api without one.
    """
    steps = unrolled_steps(cell, impl)
    fit = api_of(cell).compiled_fit or ((), ())
    mb, seconds = (sum(k * steps ** (power + 1) for power, k in enumerate(terms))
                   for terms in fit)
    return mb, seconds


def unrolled_cost(cell: dict, impl: str) -> tuple[float, float]:
    """Return what unrolling adds to a training job: (MiB of peak memory, seconds of setup).

    compat_v1 and keras (graphs TensorFlow runs op by op): ``STATIC_MB_PER_STEP`` and
    ``STATIC_SETUP_S_PER_STEP`` per unrolled step (unrolled_steps). Compiled apis (XLA, JAX):
    the api's compiled_fit polynomial x ``COMPILED_MARGIN``, and no less than the former.
    """
    steps = unrolled_steps(cell, impl)
    linear = (STATIC_MB_PER_STEP * steps, STATIC_SETUP_S_PER_STEP * steps)
    if not api_of(cell).compiled_fit:
        return linear
    mb, seconds = compiled_cost(cell, impl)
    return max(linear[0], COMPILED_MARGIN * mb), max(linear[1], COMPILED_MARGIN * seconds)


def training_mem_mb(cell: dict, impl: str, num_samples: int, device: str = "cpu") -> int:
    """Return the memory to request for one training job, MiB, rounded up to a multiple of 256.

    The job's watchdog holds it to this (rnnbench.jobs.watchdog). The sum: ``BASE_MB`` (+
    ``GPU_HOST_MB`` on a GPU), unrolled_cost, the dataset twice, the activations and the
    weights (docs/running.md, How a measuring job is bounded, gives each term).

    Args:
        cell: batch_size, max_len, num_units, input_dim of the grid cell (api and unroll
            where they differ from the defaults).
        impl: "static" or "dynamic".
        num_samples: sequences in the dataset.
        device: "cpu" or "gpu".
    """
    data = 2 * inputs_bytes(num_samples, cell["max_len"], cell["input_dim"])
    activations = (BYTES_PER_ACTIVATION * cell["batch_size"] * cell["max_len"]
                   * (cell["input_dim"] + 8 * cell["num_units"]))
    weights = weights_bytes(cell["cell"], cell["num_units"], cell["input_dim"])
    base = BASE_MB + (GPU_HOST_MB if device == "gpu" else 0)
    total = base + unrolled_cost(cell, impl)[0] + (data + activations + weights) / 2**20
    return 256 * math.ceil(total / 256)


def weights_bytes(cell: str, num_units: int, input_dim: int, mode: str = "train") -> int:
    """Return the bytes a step's weights take: the cell's weights, and what each carries.

    Args:
        cell: the cell type (flop.GATES: its gate blocks).
        num_units: the cell's units.
        input_dim: the input's width.
        mode: the mode axis: train carries a gradient and Adam's moments, inference none.

    Returns:
        ``BYTES_PER_WEIGHT`` (train: the float32 weight, its gradient and Adam's two moments;
        inference: 4, the weight alone) x gates x num_units x (input_dim + num_units + 1):
        the kernel and the bias.

    Raises:
        KeyError: for a cell type not in flop.GATES.
    """
    per_weight = BYTES_PER_WEIGHT if mode == "train" else 4
    return per_weight * flop.GATES[cell] * num_units * (input_dim + num_units + 1)


def machine_mem_mb() -> int:
    """This machine's physical memory, in MiB (sysconf: pages x page size)."""
    import os

    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20


def check_fits(cells: dict[str, dict], num_samples: int, available_mb: int,
               where: str = "this machine", device: str = "cpu") -> None:
    """Refuse a grid whose largest training job needs more memory than ``available_mb`` MiB.

    Such a job would fail inside TensorFlow after its setup, or be killed.

    Args:
        cells: cells.cells of the config: {cell_id: cell}.
        num_samples: sequences in each dataset.
        available_mb: the memory a job may use, MiB (machine_mem_mb for a local run).
        where: named in the message (e.g. "this machine").
        device: "cpu" or "gpu" (training_mem_mb).

    Raises:
        ValueError: naming the cell's num_units, batch_size, max_len and input_dim, the memory
            it needs, the limit, and the fix.
    """
    need, cell_id = max((max(training_mem_mb(cell, impl, num_samples, device) for impl in
                             ("static", "dynamic")), cell_id) for cell_id, cell in cells.items())
    if need > available_mb:
        cell = cells[cell_id]
        raise ValueError(
            f"num_units {cell['num_units']}, batch_size {cell['batch_size']}, max_len "
            f"{cell['max_len']}, input_dim {cell['input_dim']}, api {cell.get('api', 'compat_v1')}"
            f"{_unroll_words(cell)} (cell {cell_id}): a training job "
            f"needs about {need} MiB, {where} has {available_mb} MiB: make the cell smaller, "
            "or run it on a larger machine (e.g. a cluster: --profile profiles/slurm)")


MEASURING_RULES = ("train_static", "train_dynamic", "peak")
"""The rules whose jobs a watchdog holds to their mem_mb and runtime (rnnbench.jobs.jobstart)."""


def check_overrides(set_resources: dict, available_mb: int | None) -> None:
    """Refuse, before any job, a measuring rule's ``--set-resources`` its watchdog cannot hold.

    That is a mem_mb or runtime not above 0, or, for a local run, more memory than the machine
    has. Other forms ('2G', an expression) are Snakemake's to read.

    Args:
        set_resources: {rule: {resource: value}} (hardware.Invocation.set_resources).
        available_mb: this machine's memory, MiB; None for a cluster run.

    Raises:
        ValueError: naming the option as given, and the fix.
    """
    for rule in MEASURING_RULES:
        for name in ("mem_mb", "runtime"):
            value = set_resources.get(rule, {}).get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            option = f"--set-resources {rule}:{name}={value}"
            if value <= 0:
                raise ValueError(f"{option}: the job's watchdog needs a number above 0 "
                                 f"({'MiB' if name == 'mem_mb' else 'minutes'})")
            if name == "mem_mb" and available_mb is not None and value > available_mb:
                raise ValueError(f"{option}: this machine has {available_mb} MiB; a job that "
                                 "grows past it thrashes the machine before its watchdog stops "
                                 "it: give at most that, or run on a cluster (profiles/slurm)")


def _unroll_words(cell: dict) -> str:
    unroll = value_of(cell, "unroll")
    return "" if unroll == "max_len" else f", unroll {unroll}"


def dataset_mem_mb(params: dict) -> int:
    """Return the memory to request for rule make_data, MiB.

    Args:
        params: the dataset's num_samples, max_len and input_dim.

    Returns:
        512 + the inputs array twice (numpy's float32 [num_samples, max_len, input_dim] and its
        write buffer), rounded up to a multiple of 256.
    """
    inputs = inputs_bytes(params["num_samples"], params["max_len"], params["input_dim"])
    return 256 * math.ceil((512 + 2 * inputs / 2**20) / 256)


def step_flop(cell: dict, impl: str) -> float:
    """Return an upper bound of the FLOP of one measured step of ``impl`` in a cell.

    It is flop.step_flop, in the cell's mode, over the time steps it computes
    (flop.computed_time_steps) at the longest sequence_length the cell can produce: no batch
    computes more steps.
    """
    _, longest = sequence_length_bounds(cell["sequence_length"], cell["max_len"])
    return flop.step_flop(cell["cell"], cell["batch_size"], cell["input_dim"],
                              cell["num_units"], flop.computed_time_steps(cell, impl, longest),
                              value_of(cell, "mode"))


def training_runtime_min(cell: dict, impl: str, total_steps: int,
                         min_measure_s: float = 0.0) -> int:
    """Return the wall-time limit to request for one training job, in whole minutes.

    The job's watchdog holds it to this (rnnbench.jobs.watchdog). The sum: twice
    ``BASE_MINUTES``, what unrolling adds to setup (unrolled_cost), total_steps x step_flop /
    ``CPU_FLOP_PER_S``, and min_measure_s.

    Args:
        cell: batch_size, max_len, sequence_length, num_units, input_dim of the grid cell (and
            api, unroll, pass_sequence_length, loop_bound where they differ from the defaults).
        impl: "static" or "dynamic".
        total_steps: the most training steps the run can take (first + max_warmup_steps +
            steps).
        min_measure_s: the shortest measurement, seconds: a run of short steps measures past
            ``steps`` until this long.
    """
    setup_s = unrolled_cost(cell, impl)[1]
    steps_s = total_steps * step_flop(cell, impl) / CPU_FLOP_PER_S + min_measure_s
    return math.ceil(2 * (BASE_MINUTES + (setup_s + steps_s) / 60))
