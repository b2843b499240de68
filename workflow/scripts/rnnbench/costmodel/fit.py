"""A cost model of unrolling, fitted per implementation to fresh processes::

    step_s = fixed + per_passed * passed + per_computed * computed + per_flop * flop

Only the terms a grid identifies are kept. The method and its sources: docs/cost-model.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rnnbench.grid.flop import cell_step_flop, step_flop
from rnnbench.stats.intervals import groups_of

CONFIDENCE = 0.95
RICHER_ALPHA = 0.01
"""The partial F test's level for the richer form. Stricter than 0.05 because choosing a form
costs the intervals their coverage: at 0.05, 5 % of maps of a constant-throughput machine
chose it, and in those the per-FLOP interval held the true value about a third of the time
(tests/costmodel/test_costmodel.py's synthetic maps)."""
TERMS = ("fixed", "per_passed", "per_computed", "per_flop", "per_flop_log2_size")
"""The model's terms, in the order identified_terms admits them."""
GROUP_COLUMNS = ("api", "environment", "cell", "input_dim", "mode")
"""Runs fitted together (one fit per implementation): never pooled across environments
(load.environment), apis, cell types or modes."""
RANGE_AXES = ("batch_size", "max_len", "num_units", "computed")
"""The axes whose fitted range says whether a prediction extrapolates."""
ONE_MFLOP = 1e6


def passed_time_steps(impl: str, max_len: float, computed: float) -> float:
    """Return the time steps a training step of ``impl`` passes through.

    Sources: docs/cost-model.md, The model.

    Args:
        impl: 'static' or 'dynamic'.
        max_len: the padded length.
        computed: the computed time steps (the batch's longest sequence).

    Returns:
        max_len for static (its unrolled steps); else computed (the loop's iterations).
    """
    return float(max_len) if impl == "static" else float(computed)


def log2_size(runs: pd.DataFrame) -> np.ndarray:
    """Return log2 of the cell's FLOP per call in MFLOP (flop.cell_step_flop), per row.

    Args:
        runs: rows with cell, batch_size, input_dim, num_units.

    Returns:
        An array [rows].
    """
    return np.log2(np.array([cell_step_flop(c, b, i, u) for c, b, i, u in zip(
        runs["cell"], runs["batch_size"], runs["input_dim"], runs["num_units"])],
        dtype=float) / ONE_MFLOP)


def design(runs: pd.DataFrame, center: float = 0.0) -> pd.DataFrame:
    """Return the model's columns (TERMS) for some runs, one row per run, same index.

    The size term is centred on ``center`` so that per_flop is the cost per FLOP at the fitted
    runs' typical matmul, whether the size term is kept or not.

    Args:
        runs: rows with impl, max_len, cell, batch_size, input_dim, num_units, mode,
            ``computed`` (cell calls per step) and ``flop`` (FLOP per step).
        center: the size term's centre, log2 MFLOP per call (the fitted runs' mean).

    Returns:
        Columns fixed, per_passed, per_computed, per_flop, per_flop_log2_size.
    """
    return pd.DataFrame({
        "fixed": 1.0,
        "per_passed": [passed_time_steps(i, m, c) for i, m, c in zip(
            runs["impl"], runs["max_len"], runs["computed"])],
        "per_computed": runs["computed"].astype(float),
        "per_flop": runs["flop"].astype(float),
        "per_flop_log2_size": runs["flop"].astype(float) * (log2_size(runs) - center),
    }, index=runs.index)


def identified_terms(columns: pd.DataFrame, candidates=TERMS[:4],
                     cells: np.ndarray | None = None) -> list[str]:
    """Return the terms the grid identifies, among ``candidates``.

    A term is kept when its column raises the rank of those admitted before it (columns scaled
    to unit norm, a relative tolerance of 1e-9).

    Args:
        columns: design's columns, one row per run.
        candidates: the terms to try, in order.
        cells: each row's cell id, or None. With it, the rank is the cells' (each cell's mean
            row): a column that moves only between the runs of one cell (the computed steps of
            lengths drawn anew per batch) identifies nothing.

    Returns:
        The kept terms, in ``candidates``' order.
    """
    if cells is not None:
        columns = columns.groupby(cells, sort=False).mean()
    kept: list[str] = []
    for term in candidates:
        trial = columns[kept + [term]].to_numpy(dtype=float)
        trial = trial / np.maximum(np.linalg.norm(trial, axis=0), 1e-300)
        if np.linalg.matrix_rank(trial, tol=1e-9) == len(kept) + 1:
            kept.append(term)
    return kept


def runs_design(mine: pd.DataFrame) -> tuple[pd.DataFrame, float, np.ndarray]:
    """Return design's columns of one implementation's runs, centred on their mean size.

    Args:
        mine: one implementation's runs (model_rows).

    Returns:
        (columns, center, cells): design's columns, the centre (log2 MFLOP per call), and each
        run's cell id [runs].
    """
    center = float(log2_size(mine).mean())
    return design(mine, center), center, mine["cell_id"].to_numpy()


def cell_terms(mine: pd.DataFrame) -> list[str]:
    """The terms one implementation's runs (model_rows) identify, judged on their cells."""
    columns, _, cells = runs_design(mine)
    return identified_terms(columns, cells=cells)


def _wls(X: np.ndarray, y: np.ndarray, iterations: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """IRLS for a constant coefficient of variation: (beta, weights 1 / fitted^2). Starts
    from weights 1 / y^2; a non-positive fitted value keeps its observed weight."""
    weights = 1 / y ** 2
    beta = np.zeros(X.shape[1])
    for _ in range(iterations):
        root = np.sqrt(weights)
        new, *_ = np.linalg.lstsq(X * root[:, None], y * root, rcond=None)
        fitted = X @ new
        weights = np.where(fitted > 0, 1 / np.where(fitted > 0, fitted, 1) ** 2, 1 / y ** 2)
        if np.allclose(new, beta, rtol=1e-10, atol=0):
            break
        beta = new
    return new, weights


@dataclass
class Fit:
    """Hold one implementation's fitted model.

    Attributes:
        impl: 'static' or 'dynamic'.
        terms: the fitted terms (of TERMS).
        beta: the parameters [terms], seconds per unit of each column.
        cov: their covariance [terms, terms].
        sigma: the relative spread of one run about the model (its coefficient of variation).
        df: sigma's degrees of freedom.
        n: the runs fitted.
        cells: the cells fitted.
        ranges: the fitted (min, max) of each of RANGE_AXES.
        richer_p: the partial F test's p for the richer form (NaN where not tried).
        lack_of_fit_p: the lack-of-fit test's p (NaN without repeats).
        center: the size term's centre, log2 MFLOP per call.
        key: the group's GROUP_COLUMNS values.
    """
    impl: str
    terms: list[str]
    beta: np.ndarray
    cov: np.ndarray
    sigma: float
    df: int
    n: int
    cells: int
    ranges: dict
    richer_p: float = math.nan
    lack_of_fit_p: float = math.nan
    center: float = 0.0
    key: dict = field(default_factory=dict)

    def interval(self, term: str, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
        """Return a parameter (seconds per unit of its column) with its t-interval.

        Args:
            term: one of the fit's terms.
            confidence: the interval's two-sided level.

        Returns:
            (estimate, low, high).

        Raises:
            ValueError: for a term the fit does not have.
        """
        from rnnbench.stats.intervals import t_quantile

        i = self.terms.index(term)
        half = t_quantile(confidence, self.df) * math.sqrt(self.cov[i, i])
        return float(self.beta[i]), float(self.beta[i] - half), float(self.beta[i] + half)

    def predict(self, rows: pd.DataFrame, runs: int = 1,
                confidence: float = CONFIDENCE) -> pd.DataFrame:
        """Predict step seconds for ``rows``.

        Args:
            rows: rows with design's inputs (shape_rows, model_rows).
            runs: how many new runs the interval's geometric mean is of.
            confidence: the interval's two-sided level.

        Returns:
            Columns ``step_s`` (the fitted value), ``low`` and ``high`` (the interval, log-normal
            about step_s, never negative; NaN where the model predicts no positive time), and
            ``log_var`` (the variance of log step_s: the fit's and the runs' noise). Same index as
            ``rows``.
        """
        from rnnbench.stats.intervals import t_quantile

        X = design(rows.assign(impl=self.impl), self.center)[self.terms].to_numpy(dtype=float)
        fitted = X @ self.beta
        fit_var = np.einsum("ij,jk,ik->i", X, self.cov, X)
        with np.errstate(invalid="ignore", divide="ignore"):
            log_var = np.where(fitted > 0, fit_var / fitted ** 2, np.nan) + self.sigma ** 2 / runs
            half = t_quantile(confidence, self.df) * np.sqrt(log_var)
            positive = np.where(fitted > 0, fitted, np.nan)
        return pd.DataFrame({"step_s": fitted, "low": positive * np.exp(-half),
                             "high": positive * np.exp(half), "log_var": log_var},
                            index=rows.index)


def model_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """Add the design's inputs to some runs.

    Args:
        runs: measurements.csv rows.

    Returns:
        The runs with ``computed`` (time_steps_per_step) and ``flop`` (train_step_flop).
    """
    return runs.assign(computed=runs["time_steps_per_step"].astype(float),
                       flop=runs["train_step_flop"].astype(float))


def _ols_stats(X: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[float, int]:
    """Weighted residual sum of squares and its degrees of freedom."""
    beta, *_ = np.linalg.lstsq(X * np.sqrt(weights)[:, None], y * np.sqrt(weights), rcond=None)
    return float((weights * (y - X @ beta) ** 2).sum()), len(y) - X.shape[1]


def _lack_of_fit_p(X: np.ndarray, y: np.ndarray, weights: np.ndarray, cells: np.ndarray) -> float:
    """The lack-of-fit F test's p-value against the repeats' pure error (NaN without both)."""
    from scipy import special

    sse, df = _ols_stats(X, y, weights)
    pure = 0.0
    for mine_y, mine_weights in groups_of(cells, y, weights):
        mean = np.average(mine_y, weights=mine_weights)
        pure += float((mine_weights * (mine_y - mean) ** 2).sum())
    df_pure, df_lack = len(y) - len(np.unique(cells)), df - (len(y) - len(np.unique(cells)))
    if df_pure <= 0 or df_lack <= 0 or pure <= 0:
        return math.nan
    return float(special.fdtrc(df_lack, df_pure, ((sse - pure) / df_lack) / (pure / df_pure)))


def fit_impl(runs: pd.DataFrame, impl: str, terms: list[str] | None = None) -> Fit:
    """Fit ``impl``'s model to its runs, choosing the richer form where the F test asks.

    The method: docs/cost-model.md, The model and The fit.

    Args:
        runs: measurements.csv rows of one group (GROUP_COLUMNS alike, at their reference
            ablations).
        impl: 'static' or 'dynamic'.
        terms: fit these (those of them the runs identify) instead of choosing; None to choose.

    Returns:
        The Fit.

    Raises:
        ValueError: with no runs of ``impl``, or fewer runs than identified terms plus 2.
    """
    from scipy import special

    mine = model_rows(runs[runs["impl"] == impl])
    if mine.empty:
        raise ValueError(f"fit_impl: no runs of {impl}")
    columns, center, cells = runs_design(mine)
    y = mine["median_step_s"].to_numpy(dtype=float)
    richer_p = math.nan
    if terms is not None:
        terms = identified_terms(columns, terms, cells)
    elif "per_flop" in (terms := identified_terms(columns, cells=cells)):
        richer = identified_terms(columns, [*terms, "per_flop_log2_size"], cells)
        if len(richer) > len(terms) and len(y) > len(richer) + 1:
            X1 = columns[richer].to_numpy(dtype=float)
            _, weights = _wls(X1, y)
            sse1, df1 = _ols_stats(X1, y, weights)
            sse0, _ = _ols_stats(columns[terms].to_numpy(dtype=float), y, weights)
            richer_p = float(special.fdtrc(1, df1, (sse0 - sse1) / (sse1 / df1)))
            if richer_p < RICHER_ALPHA:
                terms = richer
    if len(y) < len(terms) + 2:
        raise ValueError(f"costmodel: {len(y)} {impl} runs for {len(terms)} terms: need "
                         f"{len(terms) + 2}")
    ranges = {axis: (float(mine[axis].min()), float(mine[axis].max())) for axis in RANGE_AXES}
    return Fit(impl=impl, terms=terms, n=len(y), cells=int(mine["cell_id"].nunique()),
               ranges=ranges, richer_p=richer_p, center=center,
               **weighted_fit(columns[terms].to_numpy(dtype=float), y, cells))


def weighted_fit(X: np.ndarray, y: np.ndarray, cells: np.ndarray) -> dict:
    """Fit ``y`` ~ ``X`` for a constant coefficient of variation (IRLS), with its statistics.

    The method: docs/cost-model.md, The fit.

    Args:
        X: the design [runs, terms].
        y: the measured seconds [runs].
        cells: each run's cell id [runs], for the lack-of-fit test's pure error.

    Returns:
        ``beta`` [terms], ``cov`` [terms, terms] (sigma^2 (X'WX)^-1), ``sigma`` (one run's
        relative spread), ``df`` (runs - terms) and ``lack_of_fit_p`` (NaN without repeats).
    """
    beta, weights = _wls(X, y)
    sse, df = _ols_stats(X, y, weights)
    sigma2 = sse / df
    cov = sigma2 * np.linalg.inv(X.T @ (X * weights[:, None]))
    return {"beta": beta, "cov": cov, "sigma": math.sqrt(sigma2), "df": df,
            "lack_of_fit_p": _lack_of_fit_p(X, y, weights, cells)}


def model_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Return the runs a model is fitted to.

    Args:
        runs: measurements.csv rows.

    Returns:
        The runs at their reference ablations (load.at_reference), that it can read
        (finite_runs), and not flagged ``busy`` (quiet_runs). Busy: other processes took over a
        tenth of the run's CPUs, or the hypervisor stole over 2 % of them (load._busy);
        FINDINGS counts those left out.
    """
    from rnnbench.results.load import at_reference

    plain = runs[at_reference(runs)] if "base_cell_id" in runs else runs
    return plain[finite_runs(plain) & quiet_runs(plain)]


def quiet_runs(runs: pd.DataFrame) -> pd.Series:
    """Which runs are not flagged ``busy`` (all of them where the runs record no flag)."""
    return ~runs["busy"].astype(bool) if "busy" in runs else pd.Series(True, index=runs.index)


def finite_runs(runs: pd.DataFrame) -> pd.Series:
    """Say which runs the model can read.

    Args:
        runs: rows with median_step_s, time_steps_per_step and train_step_flop.

    Returns:
        A boolean Series: a positive, finite median step and finite inputs (a NaN among them
        would fail the whole fit).
    """
    columns = runs[["median_step_s", "time_steps_per_step", "train_step_flop"]].apply(
        pd.to_numeric, errors="coerce")
    return np.isfinite(columns).all(axis=1) & (columns["median_step_s"] > 0)


def fit_groups(runs: pd.DataFrame) -> list[dict[str, Fit]]:
    """Fit both implementations in each group of GROUP_COLUMNS in ``runs``.

    Groups it cannot fit are left out (fit_impl's ValueError). So are those whose grid
    identifies no cost per time step: every cell computes as many time steps, and a fixed cost
    explains nothing.

    Args:
        runs: measurements.csv rows.

    Returns:
        One {impl: Fit} per group fitted, each Fit's ``key`` set to the group's values.
    """
    fits = []
    for key, group in model_runs(runs).groupby(list(GROUP_COLUMNS), sort=False):
        try:
            pair = {impl: fit_impl(group, impl) for impl in ("static", "dynamic")}
        except ValueError:
            continue
        if any(fit.terms == ["fixed"] for fit in pair.values()):
            continue
        for fit in pair.values():
            fit.key = dict(zip(GROUP_COLUMNS, key))
        fits.append(pair)
    return fits



def _number(value: float) -> float | None:
    """A float for JSON: None for NaN."""
    return None if value is None or math.isnan(value) else float(value)


def write_fits(fits: list[dict[str, Fit]], path: str | Path) -> None:
    """Write fit_groups' fits to a JSON file, so that every reader of a run uses one fit.

    Args:
        fits: fit_groups' list, one {impl: Fit} per group.
        path: the file (rule aggregate's ``results/costmodel.json``).
    """
    records = [{impl: {"impl": fit.impl, "terms": fit.terms, "beta": fit.beta.tolist(),
                       "cov": fit.cov.tolist(), "sigma": fit.sigma, "df": fit.df, "n": fit.n,
                       "cells": fit.cells, "ranges": fit.ranges,
                       "richer_p": _number(fit.richer_p),
                       "lack_of_fit_p": _number(fit.lack_of_fit_p), "center": fit.center,
                       "key": fit.key} for impl, fit in pair.items()} for pair in fits]
    Path(path).write_text(json.dumps({"fits": records}, indent=1) + "\n")


def read_fits(path: str | Path) -> list[dict[str, Fit]]:
    """Read the fits write_fits wrote, as fit_groups returned them.

    Args:
        path: the JSON file.

    Returns:
        One {impl: Fit} per group, in write order.

    Raises:
        ValueError: naming the file, where it is not write_fits' JSON.
    """
    try:
        records = json.loads(Path(path).read_text())["fits"]
        return [{impl: Fit(**{**record, "beta": np.array(record["beta"], dtype=float),
                              "cov": np.array(record["cov"], dtype=float),
                              "ranges": {k: tuple(v) for k, v in record["ranges"].items()},
                              "richer_p": _nan(record["richer_p"]),
                              "lack_of_fit_p": _nan(record["lack_of_fit_p"])})
                 for impl, record in pair.items()} for pair in records]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a cost model's fits ({error})") from None


def _nan(value: float | None) -> float:
    """write_fits' None back to NaN."""
    return math.nan if value is None else float(value)

def shape_rows(cell: str, batch_size: int, num_units: int, input_dim: int, max_len: int,
               length: float, mode: str = "train") -> pd.DataFrame:
    """Return one row of design's inputs for a shape.

    Args:
        cell: the cell type.
        batch_size: sequences per batch.
        num_units: the cell's units.
        input_dim: the input's width.
        max_len: the padded length.
        length: the batch's longest sequence, time steps (at most max_len).
        mode: 'train' or another mode of flop.step_flop.

    Returns:
        A one-row table with those columns, ``computed`` (= length) and ``flop``
        (flop.step_flop).

    Raises:
        ValueError: naming the value, for a length outside 1..max_len.
    """
    if not 1 <= length <= max_len:
        raise ValueError(f"length {length}: must lie in 1..max_len ({max_len})")
    return pd.DataFrame([{"cell": cell, "batch_size": batch_size, "num_units": num_units,
                          "input_dim": input_dim, "max_len": max_len, "mode": mode,
                          "computed": float(length),
                          "flop": step_flop(cell, batch_size, input_dim, num_units, length,
                                            mode)}])


def ratio_prediction(pair: dict[str, Fit], rows: pd.DataFrame, runs: int = 1,
                     confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Predict the static / dynamic step ratio for ``rows``, with its interval.

    The fits are independent, so their log variances add.

    Args:
        pair: the fits, {impl: Fit}.
        rows: rows with design's inputs.
        runs: how many new runs of each the geometric means are of.
        confidence: the interval's two-sided level.

    Returns:
        Columns ``ratio``, ``low``, ``high`` (NaN bounds where a side predicts no positive
        time); same index as ``rows``.
    """
    from rnnbench.stats.intervals import t_quantile

    static, dynamic = (pair[impl].predict(rows, runs, confidence) for impl in ("static",
                                                                             "dynamic"))
    ratio = static["step_s"] / dynamic["step_s"]
    df = min(pair["static"].df, pair["dynamic"].df)
    half = t_quantile(confidence, df) * np.sqrt(static["log_var"] + dynamic["log_var"])
    positive = ratio.where((static["step_s"] > 0) & (dynamic["step_s"] > 0))
    return pd.DataFrame({"ratio": ratio, "low": positive * np.exp(-half),
                         "high": positive * np.exp(half)}, index=rows.index)


def parts(fit: Fit, rows: pd.DataFrame) -> pd.DataFrame:
    """Each term's seconds in the predicted step of ``rows`` (one column per fitted term)."""
    X = design(rows.assign(impl=fit.impl), fit.center)[fit.terms]
    return X * fit.beta


def extrapolates(fit: Fit, rows: pd.DataFrame) -> list[str]:
    """The axes on which ``rows`` lie outside the fitted range, in words (empty: inside)."""
    out = []
    for axis in RANGE_AXES:
        low, high = fit.ranges[axis]
        values = rows[axis].astype(float)
        if (values < low).any() or (values > high).any():
            name = "length (the batch's longest)" if axis == "computed" else axis
            out.append(f"{name} {', '.join(f'{v:g}' for v in values)} outside the fitted "
                       f"{low:g}-{high:g}")
    return out
