"""The cost model in the probe's units: a graph's counts times the machine's unit costs.

One training step of each implementation is predicted as::

    step_s = a_fixed * fixed_s + a_steps * steps_s + a_matmul * matmul_s

where each column is seconds on the probed machine (measure/probe.py's unit costs times the
graph's counts, measure/graphcounts.py's table), and the coefficients are dimensionless,
fitted per implementation on a map of runs beside its own probe. A coefficient of 1 says the
probe's unit cost is what the graph pays; the fit says how far each is. Setup is
``a_setup * graph nodes * (construction + Session setup per node)``. Method and sources:
docs/cost-model.md, The model in the probe's units.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rnnbench.costmodel.fit import CONFIDENCE, weighted_fit
from rnnbench.grid.axes import ABLATION_DEFAULTS
from rnnbench.grid.flop import FORWARD_PASSES, cell_step_flop
from rnnbench.grid.layout import REPO

MAP_FITS = REPO / "docs" / "figures" / "probe-map" / "machine.json"
"""The committed coefficients, fitted to the map run beside its probe (rnnbench reference
--run probe-map)."""
COUNTS = Path(__file__).with_name("graph_counts.csv")
"""The committed counts table (rnnbench counts writes it; tests/measure/test_graphcounts.py
holds it to TensorFlow)."""
RANGE_AXES = ("batch_size", "num_units", "input_dim", "max_len", "computed")
"""The axes whose fitted range a prediction is held to (predict's far-off refusal)."""
STEP_TERMS = ("fixed_s", "computed_s", "skipped_s", "matmul_s")
"""The step's columns: the fixed nodes, the time steps' nodes, conds and loop iterations, and
the matmuls, each in seconds at the probe's unit costs."""


def read_counts(path: str | Path = COUNTS) -> pd.DataFrame:
    """Read the graph counts table (graphcounts.COLUMNS and tf_version), one row per (cell,
    impl, mode)."""
    return pd.read_csv(path)


def counts_of(counts: pd.DataFrame, cell: str, impl: str, mode: str = "train") -> pd.Series:
    """Return one row of the counts table.

    Raises:
        ValueError: naming the cell and mode, where the table has no such row.
    """
    row = counts[(counts["cell"] == cell) & (counts["impl"] == impl) & (counts["mode"] == mode)]
    if row.empty:
        raise ValueError(f"cell {cell!r} in mode {mode!r}: no graph counts (counted: "
                         f"{', '.join(sorted(counts['cell'].unique()))})")
    return row.iloc[0]


def unit_costs(probe: dict) -> dict[str, float]:
    """Return the unit costs the columns use, from a probe (measure.probe.probe's dict).

    Args:
        probe: with ``unit_costs`` (seconds).

    Returns:
        Seconds: ``op_s`` (one op unrolled: an op pair's cost over its nodes), ``loop_op_s``
        (one op inside a while_loop), ``iteration_s`` (a loop iteration), ``cond_s`` (a cond
        that copies through), and ``setup_per_node_s`` (graph construction and Session setup
        per node).

    Raises:
        ValueError: where a unit cost is missing or not above 0 (the probe did not resolve it).
    """
    costs = probe["unit_costs"]
    out = {"op_s": costs["op_pair_s"] / costs["op_pair_nodes"],
           "loop_op_s": costs["loop_op_pair_s"] / 2, "iteration_s": costs["while_iteration_s"],
           "cond_s": costs["cond_skipped_s"],
           "setup_per_node_s": (costs["graph_construction_s_per_node"]
                                + costs["session_setup_s_per_node"])}
    bad = [key for key, value in out.items() if not value > 0]
    if bad:
        raise ValueError(f"probe: unit cost {', '.join(bad)} not resolved (at or below 0): "
                         "probe again on a quieter machine")
    return out


def matmul_seconds_per_flop(probe: dict, batch_size, num_units) -> tuple:
    """Return the probe's seconds per FLOP of a cell's matmul, forward and backward.

    The probe measured an LSTM step's matmul at a grid of (batch_size, num_units); between
    them the log rate is interpolated bilinearly in log2 batch and log2 units, and outside the
    grid it is held at the nearest edge. A rate the probe could not resolve (below the timer)
    counts as the fastest it measured in that pass.

    Args:
        probe: with ``matmul`` (measure.probe.matmul_rates' rows).
        batch_size: the batch: a number, or an array [n] of them.
        num_units: the cell's units, the same shape.

    Returns:
        (forward, backward) seconds per FLOP: floats, or arrays [n] for arrays.
    """
    table = pd.DataFrame(probe["matmul"])
    batches, units = np.sort(table["batch_size"].unique()), np.sort(table["num_units"].unique())
    x, y = (np.log2(np.atleast_1d(value).astype(float)) for value in (batch_size, num_units))
    out = []
    for column in ("forward_flop_per_s", "backward_flop_per_s"):
        rates = table.pivot(index="batch_size", columns="num_units", values=column)
        rates = rates.loc[batches, units].to_numpy(dtype=float)
        good = np.isfinite(rates) & (rates > 0)
        log_rate = np.log(np.where(good, rates, rates[good].max()))
        # bilinear is linear in units along each batch row, then linear in batch between
        # them; np.interp holds each end (scipy.interpolate, 0.3 s to import, is kept out of
        # planning: the time estimate calls this before any job)
        rows = np.array([np.interp(y, np.log2(units), row) for row in log_rate])
        out.append(np.exp(-np.array([np.interp(x[k], np.log2(batches), rows[:, k])
                                     for k in range(len(x))])))
    if np.ndim(batch_size) == 0:
        return float(out[0][0]), float(out[1][0])
    return out[0], out[1]


def _counts_rows(rows: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """The counts table's row of each row's (cell, impl, mode), in ``rows``' order and index.

    Raises:
        ValueError: naming the cell and mode, where the table has none.
    """
    keys = ["cell", "impl", "mode"]
    for key in rows[keys].drop_duplicates().itertuples(index=False):
        counts_of(counts, *key)
    return rows[keys].merge(counts, on=keys, how="left").set_index(rows.index)


def step_columns(rows: pd.DataFrame, probe: dict, counts: pd.DataFrame) -> pd.DataFrame:
    """Return STEP_TERMS in seconds on the probed machine, one row per row.

    Args:
        rows: with impl, cell, mode, batch_size, num_units, input_dim, max_len and
            ``computed`` (time steps that call the cell: the batch's longest sequence).
        probe: the machine's probe (unit_costs, matmul_seconds_per_flop).
        counts: the graph counts table (read_counts).

    Returns:
        Columns fixed_s, steps_s, matmul_s; same index as ``rows``.

    Raises:
        ValueError: for a cell type or mode without counts, or an unresolved unit cost.
    """
    unit = unit_costs(probe)
    c = _counts_rows(rows, counts)
    computed = rows["computed"].astype(float)
    skipped = rows["max_len"].astype(float) - computed
    per_computed = ((c["computed_nodes"] - c["computed_conds"]) * unit["op_s"]
                    + c["computed_conds"] * unit["cond_s"] + c["loops"] * unit["iteration_s"]
                    + c["loop_nodes"] * unit["loop_op_s"])
    # past the batch's longest sequence static_rnn runs the copy-through branch, and its
    # executor passes over the untaken cell branch's nodes (dead tensors)
    per_skipped = ((c["skipped_nodes"] - c["skipped_conds"]) * unit["op_s"]
                   + c["skipped_conds"] * unit["cond_s"]
                   + (c["computed_nodes"] - c["skipped_nodes"]) * unit["op_s"]) * (c["loops"] == 0)
    forward, backward = matmul_seconds_per_flop(probe, rows["batch_size"].to_numpy(float),
                                                rows["num_units"].to_numpy(float))
    per_flop = forward + (rows["mode"].map(FORWARD_PASSES).to_numpy(float) - 1) * backward
    flop = np.array([cell_step_flop(cell, b, i, u) for cell, b, i, u in zip(
        rows["cell"], rows["batch_size"], rows["input_dim"], rows["num_units"])], dtype=float)
    return pd.DataFrame({"fixed_s": c["fixed_nodes"] * unit["op_s"],
                         "computed_s": computed * per_computed, "skipped_s": skipped * per_skipped,
                         "matmul_s": computed * flop * per_flop}, index=rows.index)


def setup_column(rows: pd.DataFrame, probe: dict, counts: pd.DataFrame) -> pd.Series:
    """Return graph nodes x (construction + Session setup per node) in seconds, per row.

    Args:
        rows: with impl, cell, mode and max_len.
        probe: the machine's probe.
        counts: the graph counts table.

    Returns:
        Seconds; same index as ``rows``.
    """
    c = _counts_rows(rows, counts)
    nodes = c["graph_nodes_fixed"] + c["graph_nodes_per_time_step"] * rows["max_len"]
    return (unit_costs(probe)["setup_per_node_s"] * nodes).astype(float)


@dataclass
class MachineFit:
    """Hold one implementation's coefficients in the probe's units.

    Attributes:
        impl: 'static' or 'dynamic'.
        terms: the fitted columns (of STEP_TERMS, or ``setup_s``).
        beta: the dimensionless coefficients [terms].
        cov: their covariance [terms, terms].
        sigma: one run's relative spread about the model.
        df: sigma's degrees of freedom.
        n: the runs fitted.
        lack_of_fit_p: the lack-of-fit test's p (NaN without repeats).
        cell_sigma: the part of sigma that is a cell's own (its repeats' mean off the model:
            the form's error, which no number of repeats averages away); the rest is the
            spread between a cell's repeats.
        cell_df: its degrees of freedom (cells - terms): an interval that holds a cell's own
            error takes its t quantile at these.
        ranges: the fitted runs' [min, max] of batch_size, num_units, input_dim, max_len and
            computed (the shapes it extrapolates from).
    """
    impl: str
    terms: list[str]
    beta: np.ndarray
    cov: np.ndarray
    sigma: float
    df: int
    n: int
    lack_of_fit_p: float = math.nan
    cell_sigma: float = 0.0
    cell_df: int = 0
    ranges: dict = field(default_factory=dict)

    def predict(self, columns: pd.DataFrame, runs: float = 1,
                confidence: float = CONFIDENCE) -> pd.DataFrame:
        """Predict seconds from columns in seconds (step_columns or setup_column's frame).

        Args:
            columns: the terms' columns, on the machine predicted for.
            runs: how many new runs the interval's geometric mean is of; math.inf for the
                expected value (the coefficients' uncertainty and the cell's own error).
            confidence: the interval's two-sided level.

        Returns:
            Columns ``seconds``, ``low``, ``high`` (log-normal about seconds, NaN where it is
            not positive), ``log_var`` and its part from the coefficients, ``coef_var``; same
            index as ``columns``.
        """
        from rnnbench.stats.intervals import t_quantile

        X = columns[self.terms].to_numpy(dtype=float)
        fitted = X @ self.beta
        with np.errstate(invalid="ignore", divide="ignore"):
            coef_var = np.where(fitted > 0, np.einsum("ij,jk,ik->i", X, self.cov, X)
                                / fitted ** 2, np.nan)
            log_var = coef_var + self.cell_sigma ** 2 + self.within_var / runs
            half = t_quantile(confidence, self.interval_df) * np.sqrt(log_var)
            positive = np.where(fitted > 0, fitted, np.nan)
        return pd.DataFrame({"seconds": fitted, "low": positive * np.exp(-half),
                             "high": positive * np.exp(half), "log_var": log_var,
                             "coef_var": coef_var}, index=columns.index)

    @property
    def within_var(self) -> float:
        """The log variance of one run about its cell's mean (sigma less the cell's own)."""
        return self.sigma ** 2 - self.cell_sigma ** 2

    @property
    def interval_df(self) -> int:
        """The degrees of freedom of its intervals: cell_df where cells have their own error."""
        return self.cell_df if self.cell_sigma > 0 and self.cell_df > 0 else self.df

    def to_dict(self) -> dict:
        """The fit as JSON-ready values (from_dict reads them back)."""
        return {"impl": self.impl, "terms": self.terms, "beta": self.beta.tolist(),
                "cov": self.cov.tolist(), "sigma": self.sigma, "df": self.df, "n": self.n,
                "lack_of_fit_p": None if math.isnan(self.lack_of_fit_p) else self.lack_of_fit_p,
                "cell_sigma": self.cell_sigma, "cell_df": self.cell_df, "ranges": self.ranges}

    @classmethod
    def from_dict(cls, record: dict) -> "MachineFit":
        """Read to_dict's values back."""
        p = record.get("lack_of_fit_p")
        return cls(**{**record, "beta": np.array(record["beta"], dtype=float),
                      "cov": np.array(record["cov"], dtype=float),
                      "lack_of_fit_p": math.nan if p is None else float(p)})


def _fit(impl: str, columns: pd.DataFrame, y: np.ndarray, cells: np.ndarray) -> MachineFit:
    """Fit the identified columns of ``columns`` to ``y`` (fit.weighted_fit), and part its
    spread into the cells' own and their repeats' (MachineFit.cell_sigma)."""
    from rnnbench.costmodel.fit import identified_terms

    terms = identified_terms(columns, list(columns.columns), cells)
    if len(y) < len(terms) + 2:
        raise ValueError(f"machine model: {len(y)} {impl} runs for {len(terms)} terms: need "
                         f"{len(terms) + 2}")
    fitted = weighted_fit(columns[terms].to_numpy(dtype=float), y, cells)
    X = columns[terms].to_numpy(dtype=float)
    logs = pd.Series(np.log(y / np.maximum(X @ fitted["beta"], 1e-300)))
    within = logs - logs.groupby(cells).transform("mean")
    df_pure = len(y) - len(set(cells))
    pure2 = float((within ** 2).sum() / df_pure) if df_pure > 0 else fitted["sigma"] ** 2
    return MachineFit(impl=impl, terms=terms, n=len(y),
                      cell_sigma=math.sqrt(max(fitted["sigma"] ** 2 - pure2, 0.0)),
                      cell_df=len(set(cells)) - len(terms), **fitted)


@dataclass
class RatioSpread:
    """Hold the step ratio's own error about the model, per cell.

    A cell's static_rnn and dynamic_rnn steps are off the model together (the same graph,
    the same shape): their own errors are correlated, and only what does not cancel is the
    ratio's. docs/cost-model.md, The expected ratio's interval.

    Attributes:
        cell_sigma: the log ratio's own spread: its cells' log ratios of the repeats'
            geometric means off the model's, less the repeats' noise.
        cell_df: its degrees of freedom: cells less the larger fit's terms (both fits are of
            the same cells' design; with it, the expected interval covered 94-96 % in
            simulation at correlations 0 to 0.9, tests/costmodel/test_machine.py).
        cells: the cells with runs of both implementations it is estimated from.
    """
    cell_sigma: float
    cell_df: int
    cells: int


def _ratio_spread(step: dict[str, MachineFit], rows: dict[str, pd.DataFrame],
                  columns: dict[str, pd.DataFrame]) -> RatioSpread:
    """Estimate RatioSpread from the fitted runs of both implementations.

    Args:
        step: the step fits, {impl: MachineFit}.
        rows: each implementation's fitted runs (cell_id, median_step_s).
        columns: each implementation's step columns, same index as its rows.

    Returns:
        The spread: sum(r_c ** 2) / cell_df less the mean of the repeats' noise
        (within_var / runs of each implementation), where r_c is a cell's mean log residual
        of static_rnn less dynamic_rnn's; zero where the noise holds it all.

    Raises:
        ValueError: with too few cells of both implementations for the terms.
    """
    means, noise = {}, 0.0
    for impl, fit in step.items():
        seconds = fit.predict(columns[impl])["seconds"].to_numpy()
        logs = pd.Series(np.log(rows[impl]["median_step_s"].to_numpy(dtype=float)
                                / np.maximum(seconds, 1e-300)),
                         index=rows[impl]["cell_id"].to_numpy())
        grouped = logs.groupby(level=0)
        means[impl] = grouped.mean()
        noise = noise + fit.within_var / grouped.size()
    residual = (means["static"] - means["dynamic"]).dropna()
    df = len(residual) - max(len(fit.terms) for fit in step.values())
    if df < 2:
        raise ValueError(f"machine model: {len(residual)} cells with runs of both "
                         f"implementations: need {len(residual) - df + 2} for their ratio")
    spread = float((residual ** 2).sum() / df - noise[residual.index].mean())
    return RatioSpread(cell_sigma=math.sqrt(max(spread, 0.0)), cell_df=df,
                       cells=len(residual))


def fit_machine(runs: pd.DataFrame, probe: dict,
                counts: pd.DataFrame | None = None) -> dict[str, dict[str, MachineFit]]:
    """Fit both implementations' step and setup coefficients to runs of one probed machine.

    Args:
        runs: measurements.csv rows of one environment (fit.model_runs chooses them: quiet,
            readable, at their reference ablations), of compat_v1 cells.
        probe: the probe of the machine they ran on (measure.probe.probe's dict).
        counts: the graph counts table (default: read_counts()).

    Returns:
        {"step": {impl: MachineFit}, "setup": {impl: MachineFit}, "ratio": RatioSpread}.

    Raises:
        ValueError: with too few runs or cells, a cell type without counts or an unresolved
            unit cost.
    """
    from rnnbench.costmodel.fit import model_rows, model_runs

    counts = read_counts() if counts is None else counts
    fits: dict = {"step": {}, "setup": {}}
    rows, columns = {}, {}
    for impl in ("static", "dynamic"):
        rows[impl] = mine = model_rows(model_runs(runs[runs["impl"] == impl]))
        cells = mine["cell_id"].to_numpy()
        columns[impl] = step_columns(mine, probe, counts)
        fits["step"][impl] = _fit(impl, columns[impl],
                                  mine["median_step_s"].to_numpy(dtype=float), cells)
        setup = setup_column(mine, probe, counts).to_frame("setup_s")
        fits["setup"][impl] = _fit(impl, setup, mine["setup_s"].to_numpy(dtype=float), cells)
        for fit in (fits["step"][impl], fits["setup"][impl]):
            fit.ranges = {axis: [float(mine[axis].min()), float(mine[axis].max())]
                          for axis in RANGE_AXES}
    fits["ratio"] = _ratio_spread(fits["step"], rows, columns)
    return fits


def predict_machine(fits: dict[str, dict[str, MachineFit]], rows: pd.DataFrame, probe: dict,
                    counts: pd.DataFrame | None = None, runs: float = 1,
                    confidence: float = CONFIDENCE) -> dict[str, pd.DataFrame]:
    """Predict step and setup seconds of ``rows`` on a probed machine, with the step ratio.

    Args:
        fits: fit_machine's fits (fitted on another machine, or this one).
        rows: shape rows (fit.shape_rows) with a ``cell`` and ``mode``.
        probe: the probe of the machine predicted for.
        counts: the graph counts table (default: read_counts()).
        runs: as MachineFit.predict (math.inf: the expected value).
        confidence: the intervals' two-sided level.

    Returns:
        {"step_<impl>", "setup_<impl>": MachineFit.predict's frames, "ratio": columns ratio,
        low, high (static over dynamic step). The ratio's log variance is both fits'
        coefficient variances, the ratio's own cell error (fits["ratio"]: the part of the
        two cells' errors that does not cancel) and each implementation's run noise over
        ``runs``.
    """
    from rnnbench.stats.intervals import t_quantile

    counts = read_counts() if counts is None else counts
    out = {}
    for impl in ("static", "dynamic"):
        mine = rows.assign(impl=impl)
        out[f"step_{impl}"] = fits["step"][impl].predict(
            step_columns(mine, probe, counts), runs, confidence)
        out[f"setup_{impl}"] = fits["setup"][impl].predict(
            setup_column(mine, probe, counts).to_frame("setup_s"), runs, confidence)
    static, dynamic = out["step_static"], out["step_dynamic"]
    ratio, spread = static["seconds"] / dynamic["seconds"], fits["ratio"]
    log_var = (static["coef_var"] + dynamic["coef_var"] + spread.cell_sigma ** 2
               + sum(fit.within_var for fit in fits["step"].values()) / runs)
    df = (spread.cell_df if spread.cell_sigma > 0
          else min(fit.df for fit in fits["step"].values()))
    half = t_quantile(confidence, df) * np.sqrt(log_var)
    out["ratio"] = pd.DataFrame({"ratio": ratio, "low": ratio * np.exp(-half),
                                 "high": ratio * np.exp(half)}, index=rows.index)
    return out


def write_machine_fits(fits: dict[str, dict[str, MachineFit]], path: str | Path,
                       about: dict) -> None:
    """Write fit_machine's fits to JSON, with ``about`` (the map's machine and probe)."""
    record = {kind: {impl: fit.to_dict() for impl, fit in fits[kind].items()}
              for kind in ("step", "setup")}
    record["ratio"] = asdict(fits["ratio"])
    Path(path).write_text(json.dumps({**about, "fits": record}, indent=1) + "\n")


def read_machine_fits(path: str | Path) -> dict:
    """Read write_machine_fits' fits back.

    Raises:
        ValueError: naming the file, where it is not such a file (one written before the
            ratio had its own spread included: fit it again, rnnbench reference --run
            probe-map --no-run).
    """
    try:
        record = json.loads(Path(path).read_text())["fits"]
        fits = {kind: {impl: MachineFit.from_dict(record[kind][impl])
                       for impl in ("static", "dynamic")} for kind in ("step", "setup")}
        spread = RatioSpread(**record["ratio"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: not the machine model's fits ({error!r})") from None
    if not (_number(spread.cell_sigma) and _number(spread.cell_df) and spread.cell_sigma >= 0
            and spread.cell_df >= 1):
        raise ValueError(f"{path}: fits ratio: {asdict(spread)} (a spread at least 0, "
                         "df at least 1)")
    for kind, pair in fits.items():
        known = STEP_TERMS if kind == "step" else ("setup_s",)
        for impl, fit in pair.items():
            where = f"{path}: fits {kind} {impl}"
            if not fit.terms or not set(fit.terms) <= set(known):
                raise ValueError(f"{where}: terms {fit.terms} (known: {', '.join(known)})")
            if fit.beta.shape != (len(fit.terms),) or fit.cov.shape != (len(fit.terms),) * 2:
                raise ValueError(f"{where}: beta and cov do not match its {len(fit.terms)} terms")
            numbers = [*fit.beta, *fit.cov.ravel(), fit.sigma, fit.cell_sigma]
            if not all(math.isfinite(v) for v in numbers) or min(fit.sigma, fit.cell_sigma) < 0:
                raise ValueError(f"{where}: a coefficient, covariance or spread is not a "
                                 "finite number (spreads at least 0)")
            if fit.df < 1:
                raise ValueError(f"{where}: df {fit.df}: below 1")
    return {**fits, "ratio": spread}


UNIT_KEYS = ("op_pair_s", "op_pair_nodes", "loop_op_pair_s", "while_iteration_s",
             "cond_skipped_s", "graph_construction_s_per_node", "session_setup_s_per_node")
"""The probe's unit costs the model reads (unit_costs)."""
MATMUL_KEYS = ("batch_size", "num_units", "forward_flop_per_s", "backward_flop_per_s")
MAX_UNIT_S = 1.0
"""The bound (exclusive) of a unit cost in seconds: an op pair, an iteration or a node's
construction takes microseconds; a second is no machine's, but a hand-edited probe's."""
MAX_FLOP_PER_S = 1e17
"""The bound (exclusive) of a matmul rate: 100 PFLOP/s, far above any one device's."""


def _number(value, finite: bool = True) -> bool:
    """Whether ``value`` is a JSON number (not a bool), finite where ``finite``."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and (math.isfinite(value) or not finite))


def check_probe(probe: dict, source: str) -> None:
    """Refuse a probe the model cannot read, before any use of it.

    Args:
        probe: the probe's dict (``unit_costs``, ``matmul``).
        source: its name in the message (``--probe FILE``).

    Raises:
        ValueError: naming the source and the field: a unit cost missing, not a finite
            number, or outside [0, MAX_UNIT_S) seconds; op_pair_nodes below 1; a matmul table
            that is not a full grid of batch sizes and units (each at least 1, once each) with
            numeric rates below MAX_FLOP_PER_S and a positive, finite rate in each pass.
    """
    costs = probe.get("unit_costs")
    if not isinstance(costs, dict):
        raise ValueError(f"{source}: unit_costs {costs!r} is not a table of unit costs")
    for key in UNIT_KEYS:
        if not _number(costs.get(key)):
            raise ValueError(f"{source}: unit cost {key} {costs.get(key)!r} is not a finite "
                             "number")
        if key != "op_pair_nodes" and not 0 <= costs[key] < MAX_UNIT_S:
            raise ValueError(f"{source}: unit cost {key} {costs[key]!r} s: not from 0 to below "
                             f"{MAX_UNIT_S:g} s (no machine's)")
    if costs["op_pair_nodes"] < 1:
        raise ValueError(f"{source}: op_pair_nodes {costs['op_pair_nodes']!r}: below 1")
    rows = probe.get("matmul")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{source}: matmul holds no rows of rates")
    for row in rows:
        for key in MATMUL_KEYS:
            value = row.get(key)
            if not _number(value, finite=key.startswith("batch") or key.startswith("num")) or (
                    key in ("batch_size", "num_units") and value < 1):
                raise ValueError(f"{source}: matmul {key} {value!r} is not a number"
                                 + (" of at least 1" if key in MATMUL_KEYS[:2] else ""))
    shapes = [(r["batch_size"], r["num_units"]) for r in rows]
    grid = {b for b, _ in shapes}, {u for _, u in shapes}
    if len(set(shapes)) != len(shapes) or len(shapes) != len(grid[0]) * len(grid[1]):
        raise ValueError(f"{source}: matmul's shapes {sorted(shapes)} are not a grid of "
                         "batch sizes and units, each once")
    for key in MATMUL_KEYS[2:]:
        if not any(math.isfinite(r[key]) and r[key] > 0 for r in rows):
            raise ValueError(f"{source}: matmul {key}: no positive, finite rate")
        if any(r[key] >= MAX_FLOP_PER_S or r[key] < 0 for r in rows):
            raise ValueError(f"{source}: matmul {key}: a rate below 0, or not below "
                             f"{MAX_FLOP_PER_S:.0e} FLOP/s (no device's)")


PROBE_SCHEMA_VERSION = 1
"""The probe record's layout (its keys: kind, schema_version, environment, meta, the
probe's own)."""


def probe_record(threads: int) -> dict:
    """Probe this machine (measure.probe.probe) and return the probe's record.

    Args:
        threads: the Session's intra- and inter-op threads.

    Returns:
        Keys kind, schema_version, environment (load.environment), meta (this machine's
        metadata), and the probe's own: its unit costs, the matmul rates, probe_s.
    """
    from rnnbench.measure import metadata
    from rnnbench.measure.model import import_tf
    from rnnbench.measure.probe import probe
    from rnnbench.results.load import environment

    tf = import_tf()
    measured = probe(tf, threads, threads)
    meta = {**metadata.collect(metadata.tensorflow_info(tf, "cpu")), "image_sha256": None}
    return {"kind": "probe", "schema_version": PROBE_SCHEMA_VERSION,
            "environment": environment(meta), "meta": meta, **measured}


def read_probe(path: str | Path, optional: bool = False) -> dict | None:
    """Read a probe: ``rnnbench probe``'s record, or rule peak's JSON (its ``probe``).

    Args:
        path: the JSON file.
        optional: return None for rule peak's JSON of a run that took no probe (a GPU's:
            ``"probe": null``) instead of refusing it.

    Returns:
        The probe's dict (``unit_costs``, ``matmul``), with ``environment`` where the file
        names the machine; None as ``optional`` says.

    Raises:
        ValueError: naming the file, where it holds no probe, or it is another device's run
            than a CPU's.
    """
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"--probe {path}: not a readable JSON file ({error})") from None
    probe = record.get("probe") if isinstance(record, dict) and "probe" in record else record
    if probe is None and optional:
        return None
    if not isinstance(probe, dict) or not {"unit_costs", "matmul"} <= set(probe):
        raise ValueError(f"--probe {path}: no probe in it (rnnbench probe's record, or a "
                         "results/runs/.../peak_*.json of a CPU run)")
    check_probe(probe, f"--probe {path}")
    meta = (record.get("metadata") or record.get("meta") or {}) if isinstance(record, dict) \
        else {}
    if meta.get("device", "cpu") != "cpu":  # rule peak probes the CPU's units alone
        raise ValueError(f"--probe {path}: a run on device {meta['device']!r}; the probe's "
                         "unit costs are a CPU's (a results/runs/.../peak_*.json of a CPU run)")
    environment = record.get("environment") or meta.get("cpu_model")
    return {**probe, "environment": environment}


MODELLED_AXES = tuple(axis for axis in ABLATION_DEFAULTS if axis not in ("mode", "unroll"))
"""The ablation axes the counts and the probe are taken at their reference values of (mode
has its own counts; unroll is JAX's)."""


def check_modelled(name: str, cell: dict) -> None:
    """Refuse a cell the model in the probe's units does not describe.

    Args:
        name: the cell's id, for the message.
        cell: the cell (cells.cells' value).

    Raises:
        ValueError: naming the cell and the axis, for an api other than compat_v1, a
            TensorFlow other than the counts' (DEFAULT_TF_VERSION), or an ablation axis off
            its reference value (the counts and the probe hold for the reference graph and
            the training jobs' threads).
    """
    from rnnbench.grid.axes import DEFAULT_TF_VERSION, value_of

    if value_of(cell, "api") != "compat_v1":
        raise ValueError(f"{name}: api {value_of(cell, 'api')}: the model in the probe's units "
                         "is TensorFlow's compat_v1 only")
    if str(cell.get("tf_version", DEFAULT_TF_VERSION)) != DEFAULT_TF_VERSION:
        raise ValueError(f"{name}: tf_version {cell['tf_version']}: the graph counts are "
                         f"TensorFlow {DEFAULT_TF_VERSION}'s")
    for axis in MODELLED_AXES:
        if value_of(cell, axis) != ABLATION_DEFAULTS[axis]:
            raise ValueError(f"{name}: {axis} {value_of(cell, axis)!r}: the model holds at "
                             f"{ABLATION_DEFAULTS[axis]!r} only")


def predicted_table(fits: dict[str, dict[str, MachineFit]], probe: dict, cells: dict[str, dict],
                    repeats: int, counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Predict compat_v1 ``cells`` on a probed machine before any of them runs.

    Args:
        fits: fit_machine's fits.
        probe: the probe of the machine the cells will run on.
        cells: cells.cells of a config, {cell_id: cell}, with fixed sequence lengths.
        repeats: the runs per implementation the ratio's interval is for.
        counts: the graph counts table (default: read_counts()).

    Returns:
        check.predicted_table's columns (one run's step intervals, the ratio for the geometric
        means of ``repeats`` runs; ``extrapolates`` empty), and ``expected_low`` /
        ``expected_high`` (the expected ratio's 95 % interval) and ``<impl>_setup_s``.

    Raises:
        ValueError: naming the cell, for a sequence_length that is not a fixed length, or a
            cell the model does not describe (check_modelled).
    """
    from rnnbench.costmodel.check import fixed_length
    from rnnbench.costmodel.fit import shape_rows

    rows = []
    for name, cell in cells.items():
        length = fixed_length(name, cell)
        check_modelled(name, cell)
        shape = shape_rows(cell["cell"], cell["batch_size"], cell["num_units"],
                           cell["input_dim"], cell["max_len"], length, cell.get("mode", "train"))
        one, mean, by_repeats = (predict_machine(fits, shape, probe, counts, runs=n)
                                 for n in (1, math.inf, repeats))
        row = {"cell_id": name}
        for impl in ("static", "dynamic"):
            band = one[f"step_{impl}"].iloc[0]
            row.update({f"{impl}_step_ms": band["seconds"] * 1e3,
                        f"{impl}_low_ms": band["low"] * 1e3,
                        f"{impl}_high_ms": band["high"] * 1e3,
                        f"{impl}_setup_s": mean[f"setup_{impl}"]["seconds"].iloc[0]})
        ratio, expected = by_repeats["ratio"].iloc[0], mean["ratio"].iloc[0]
        rows.append({**row, "ratio": ratio["ratio"], "ratio_low": ratio["low"],
                     "ratio_high": ratio["high"], "expected_low": expected["low"],
                     "expected_high": expected["high"], "extrapolates": ""})
    return pd.DataFrame(rows)


def validation(predicted: pd.DataFrame, runs: pd.DataFrame,
               margin: float = 0.1) -> pd.DataFrame:
    """Compare predicted_table (written before the runs) with the runs of those cells.

    Args:
        predicted: predicted_table's table, as written.
        runs: measurements.csv rows (busy runs included, as the summary's intervals).
        margin: the practical margin both decisions are taken at (intervals.decide).

    Returns:
        check.validation's columns, and ``<impl>_setup_error`` (the expected setup over the
        runs' median, less 1), ``expected_low`` / ``expected_high`` / ``expected_covered``
        (the expected ratio's interval, and whether it holds the measured ratio),
        ``expected_decision`` (the expected ratio's interval decided)
        and ``measured_decision`` (the runs' own ratio interval, intervals.ratio_ci, paired by
        repeat as the summary's, decided), and ``expected_side`` / ``measured_side`` (the
        same intervals by intervals.side_or_within: excludes 1, or inside the margin).

    Raises:
        ValueError: naming a predicted cell without runs of both implementations.
    """
    from rnnbench.costmodel import check
    from rnnbench.stats.intervals import decide, ratio_ci, side_or_within

    table = check.validation(predicted, runs)
    extra = []
    for _, cell in predicted.iterrows():
        held = runs[runs["cell_id"] == cell["cell_id"]]
        steps = {impl: held[held["impl"] == impl].sort_values("repeat")["median_step_s"]
                 .to_numpy(dtype=float) for impl in ("static", "dynamic")}
        paired = len(steps["static"]) == len(steps["dynamic"])
        _, low, high = ratio_ci(steps["static"], steps["dynamic"], paired=paired)
        measured = table.loc[table["cell_id"] == cell["cell_id"], "measured_ratio"].iloc[0]
        extra.append({**{f"{impl}_setup_error": cell[f"{impl}_setup_s"] / held.loc[
            held["impl"] == impl, "setup_s"].median() - 1 for impl in ("static", "dynamic")},
            "expected_low": cell["expected_low"], "expected_high": cell["expected_high"],
            "expected_covered": bool(cell["expected_low"] <= measured <= cell["expected_high"]),
            "expected_decision": decide(cell["expected_low"], cell["expected_high"], margin),
            "measured_decision": decide(low, high, margin),
            "expected_side": side_or_within(cell["expected_low"], cell["expected_high"],
                                            margin),
            "measured_side": side_or_within(low, high, margin)})
    return pd.concat([table, pd.DataFrame(extra, index=table.index)], axis=1)


def leave_one_out(runs: pd.DataFrame, probe: dict,
                  counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Predict each cell of a map from the coefficients fitted to its other cells.

    Args:
        runs: the map's measurements.csv rows (fit.model_runs chooses the runs fitted).
        probe: the probe of the machine the map ran on.
        counts: the graph counts table (default: read_counts()).

    Returns:
        One row per cell with runs of both implementations: check.leave_one_out's columns
        (the ratio's interval for the cell's repeats), and ``expected_low`` /
        ``expected_high`` / ``expected_covered`` (the expected ratio's interval, and whether
        it holds the measured ratio of the repeats' geometric means).
    """
    from rnnbench.costmodel.check import geometric_means
    from rnnbench.costmodel.fit import model_rows, model_runs

    counts = read_counts() if counts is None else counts
    kept = model_rows(model_runs(runs))
    rows = []
    for cell_id, held in kept.groupby("cell_id"):
        if set(held["impl"]) != {"static", "dynamic"}:
            continue
        fits = fit_machine(runs[runs["cell_id"] != cell_id], probe, counts)
        medians = geometric_means(held)
        measured = medians["static"] / medians["dynamic"]
        shape = held[held["impl"] == "static"].iloc[[0]]
        repeats = int(held.groupby("impl").size().min())
        by_repeats, mean = (predict_machine(fits, shape, probe, counts, runs=n)
                            for n in (repeats, math.inf))
        ratio, expected = by_repeats["ratio"].iloc[0], mean["ratio"].iloc[0]
        covered = 0
        for impl in ("static", "dynamic"):
            mine = held[held["impl"] == impl]
            band = fits["step"][impl].predict(step_columns(mine, probe, counts))
            covered += int(((mine["median_step_s"] >= band["low"])
                            & (mine["median_step_s"] <= band["high"])).sum())
        rows.append({"cell_id": cell_id, "max_len": int(shape["max_len"].iloc[0]),
                     "measured_ratio": measured, "predicted_ratio": ratio["ratio"],
                     "ratio_low": ratio["low"], "ratio_high": ratio["high"],
                     "ratio_error": ratio["ratio"] / measured - 1,
                     "ratio_covered": bool(ratio["low"] <= measured <= ratio["high"]),
                     **{f"{impl}_error": mean[f"step_{impl}"]["seconds"].iloc[0]
                        / medians[impl] - 1 for impl in ("static", "dynamic")},
                     "runs": len(held), "runs_covered": covered, "extrapolates": "",
                     "expected_low": expected["low"], "expected_high": expected["high"],
                     "expected_covered": bool(expected["low"] <= measured
                                              <= expected["high"])})
    return pd.DataFrame(rows)


def time_step_costs(fits: dict[str, dict[str, MachineFit]], probe: dict, cell: str = "basic_lstm",
                    counts: pd.DataFrame | None = None) -> dict[str, float]:
    """Return each implementation's fitted seconds per computed time step besides its matmuls.

    At full length (no time step skipped) static_rnn's steps win on a machine where its
    figure is below dynamic_rnn's by more than their matmuls' difference; it is the balance
    the README's answer is written in.

    Args:
        fits: fit_machine's fits.
        probe: a machine's probe.
        cell: the cell type (its graph counts).
        counts: the graph counts table (default: read_counts()).

    Returns:
        {impl: seconds}: the computed_s column of one time step times its coefficient.
    """
    counts = read_counts() if counts is None else counts
    out = {}
    for impl in ("static", "dynamic"):
        row = pd.DataFrame([{"cell": cell, "impl": impl, "mode": "train", "batch_size": 1,
                             "num_units": 1, "input_dim": 1, "max_len": 1, "computed": 1.0}])
        fit = fits["step"][impl]
        out[impl] = float(step_columns(row, probe, counts)["computed_s"].iloc[0]
                          * fit.beta[fit.terms.index("computed_s")])
    return out
