"""The second look: after the planned repeats, more paired repeats where a cell's steady-state
step ratio is still undecided (checkpoint first_look; method: docs/method.md, More repeats)."""

from __future__ import annotations

import json
from pathlib import Path

from rnnbench.grid.plan import more_jobs
from rnnbench.results.load import load_results, share_runs
from rnnbench.stats.summary import summarize
from rnnbench.stats.tables import undecided_cells


def first_look(results: list[str], benchmarks: list[str], cells: dict[str, dict],
               protocol: dict, shared: dict[tuple[str, str], str],
               jobs: list[tuple[str, str, int]], repeats: int, margin: float,
               confidence: float) -> dict:
    """Which cells the planned repeats leave undecided, and the training jobs that add more.

    Args:
        results, benchmarks: the planned repeats' result JSONs and their benchmark files
            (load_results).
        cells, protocol: the grid's cells by id and the training protocol (load_results'
            checks).
        shared: (cell_id, impl) -> the cell whose runs it takes (cells.shared_runs).
        jobs: (cell_id, impl, repeat) of every job the workflow may run, planned and more.
        repeats: the planned repeats (config ``repeats``).
        margin: the practical margin (config ``margin``).
        confidence: each look's level (intervals.look_confidence).

    Returns:
        A JSON-ready dict: ``margin``, ``confidence``, ``undecided`` (cell ids), ``cells``
        ({cell_id: [ratio, low, high]} of every cell's step ratio) and ``jobs`` (the
        [cell_id, impl, repeat] that plan.more_jobs adds).

    Raises:
        ValueError: as load_results and summarize raise (a result that is not the grid's,
            runs from two environments or that overlap in time).
    """
    runs = share_runs(load_results(results, benchmarks, cells, protocol), shared)
    summary = summarize(runs, confidence=confidence)
    undecided = undecided_cells(summary, margin)
    step = ["ratio_median_step_s", "ratio_median_step_s_ci_low", "ratio_median_step_s_ci_high"]
    return {
        "margin": margin,
        "confidence": confidence,
        "undecided": undecided,
        "cells": {row[0]: [float(v) for v in row[1:]]
                  for row in summary[["cell_id", *step]].itertuples(index=False)},
        "jobs": [list(job) for job in more_jobs(jobs, cells, shared, undecided, repeats)],
    }


def looked_jobs(path: str | Path) -> list[tuple[str, str, int]]:
    """The training jobs a first look added, from its file (first_look's output).

    Args:
        path: checkpoint first_look's output (layout.first_look_path).

    Returns:
        (cell_id, impl, repeat) of each job, in the file's order.

    Raises:
        OSError, ValueError, KeyError: a missing, unreadable or foreign file.
    """
    return [tuple(job) for job in json.loads(Path(path).read_text())["jobs"]]
