"""How much of the drift between runs of one grid on one machine the machine's measures explain.

Each run's effect on an implementation's step is the mean, over the cells every run holds, of
the log of the cell's geometric mean step less that cell's mean over the runs. Each candidate
measure gives a run effect in the same units, with a coefficient of 1 (nothing is fitted):

- ``probe``: the model in the probe's units (machine.py) with the run's own probe (rule
  peak's), the map's coefficients;
- ``speed_python``: the log of the run's median Python speed check (ns per operation, taken
  at the start of each job);
- ``speed_matmul``: minus the log of its median matmul speed check (GFLOP/s).

The share a measure explains is 1 - sum((effect - its effect)^2) / sum(effect^2) over the runs
(below 0: it predicts moves the runs did not make). Its spread comes from resampling each
run-cell's repeats (jobs) with their speed checks; the probes are held as measured. A drift
within the repeats' own noise gets no share. Method: docs/cost-model.md, Drift between runs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

MEASURES = ("probe", "speed_python", "speed_matmul")
"""The candidate explanations of a run's drift, in the order they are reported."""
RESAMPLES = 2000
"""Bootstrap resamples of the repeats behind a share's spread."""
PERCENTILES = (0.5, 99.5)
"""The resampled shares' percentiles that bound a share's spread. It is not a confidence
interval: over simulated sets of runs whose drift is clearly above the repeats' noise it held
the share of the true run effects 91-99 % of the time, but 67-88 % where the drift is near
twice the noise (tests/costmodel/test_drift.py; docs/cost-model.md, Drift between runs)."""
NOISE_MULTIPLE = 2.0
"""A drift under this many times the repeats' noise alone (noise_sd) gets no share: the noise
then inflates the runs' effects and biases any share, which no resampling corrects."""


def _column(runs: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column of ``runs``; NaN throughout where they lack it (results written before
    the speed checks)."""
    return (runs[name].astype(float) if name in runs
            else pd.Series(math.nan, index=runs.index))


def cell_steps(runs: list[pd.DataFrame], probes: list[dict], fits: dict,
               counts: pd.DataFrame) -> pd.DataFrame:
    """Each run's jobs of the modelled cells every run holds, with the probe's step beside.

    Args:
        runs: each run's measurements.csv rows (one machine, one grid).
        probes: each run's probe, in the same order.
        fits: machine.fit_machine's fits (the map's coefficients).
        counts: the graph counts table (machine.read_counts).

    Returns:
        One row per job: run (0-based), cell_id, impl, log_step (log median_step_s),
        speed_python (log ns), speed_matmul (minus log GFLOP/s; both NaN where the runs
        lack their speed checks), log_probe (log of the
        model's step for the cell with the run's probe).

    Raises:
        ValueError: with fewer than two runs, or no modelled cell common to all with runs of
            each implementation.
    """
    from rnnbench.costmodel.fit import model_rows, model_runs
    from rnnbench.costmodel.machine import step_columns

    if len(runs) < 2 or len(runs) != len(probes):
        raise ValueError(f"need two runs or more, each with its probe ({len(runs)} runs, "
                         f"{len(probes)} probes)")
    known = set(counts["cell"])
    kept = [model_runs(r[(r["api"] == "compat_v1") & r["cell"].isin(known)]) for r in runs]
    common = set.intersection(*(set(zip(k["cell_id"], k["impl"])) for k in kept))
    lacking = [impl for impl in ("static", "dynamic") if impl not in {i for _, i in common}]
    if lacking:
        raise ValueError(f"no modelled compat_v1 cell (with graph counts, at its "
                         f"reference ablations, not busy) with {lacking[0]} runs that every "
                         "run holds")
    rows = []
    for number, (mine, probe) in enumerate(zip(kept, probes)):
        mine = model_rows(mine[[key in common for key in zip(mine["cell_id"], mine["impl"])]])
        shape = mine.drop_duplicates(["cell_id", "impl"])
        model = pd.concat([fits["step"][impl].predict(step_columns(one, probe, counts))
                           ["seconds"] for impl, one in shape.groupby("impl")])
        predicted = dict(zip(zip(shape["cell_id"], shape["impl"]), np.log(model[shape.index])))
        rows.append(pd.DataFrame({
            "run": number, "cell_id": mine["cell_id"], "impl": mine["impl"],
            "log_step": np.log(mine["median_step_s"].astype(float)),
            "speed_python": np.log(_column(mine, "speed_python_ns")),
            "speed_matmul": -np.log(_column(mine, "speed_matmul_gflop_s")),
            "log_probe": [predicted[key] for key in zip(mine["cell_id"], mine["impl"])]}))
    return pd.concat(rows, ignore_index=True)


def _per_cell(jobs: pd.DataFrame, rng: np.random.Generator | None = None,
              resamples: int = 1) -> dict[str, np.ndarray]:
    """Each run-cell's value of the step and of each measure, [resamples, runs, cells].

    Args:
        jobs: cell_steps' rows of one implementation, every run holding every cell.
        rng: where given, each run-cell's jobs are drawn again with replacement
            (``resamples`` times); None: the jobs as measured (one draw).
        resamples: the draws.

    Returns:
        {"step": mean log step, "speed_python" and "speed_matmul": the median speed check,
        "probe": the probe's log step}, each [resamples, runs, cells].
    """
    runs, cells = sorted(set(jobs["run"])), sorted(set(jobs["cell_id"]))
    out = {name: np.empty((resamples, len(runs), len(cells))) for name in ("step", *MEASURES)}
    for (run, cell_id), group in jobs.groupby(["run", "cell_id"]):
        at = (slice(None), runs.index(run), cells.index(cell_id))
        picked = (np.arange(len(group))[None, :] if rng is None
                  else rng.integers(0, len(group), (resamples, len(group))))
        out["step"][at] = group["log_step"].to_numpy(float)[picked].mean(axis=1)
        for name in ("speed_python", "speed_matmul"):
            out[name][at] = np.median(group[name].to_numpy(float)[picked], axis=1)
        out["probe"][at] = group["log_probe"].iloc[0]
    return out


def run_effects(per_cell: np.ndarray) -> np.ndarray:
    """Return each run's effect: [..., runs, cells] less each cell's mean over the runs,
    averaged over the cells: [..., runs]."""
    return (per_cell - per_cell.mean(axis=-2, keepdims=True)).mean(axis=-1)


def explained(step: np.ndarray, measure: np.ndarray) -> np.ndarray:
    """Return the share of the runs' drift that a measure explains, over the last axis.

    Args:
        step: the runs' effects on the step [..., runs] (log units).
        measure: the measure's effects, the same shape.

    Returns:
        1 - sum((step - measure)^2) / sum(step^2) [...]; NaN where the steps did not move.
    """
    total = (step ** 2).sum(axis=-1)
    missed = ((step - measure) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, 1 - missed / np.where(total > 0, total, 1), np.nan)


def effects_table(jobs: pd.DataFrame, impl: str = "dynamic") -> pd.DataFrame:
    """Return each run's effect on ``impl``'s step and each measure's (run_effects).

    Args:
        jobs: cell_steps' rows.
        impl: "static" or "dynamic".

    Returns:
        One row per run ("run 1", ...): ``step`` and MEASURES, each as a relative change
        (exp(effect) - 1: +0.05 is 5 % slower than the runs' mean).
    """
    mine = jobs[jobs["impl"] == impl]
    effects = {name: np.expm1(run_effects(value)[0])
               for name, value in _per_cell(mine).items()}
    return pd.DataFrame({"run": [f"run {n}" for n in range(1, len(effects["step"]) + 1)],
                         **effects})


def drift_table(jobs: pd.DataFrame, impl: str = "dynamic", seed: int = 0) -> pd.DataFrame:
    """Say how much of the between-run drift of ``impl``'s step each measure explains.

    Args:
        jobs: cell_steps' rows.
        impl: "static" or "dynamic".
        seed: the resampling's seed.

    Returns:
        One row per measure: ``drift_sd`` (the standard deviation of the runs' effects on
        the step, log units: about the relative drift); ``noise_sd`` (what the repeats'
        noise alone would give it: the resampled effects' variance, times runs / (runs - 1)
        for the centring); ``share`` (explained) with its spread ``share_low`` and
        ``share_high`` (PERCENTILES of the resampled shares), all three NaN where the drift
        is under NOISE_MULTIPLE times the noise; ``runs`` and ``cells``.
    """
    mine = jobs[jobs["impl"] == impl]
    point = {name: np.log1p(value.to_numpy(float)) for name, value in
             effects_table(jobs, impl).drop(columns="run").items()}
    again = {name: run_effects(value) for name, value in
             _per_cell(mine, np.random.default_rng(seed), RESAMPLES).items()}
    runs = again["step"].shape[-1]
    noise = float(np.sqrt(again["step"].var(axis=0).mean() * runs / (runs - 1)))
    moved = float(np.std(point["step"], ddof=1))
    rows = []
    for measure in MEASURES:
        draws = explained(again["step"], again[measure])
        share, low, high = (
            (float(explained(point["step"], point[measure])),
             *np.nanpercentile(draws, PERCENTILES))
            if moved >= NOISE_MULTIPLE * noise and np.isfinite(draws).any()
            else (math.nan,) * 3)
        rows.append({"measure": measure, "drift_sd": moved, "noise_sd": noise,
                     "share": share, "share_low": float(low), "share_high": float(high),
                     "runs": len(point["step"]), "cells": mine["cell_id"].nunique()})
    return pd.DataFrame(rows)


def probe_explained(fits: dict, runs: tuple[pd.DataFrame, pd.DataFrame],
                    probes: tuple[dict, dict], counts: pd.DataFrame | None = None
                    ) -> pd.DataFrame:
    """Compare the drift of each cell's step between two runs with what their probes predict.

    Args:
        fits: machine.fit_machine's fits (the coefficients are the map's; only their ratio
            between the two probes matters).
        runs: the two runs' measurements.csv rows.
        probes: each run's probe (rule peak's), in the same order.
        counts: the graph counts table (default: machine.read_counts()).

    Returns:
        One row per (cell_id, impl) of cell_steps' cells: ``measured`` (the second run's
        geometric mean step over the first's) and ``predicted`` (the model's step with the
        second probe over with the first).

    Raises:
        ValueError: where the runs share no modelled cell (cell_steps).
    """
    from rnnbench.costmodel.machine import read_counts

    jobs = cell_steps(list(runs), list(probes), fits,
                      read_counts() if counts is None else counts)
    means = jobs.groupby(["cell_id", "impl", "run"])[["log_step", "log_probe"]].mean()
    change = means.xs(1, level="run") - means.xs(0, level="run")
    return pd.DataFrame({"measured": np.exp(change["log_step"]),
                         "predicted": np.exp(change["log_probe"])}).reset_index()


def explained_share(table: pd.DataFrame) -> float:
    """Return the share of two runs' drift (the sum of squared log changes) that the probes'
    predicted changes account for: explained's form on probe_explained's table."""
    return float(explained(np.log(table["measured"].to_numpy(float)),
                           np.log(table["predicted"].to_numpy(float))))
