"""How long a grid will take on this machine, said before any job.

A training job's wall time is start + setup + (1 + warm-up + measured steps) x step, per api.
The constants come from the calibration run; for the jobs the model in the probe's units
describes (probe_seconds), setup and step are that model's. Where this machine has measured
jobs before (a measurements.csv with ``job_wall_s``), the model is scaled by their median
measured / modelled time (machine_factor). The rest of a run adds OTHER_JOB_S per job. An
estimate, not a bound: the jobs' bounds are rnnbench.grid.resources'. The model in full:
docs/running.md, after "How long, before it starts".
"""

from __future__ import annotations

import csv
import json
import math
import socket
import statistics
import time
from pathlib import Path
from typing import Iterable

from rnnbench.grid import resources
from rnnbench.grid import flop
from rnnbench.grid.apis import APIS, api_of
from rnnbench.grid.axes import (ABLATION_DEFAULTS, sequence_length_bounds, sequence_length_spec,
                                value_of)

FIXED_STEP_S = 0.5e-3
"""Seconds per training step whatever its length (compat_v1's sequence_length 2 cell: 0.95 ms
for 2 time steps)."""
FLOP_PER_S = 40e9
"""float32 FLOP/s of a large step here (case-batch-trend: batch 8 to 256 add 49 GFLOP/s)."""
OTHER_JOB_S = {"snakemake": 8.0, "dataset": 3.0, "peak": 25.0, "aggregate": 8.0, "chart": 4.0,
               "findings": 5.0}
"""Seconds of the rest of a run: Snakemake's start, and each non-training job (peak: the
matmul peak and the probe, 8 to 30 s on the 2-core VMs of the development)."""
PLAN = "rnnbench-plan.json"
"""A run's plan (write_plan), in its Snakemake folder (``.snakemake``): what another run's
estimate reads while this one holds the measuring lock."""
WARN_S = 3600.0
"""A grid expected to take longer than this (seconds) is warned about."""


def step_seconds(cell: dict, impl: str) -> float:
    """Model the seconds of one training step of ``impl`` in ``cell``.

    A step is FIXED_STEP_S + computed time steps x the api's per_time_step_s + step FLOP /
    FLOP_PER_S.

    Args:
        cell: the grid cell (cells.cells' values).
        impl: "static" or "dynamic".

    Returns:
        Seconds.
    """
    _, longest = sequence_length_bounds(cell["sequence_length"], cell["max_len"])
    steps = flop.computed_time_steps(cell, impl, longest)
    return (FIXED_STEP_S + steps * api_of(cell).per_time_step_s
            + resources.step_flop(cell, impl) / FLOP_PER_S)


def setup_seconds(cell: dict, impl: str) -> float:
    """Model the setup seconds (graph, tracing or compilation, first step) of ``impl``.

    Args:
        cell: the grid cell (cells.cells' values).
        impl: "static" or "dynamic".

    Returns:
        Seconds: the api's setup_s (fixed, and per unrolled step), plus the compiled apis'
        cost (resources.compiled_cost).
    """
    fixed, per_step = api_of(cell).setup_s
    return (fixed + per_step * resources.unrolled_steps(cell, impl)
            + resources.compiled_cost(cell, impl)[1])


def job_seconds(cell: dict, impl: str, protocol: dict, steps_run: float | None = None,
                modelled: tuple[float, float] | None = None) -> float:
    """Modelled wall seconds of one training job.

    Args:
        cell: the grid cell (cells.cells' values).
        impl: "static" or "dynamic".
        protocol: steps, min_measure_s (s), warmup_steps, max_warmup_steps, grappler_alone.
        steps_run: the steps the job ran, where known (a measured job: warm-up + measured);
            else from the protocol: the measured steps (steps, or more until min_measure_s)
            and a warm-up of twice warmup_steps, at most max_warmup_steps.
        modelled: (step, setup) seconds from the model in the probe's units (probe_seconds)
            where it describes the job; None: step_seconds and setup_seconds.

    Returns:
        Seconds: start + setup (twice for compat_v1 with grappler_alone) + (1 + steps_run)
        x step.
    """
    step, setup = modelled or (step_seconds(cell, impl), setup_seconds(cell, impl))
    if steps_run is None:
        measured = max(protocol["steps"], protocol.get("min_measure_s", 0.0) / step)
        steps_run = measured + min(2 * protocol["warmup_steps"], protocol["max_warmup_steps"])
    if protocol.get("grappler_alone") and value_of(cell, "api") == "compat_v1":
        setup *= 2  # Grappler timed again, alone, after the measurement
    return api_of(cell).start_s + setup + (1 + steps_run) * step


def probe_seconds(cells: dict[str, dict], peaks: Iterable[str | Path] = ()
                  ) -> tuple[dict[tuple[str, str], tuple[float, float]], str]:
    """The expected step and setup of each job the model in the probe's units describes.

    The model (rnnbench.costmodel.machine: the graph's counts times the probe's unit costs,
    the committed map's coefficients) describes compat_v1 cells of a counted cell type and
    mode at their reference ablations (machine.check_modelled); the rest keep step_seconds
    and setup_seconds. Its setup law is the graph's nodes times the probe's cost per node.

    Args:
        cells: {cell_id: cell} (cells.cells' values, or _cell_of's).
        peaks: rule peak's outputs of this run: the first that holds a probe (an earlier
            run's in this folder) is this machine's; without one, the map's own probe.

    Returns:
        ({(cell_id, impl): (step seconds, setup seconds)}, where the probe is from, in words).
    """
    import pandas as pd  # the model's: only where a run has jobs to estimate

    from rnnbench.costmodel import machine

    probe, source = None, "the map's VM's probe"
    for path in peaks:
        try:
            probe = machine.read_probe(path, optional=True)
        except ValueError:  # no readable probe: an older or a damaged record
            continue
        if probe is not None:
            source = f"this machine's probe ({path})"
            break
    probe = probe or machine.read_probe(machine.MAP_FITS.with_name("probe.json"))
    counts = machine.read_counts()
    counted = set(zip(counts["cell"], counts["mode"]))
    rows = []
    for cell_id, cell in cells.items():
        try:
            machine.check_modelled(cell_id, cell)
        except ValueError:
            continue
        if (cell["cell"], value_of(cell, "mode")) in counted:
            rows.append({"cell_id": cell_id, "cell": cell["cell"], "mode": value_of(cell, "mode"),
                         **{axis: cell[axis] for axis in ("batch_size", "num_units",
                                                          "input_dim", "max_len")},
                         "computed": float(sequence_length_bounds(
                             cell["sequence_length"], cell["max_len"])[1])})
    if not rows:
        return {}, source
    table = pd.DataFrame(rows)
    out = machine.predict_machine(machine.read_machine_fits(machine.MAP_FITS), table, probe,
                                  counts, runs=math.inf)
    found = {}
    for impl in ("static", "dynamic"):
        step, setup = (out[f"{part}_{impl}"]["seconds"].to_numpy(float)
                       for part in ("step", "setup"))
        found.update({(cell_id, impl): (float(a), float(b))
                      for cell_id, a, b in zip(table["cell_id"], step, setup)})
    return found, source


def local_probes(peaks: Iterable[str | Path], results: str | Path = "results") -> list[Path]:
    """Where this folder may hold this machine's probe, in the order probe_seconds reads them.

    Args:
        peaks: rule peak's outputs of this run (an earlier run of this grid left them).
        results: the results folder: rule peak's records of other grids' runs there, newest
            first, at one intra-op thread (the training jobs'), then ``rnnbench probe``'s
            default record (``probe.json``).

    Returns:
        The paths, existing or not.
    """
    others = sorted(Path(results).glob("runs/*/peak_intra1_*.json"),
                    key=lambda path: path.stat().st_mtime, reverse=True)
    return [*map(Path, peaks), *others, Path(results) / "probe.json"]


def _cell_of(row: dict) -> dict:
    """The cell a measurements.csv row (as csv.DictReader reads it: text) was measured in, as
    far as the model reads it."""
    cell = {key: value for key, value in row.items() if value not in ("", None)}
    for axis in ("batch_size", "max_len", "num_units", "input_dim"):
        cell[axis] = int(float(cell[axis]))
    cell["sequence_length"] = sequence_length_spec(cell["sequence_length"])
    for axis, default in ABLATION_DEFAULTS.items():  # each as the config gives it
        text = cell.get(axis)
        if isinstance(text, str) and isinstance(default, bool):
            cell[axis] = text == "True"
        elif isinstance(text, str):
            try:
                number = float(text)
            except ValueError:  # a word: max_len, batch_max, on, loss, ...
                continue
            cell[axis] = int(number) if number.is_integer() else number
    return cell


def machine_factors(rows: list[dict], modelled: dict | None = None
                    ) -> dict[str | None, tuple[float, int]]:
    """Compute this machine's measured / modelled job time, over all jobs and per api.

    The model's constants fit the apis unevenly: on the reference machine 0.78 for compat_v1's
    jobs, 0.53 for the Keras and JAX apis'.

    Args:
        rows: measurements.csv rows of this host, as csv.DictReader reads them (text), with
            job_wall_s, n_steps, warmup_steps_run and the cell's axes. Rows without
            job_wall_s or with an unknown api are skipped.
        modelled: probe_seconds' answer for the rows' cells, which job_seconds reads for
            the jobs it describes; None for none.

    Returns:
        (median ratio, jobs it is read from), over all jobs (key None) and over each api's
        (key: the api). Keys without jobs are left out.
    """
    ratios: dict[str | None, list[float]] = {None: []}
    for row in rows:
        if not row.get("job_wall_s") or row.get("api") not in APIS:
            continue
        steps_run = float(row["n_steps"]) + float(row["warmup_steps_run"] or 0)
        expected = job_seconds(_cell_of(row), row["impl"], {"grappler_alone": False},
                               steps_run, (modelled or {}).get((row.get("cell_id"), row["impl"])))
        ratio = float(row["job_wall_s"]) / expected
        ratios[None].append(ratio)
        ratios.setdefault(row["api"], []).append(ratio)
    return {key: (statistics.median(found), len(found)) for key, found in ratios.items()
            if found}


def machine_factor(rows: list[dict], api: str | None = None) -> tuple[float, int]:
    """Give machine_factors' (median ratio, jobs) over all jobs, or over one api's.

    Args:
        rows: measurements.csv rows of this host (machine_factors).
        api: the api whose jobs alone count; None for all.

    Returns:
        (median ratio, jobs); (1.0, 0) where there are none.
    """
    return machine_factors(rows).get(api, (1.0, 0))


def other_seconds(others: dict[str, int]) -> float:
    """Model the wall seconds of a run beside its training jobs.

    Args:
        others: kind of job (a key of OTHER_JOB_S) -> count.

    Returns:
        Seconds: Snakemake's start plus OTHER_JOB_S per job.
    """
    return OTHER_JOB_S["snakemake"] + sum(OTHER_JOB_S[kind] * count
                                          for kind, count in others.items())


def say(seconds: float, jobs: int, factor: float, measured: int,
        more: tuple[float, int] = (0.0, 0), probed: tuple[int, str] = (0, "")) -> str:
    """Write the line a run and a dry run print before any job.

    Args:
        seconds, jobs: the modelled wall seconds of the run and its training jobs' count.
        factor, measured: machine_factor's scale and the earlier jobs it is measured over.
        more: (seconds, jobs) of the most training jobs a second look may add (config
            ``more_repeats``; rnnbench.pipeline.looks), stated as a cap; (0, 0) for none.
        probed: (how many of the ``jobs`` the model in the probe's units describes, where
            its probe is from: scaled_job_seconds').

    Returns:
        "time: about N min for ...", in whole minutes (at least 1); with a warning where
        ``seconds`` + ``more``'s exceed WARN_S.
    """
    model = ("the model of rnnbench/pipeline/estimate.py" if not probed[0] else
             f"the model in the probe's units with {probed[1]}" if probed[0] >= jobs else
             f"the model in the probe's units with {probed[1]} for {probed[0]} of the jobs, "
             "rnnbench/pipeline/estimate.py's for the rest")
    source = (f"{model}, scaled by {factor:.2f}, this machine's measured / modelled time over "
              f"{measured} earlier jobs (per api where it has some)" if measured else
              f"{model}, calibrated on 2-core Xeon VMs (machines differ up to 3x)")
    minutes = max(1, math.ceil(seconds / 60))
    line = (f"time: about {minutes} min for the {jobs} training job{'' if jobs == 1 else 's'} "
            f"to run and the rest ({source})" if jobs else
            f"time: about {minutes} min: no training job to run, the rest ({source})")
    if more[1]:
        line += (f"; then at most {more[1]} more training jobs, about "
                 f"{max(1, math.ceil(more[0] / 60))} min, where a cell's step ratio is still "
                 "undecided (more_repeats)")
    if seconds + more[0] > WARN_S:
        line += (f"; WARNING: over {WARN_S / 3600:.0f} hour: a smaller grid, fewer repeats, or a "
                 "cluster profile (profiles/slurm) may serve better")
    return line


def run_line(cells: dict[str, dict], pending: list[tuple[str, str]], config: dict,
             others: dict[str, int], measurements: str, hostname: str,
             more: list[tuple[str, str]] = (), holder: dict | None = None,
             scaled: tuple | None = None) -> str | None:
    """Write what a run (or a dry run) prints before any job (say).

    Args:
        cells: the grid's cells by id.
        pending: (cell_id, impl) of each training job whose result is missing.
        config: the workflow's config (the protocol job_seconds reads).
        others: kind -> count of the other jobs (other_seconds).
        measurements: a measurements.csv path. Where it exists, its rows of ``hostname``
            scale the model (scaled_job_seconds). An unreadable or older table is ignored.
        hostname: this machine's host name.
        more: (cell_id, impl) of the jobs a second look may add, stated as a cap.
        holder: exclusive.lock_holder's record where another process holds the measuring
            lock now: the line then says who (lock_words); None otherwise.
        scaled: scaled_job_seconds' answer for ``pending`` and ``more``, where the caller
            has it already; None works it out here.

    Returns:
        The line; None when nothing is to run.
    """
    if not pending and not any(others.values()):
        return None
    per_job, factor, measured, probed = scaled or scaled_job_seconds(
        cells, {*pending, *more}, config, measurements, hostname)
    training = sum(per_job[job] for job in pending)
    seconds = training + other_seconds(others)
    line = say(seconds, len(pending), factor, measured,
               (sum(per_job[job] for job in more), len(more)),
               (sum(job in probed[0] for job in pending), probed[1]))
    if holder:
        words, theirs = lock_words(holder, time.time())
        line += "; " + words
        if theirs is not None:
            line += (f", so about {max(1, math.ceil((seconds + theirs) / 60))} min in all "
                     "for this run")
    return line


def scaled_job_seconds(cells: dict[str, dict], jobs: Iterable[tuple[str, str]], config: dict,
                       measurements: str, hostname: str, peaks: Iterable[str | Path] = ()
                       ) -> tuple[dict[tuple[str, str], float], float, int, tuple[int, str]]:
    """The modelled seconds of each training job, scaled by this machine's earlier jobs.

    Args:
        cells: the grid's cells by id.
        jobs: (cell_id, impl) pairs.
        config: the validated config (its protocol).
        measurements: a measurements.csv; its rows of ``hostname`` scale the model
            (machine_factors), each api by its own jobs where it has some, else by all.
        hostname: this machine's name.
        peaks: rule peak's outputs of this run, where an earlier run's probe may be
            (probe_seconds).

    Returns:
        ({(cell_id, impl): seconds}, the factor over all jobs, the jobs it is read from,
        (the (cell_id, impl) of ``jobs`` the model in the probe's units describes, its
        probe's source)).
    """
    jobs, rows = set(jobs), []
    if Path(measurements).is_file():
        try:
            with open(measurements, newline="") as handle:
                rows = [row for row in csv.DictReader(handle) if row.get("hostname") == hostname]
            measured_cells = {row["cell_id"]: _cell_of(row) for row in rows}
        except (ValueError, KeyError, OSError):  # an older or damaged table: the model alone
            rows, measured_cells = [], {}
    else:
        measured_cells = {}
    wanted = {**measured_cells, **{cell_id: cells[cell_id] for cell_id, _ in jobs}}
    modelled, source = probe_seconds(wanted, peaks) if wanted else ({}, "")
    try:
        factors = machine_factors(rows, modelled)
    except (ValueError, KeyError):  # an older or damaged table: the model alone
        factors = {}
    factor, measured = factors.get(None, (1.0, 0))
    per_job = {job: job_seconds(cells[job[0]], job[1], config, modelled=modelled.get(job))
               * factors.get(value_of(cells[job[0]], "api"), (factor, 0))[0]
               for job in jobs}
    return per_job, factor, measured, (set(modelled) & jobs, source)


def write_plan(folder: str | Path, seconds: dict[str, float], more: tuple[float, int],
               pid: int, now: float) -> Path:
    """Write a run's plan, which another run's estimate reads while this one holds the lock.

    Args:
        folder: the run's Snakemake folder (``.snakemake``); the plan is its PLAN file.
        seconds: {result path (relative to the run's folder): modelled seconds} of each
            training job still to run.
        more: (seconds, jobs) of the most training jobs a second look may add.
        pid: the run's Snakemake (the main process).
        now: the Unix time (seconds) the plan is made.

    Returns:
        The plan's path.
    """
    path = Path(folder) / PLAN
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"snakemake_pid": pid, "host": socket.gethostname(),
                                "written_s": now, "jobs": seconds,
                                "more": {"seconds": more[0], "jobs": more[1]}}))
    return path


def remaining(holder: dict) -> tuple[float, int, int, dict] | None:
    """What the plan of the lock holder's run (write_plan) says is left of it.

    Args:
        holder: exclusive.lock_holder's record (``folder``, ``snakemake_pid``, ``host``).

    Returns:
        (modelled seconds of its jobs whose result is still missing, those jobs, its planned
        jobs, its plan's ``more``); None where its run wrote no plan, or the plan is another
        Snakemake's (an earlier run in the same folder).
    """
    if not holder.get("folder") or holder.get("snakemake_pid") is None:
        return None
    try:
        plan = json.loads((Path(holder["folder"]) / ".snakemake" / PLAN).read_text())
        if (plan["snakemake_pid"], plan["host"]) != (holder["snakemake_pid"],
                                                    holder.get("host")):
            return None
        left = {result: float(s) for result, s in plan["jobs"].items()
                if not (Path(holder["folder"]) / result).exists()}
        return sum(left.values()), len(left), len(plan["jobs"]), plan.get("more") or {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _ago(seconds: float) -> str:
    """'40 s', '3 min' or '2.5 h': how long ago, in words."""
    if seconds < 90:
        return f"{max(0, round(seconds))} s"
    return f"{round(seconds / 60)} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def lock_words(holder: dict, now: float) -> tuple[str, float | None]:
    """Say who holds the measuring lock now, since when, and what is known of its run's rest.

    Args:
        holder: exclusive.lock_holder's record: ``lock``, ``pid``, ``folder``; and, where the
            holder wrote them, ``since_s`` (its job's hold) and ``run_since_s`` (its run's).
        now: the Unix time (seconds).

    Returns:
        (the words, the modelled seconds left of the holder's run by its own plan, or None
        where not known: remaining).
    """
    where = f"pid {holder['pid']}, in {holder.get('folder') or 'a folder hidden from this user'}"
    if isinstance(holder.get("run_since_s"), (int, float)):
        words = (f"the measuring lock {holder['lock']} is held now by another run ({where}), "
                 f"measuring for {_ago(now - holder['run_since_s'])} (its current job for "
                 f"{_ago(now - holder['since_s'])})")
    else:  # a process that wrote no record: an older workflow's job, or no workflow's
        words = (f"the measuring lock {holder['lock']} is held now by a process that wrote no "
                 f"record of its run ({where}; an older workflow's job, or another program)")
    words += ", and this run's measuring jobs wait for each of its jobs"
    left = remaining(holder)
    if left is None:
        return words + ("; how long it will go on is not known here (it wrote no plan this "
                        "run can read)"), None
    seconds, jobs, planned, more = left
    words += (f"; its plan has {jobs} of {planned} training jobs left, about "
              f"{max(1, math.ceil(seconds / 60))} min by its own estimate")
    if more.get("jobs"):
        words += f" (and at most {more['jobs']} more where its first look asks)"
    return words, seconds
