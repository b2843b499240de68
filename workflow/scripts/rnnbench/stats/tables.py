"""Compute the statistics tables the reports read; none is rendered here.

The tables: claim verdicts, ablation effects, where the setup goes, the unroll spectrum, the
TensorFlow versions, the Keras cells. Their readers: FINDINGS.md (rnnbench.report.findings),
the charts, ``rnnbench compare`` and ``rnnbench reference``. All come from summary.csv and
measurements.csv (rnnbench.stats.summary, rnnbench.results.load).

A claim says which implementation is larger on a quantity ("static > dynamic": the static /
dynamic ratio exceeds 1). It holds, does not hold or is inconclusive per cell, by the ratio's
95 % interval against a practical margin (intervals.decide; docs/method.md, Decisions).
"""

from __future__ import annotations

import math

import pandas as pd

from rnnbench.grid.axes import KERAS_APIS, LABEL_AXES
from rnnbench.grid.cells import ablated_axes, varied_axes
from rnnbench.grid.axes import tf_version_key
from rnnbench.stats.intervals import claim_verdict, decide
from rnnbench.results.load import at_reference
from rnnbench.stats.summary import ratio_of

QUANTITIES = {
    "graph_construction_s": "graph construction (Keras, JAX: tracing) time",
    "setup_s": "setup time (everything before the second step: graph construction or "
               "tracing, setup, first step or call)",
    "first_100_steps_s": "time to the 100th step (setup + 99 steps)",
    "median_step_s": "steady-state step time",
    "peak_rss_mb": "peak memory (RSS)",
    "first_step_s": "first step or call (graph optimisation or compilation, one step)",
}
"""Quantities a claim can be about: summary columns ``ratio_<quantity>`` (static / dynamic),
in words every api's cells fit (vocabulary.API_WORDS has each api's own)."""
DIRECTIONS = ("static > dynamic", "static < dynamic")


def verdict(direction: str, low: float, high: float, margin: float) -> str:
    """A claim's verdict on a static / dynamic ratio, with a practical margin.

    Args:
        direction: one of DIRECTIONS.
        low, high: the ratio's 95 % interval (NaN with fewer than 2 repeats).
        margin: the practical margin (config ``margin``; intervals.decide).

    Returns:
        'holds', 'does not hold' or 'inconclusive' (intervals.claim_verdict of
        intervals.decide: no practical difference does not hold).

    Raises:
        ValueError: for a direction not in DIRECTIONS.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: {direction!r} is not one of {DIRECTIONS}")
    claimed = "above" if direction == "static > dynamic" else "below"
    return claim_verdict(decide(low, high, margin), claimed)


def undecided_cells(summary: pd.DataFrame, margin: float) -> list[str]:
    """The cells whose steady-state step ratio is undecided at the practical margin.

    Args:
        summary: summary.csv rows (rnnbench.stats.summary.summarize), one per cell.
        margin: the practical margin (config ``margin``; intervals.decide).

    Returns:
        The ``cell_id`` of each row whose ``ratio_median_step_s`` interval intervals.decide
        calls 'undecided' (a NaN bound too), in the summary's order.
    """
    return [cell for cell, low, high in zip(summary["cell_id"],
                                            summary["ratio_median_step_s_ci_low"],
                                            summary["ratio_median_step_s_ci_high"])
            if decide(low, high, margin) == "undecided"]


CLAIM_COLUMNS = ["claim", "cell_id", "quantity", "direction", "ratio", "ci_low", "ci_high",
                 "decision", "verdict", "repeats", "fragile", "figure", "figure_in_interval", "ablations", "api",
                 "base_cell_id", "reference"]


def claim_table(summary: pd.DataFrame, claims: list[dict], margin: float) -> pd.DataFrame:
    """Judge each ratio claim in each cell, in every api.

    The seeds' claims are about static_rnn and dynamic_rnn. In the other apis the unrolled
    variant plays static's part (Keras ``unroll=True``, a JAX scan's ``unroll`` factor above 1)
    and the loop dynamic's (``unroll=False``, ``unroll=1``; vocabulary.API_WORDS). Claims of
    other kinds are skipped (rnnbench.stats.claims judges them).

    Args:
        summary: summary.csv rows (summary.summarize), one per cell.
        claims: the config's claims.
        margin: the practical margin (config ``margin``; intervals.decide).

    Returns:
        One row per ratio claim and cell, columns CLAIM_COLUMNS: the ratio, its interval
        (ci_low, ci_high), its ``decision`` (intervals.decide at ``margin``), the verdict, its
        ``repeats``, ``fragile`` (the quantity is among the cell's summary.fragile_metrics: one
        process decides it), the seed's figure and ``figure_in_interval`` (None without a
        figure), the cell's ablations, api and base_cell_id, and ``reference`` (the cell has no
        ablation, or the cell it ablates is not in the grid).

    Raises:
        ValueError: for a claim whose quantity is not in QUANTITIES.
    """
    rows = []
    for claim in claims:
        if claim.get("kind", "ratio") != "ratio":
            continue  # rnnbench.stats.claims judges the other kinds
        quantity = claim["quantity"]
        if quantity not in QUANTITIES:
            raise ValueError(f"claim {claim['id']}: quantity {quantity!r} is not one of "
                             f"{sorted(QUANTITIES)}")
        figure = claim.get("figure")
        for _, cell in summary.iterrows():
            low, high = cell[f"ratio_{quantity}_ci_low"], cell[f"ratio_{quantity}_ci_high"]
            rows.append({
                "claim": claim["id"], "cell_id": cell["cell_id"], "quantity": quantity,
                "direction": claim["direction"], "ratio": cell[f"ratio_{quantity}"],
                "ci_low": low, "ci_high": high,
                "decision": decide(low, high, margin),
                "verdict": verdict(claim["direction"], low, high, margin),
                "repeats": cell["static_repeats"],
                "fragile": quantity in str(cell.get("fragile", "")).split(", "),
                "figure": figure,
                "figure_in_interval": None if figure is None else bool(low <= figure <= high),
                "ablations": cell["ablations"], "api": cell["api"],
                "base_cell_id": cell["base_cell_id"],
                # no ablation, or the cell it ablates is not in the grid (e.g. every cell
                # runs 2 threads): a reference cell, not a twin
                "reference": cell["base_cell_id"] == cell["cell_id"]
                or cell["base_cell_id"] not in set(summary["cell_id"]),
            })
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)




def axis_words(axis: str, value) -> str:
    """Say a cell's value of ``axis`` in words, as its label names it (cell_labels).

    Args:
        axis: a grid axis.
        value: the cell's value of it.

    Returns:
        E.g. 'sequences of 2 steps', 'sequences that fill max_len', 'sequences of 2 to 24
        steps (uniform)', 'max_len 24', 'TensorFlow 2.12'.
    """
    if axis == "sequence_length":
        value = str(value)
        if value == "full":
            return "sequences that fill max_len"
        if value.startswith("u"):
            return f"sequences of {value[1:].replace('-', ' to ')} steps (uniform)"
        return f"sequences of {value} steps"
    if axis in ("cell", "api"):
        return str(value)
    if axis == "tf_version":
        return f"TensorFlow {value}"
    return f"{axis} {value}"


def cell_labels(summary: pd.DataFrame, axes: tuple[str, ...] = LABEL_AXES) -> dict[str, str]:
    """Name each cell in words, by what tells it apart in its grid.

    Args:
        summary: summary rows, one per cell (with cell_id, the axes and ablations).
        axes: the axes that may name a cell (LABEL_AXES).

    Returns:
        cell_id -> words: the ``axes`` that take more than one value among the cells ('max_len
        24, sequence_length 2'), then its ablations ('dynamic loops to max_len'). In a grid
        where no axis varies: its max_len and sequence_length. Cells the words do not tell
        apart (hand-made tables) get their ids added.
    """
    varied = [axis for axis in axes
              if axis in summary and summary[axis].astype(str).nunique() > 1]
    shown = varied or ["max_len", "sequence_length"]
    out = {}
    for _, cell in summary.iterrows():
        words = [axis_words(axis, cell[axis]) for axis in shown]
        if isinstance(cell.get("ablations"), str) and cell["ablations"]:
            words.append(cell["ablations"])
        out[cell["cell_id"]] = ", ".join(words)
    seen = pd.Series(list(out.values())).value_counts()
    return {cid: f"{label} ({cid})" if seen[label] > 1 else label for cid, label in out.items()}


def gap_share(ablated: float, reference: float, figure: float) -> float:
    """Return the share of the log-ratio gap to a seed's figure that an ablation closes.

    (log ablated - log reference) / (log figure - log reference): 1 means the ablation alone
    moves our ratio to the seed's.

    Args:
        ablated: the ablation twin's ratio.
        reference: our reference cell's ratio.
        figure: the seed's ratio.

    Returns:
        The share, a float.

    Raises:
        ZeroDivisionError: when reference == figure (no gap).
    """
    return ((math.log(ablated) - math.log(reference))
            / (math.log(figure) - math.log(reference)))


def decided_gap_share(twin: pd.Series, reference: pd.Series, figure: float | None
                      ) -> float | None:
    """Return gap_share of an ablation twin's ratio, only as far as the intervals decide it.

    Args:
        twin: the twin's claim_table row (ratio, ci_low, ci_high, verdict).
        reference: its reference cell's claim_table row, the same way.
        figure: the seed's ratio, or None.

    Returns:
        gap_share(twin ratio, reference ratio, figure). None unless a figure is given and
        differs from the reference's ratio, both verdicts are conclusive, and the two intervals
        do not overlap (the ablation's move is larger than the spread between processes).
    """
    if figure is None or pd.isna(figure) or reference["ratio"] == figure:
        return None
    if "inconclusive" in (twin["verdict"], reference["verdict"]):
        return None
    if twin["ci_low"] <= reference["ci_high"] and reference["ci_low"] <= twin["ci_high"]:
        return None
    return gap_share(twin["ratio"], reference["ratio"], figure)


def ablated_in_grid(table: pd.DataFrame) -> dict[str, tuple[str, ...]]:
    """Return each cell's ablation axes, among those the table's cells vary.

    How a table row's ``ablations`` were worded, as axes, to choose cells by
    (cells.ablated_axes, cells.varied_axes).

    Args:
        table: rows with cell_id and the axes (runs or summary).

    Returns:
        cell_id -> the ablation axes where the cell differs from its reference.
    """
    cells = table.drop_duplicates("cell_id")
    rows = cells.to_dict("records")
    varied = varied_axes(rows)
    return {row["cell_id"]: tuple(ablated_axes(row, varied)) for row in rows}


EFFECT_METRICS = {"setup_s": "setup", "median_step_s": "median step",
                  "mean_step_s": "mean step", "peak_rss_mb": "peak RSS"}
"""What ablation_effects compares between a twin and its base cell (measurements columns)."""


def ablation_effects(runs: pd.DataFrame) -> pd.DataFrame:
    """Return what each ablation does to each implementation on its own.

    A twin cell is one whose reference cell (``base_cell_id``) is in ``runs``.

    Args:
        runs: load.load_results's table (after share_runs).

    Returns:
        One row per twin cell, implementation and EFFECT_METRICS column: cell_id, base_cell_id,
        ablations, impl, metric, ratio, ci_low, ci_high, shared. ratio is twin / base of the
        geometric means over processes, with its 95 % interval (summary.ratio_of, paired by
        repeat). shared is True where the twin took the reference's runs of that implementation
        (cells.shared_runs): the ratio is then 1 by construction. Empty without twins.
    """
    rows = []
    twins = runs[~at_reference(runs) & runs["base_cell_id"].isin(set(runs["cell_id"]))]
    for (cell_id, stem, ablations), twin in twins.groupby(
            ["cell_id", "base_cell_id", "ablations"], sort=False):
        for impl in ("static", "dynamic"):
            ablated = twin[twin["impl"] == impl]
            base = runs[(runs["cell_id"] == stem) & (runs["impl"] == impl)]
            shared = bool((ablated["measured_in"] == stem).all())
            for metric in EFFECT_METRICS:
                ratio, low, high = ratio_of(ablated, base, metric)
                rows.append({"cell_id": cell_id, "base_cell_id": stem, "ablations": ablations,
                             "impl": impl, "metric": metric, "ratio": ratio, "ci_low": low,
                             "ci_high": high, "shared": shared})
    return pd.DataFrame(rows, columns=["cell_id", "base_cell_id", "ablations", "impl", "metric",
                                       "ratio", "ci_low", "ci_high", "shared"])


def setup_split(runs: pd.DataFrame) -> pd.DataFrame:
    """Say where the setup goes, from the meta_optimizer ablation.

    Args:
        runs: load.load_results's table.

    Returns:
        One row per cell with a twin differing only in meta_optimizer (among the axes the grid
        varies: ablated_in_grid), and per implementation. Columns cell_id, impl, api, and
        medians over repeats, seconds: graph_construction_s, init_s, first_step_s (with
        Grappler: the cell), first_step_without_grappler_s (its twin), optimisation_s (their
        difference: the first step's graph optimisation), first_100_steps_s (with Grappler);
        then optimisation_share_of_first_100. Empty when the grid has no such twin.
    """
    rows = []
    ablated = ablated_in_grid(runs)
    twins = runs[runs["cell_id"].map(lambda cell: ablated[cell] == ("meta_optimizer",))]
    for stem in dict.fromkeys(twins["base_cell_id"]):
        for impl in ("static", "dynamic"):
            on = runs[(runs["cell_id"] == stem) & (runs["impl"] == impl)]
            off = twins[(twins["base_cell_id"] == stem) & (twins["impl"] == impl)]
            if on.empty or off.empty:
                continue
            optimisation = on["first_step_s"].median() - off["first_step_s"].median()
            first_100 = on["first_100_steps_s"].median()
            rows.append({
                "cell_id": stem, "impl": impl, "api": on["api"].iloc[0],
                "graph_construction_s": on["graph_construction_s"].median(),
                "init_s": on["init_s"].median(),
                "first_step_s": on["first_step_s"].median(),
                "first_step_without_grappler_s": off["first_step_s"].median(),
                "optimisation_s": optimisation,
                "first_100_steps_s": first_100,
                "optimisation_share_of_first_100": optimisation / first_100,
            })
    return pd.DataFrame(rows)


def version_table(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Return the cells the grid ran in more than one TensorFlow version.

    Args:
        summary: summary rows, one per cell.
        runs: load.load_results's table (for the release that ran).

    Returns:
        The summary rows without ablations whose cell ran in several tf_versions, with
        ``stem`` (the cell's id in the default TensorFlow version, cells.Cell) and ``release``
        (the TensorFlow that ran). Sorted by stem, then version. The rows keep summary's
        columns: each implementation's setup and step seconds, the ratios with their
        intervals, the break-even.
    """
    plain = summary[at_reference(summary)].copy()
    plain["stem"] = plain["default_tf_cell_id"]
    several = plain.groupby("stem")["tf_version"].transform("nunique") > 1
    release = runs.groupby("cell_id")["tensorflow_version"].first()
    table = plain[several].assign(release=lambda t: t["cell_id"].map(release),
                                  order=lambda t: t["tf_version"].astype(str).map(tf_version_key))
    return table.sort_values(["stem", "order"], kind="stable").drop(columns="order")


def keras_table(summary: pd.DataFrame, runs: pd.DataFrame, margin: float) -> pd.DataFrame:
    """Return the Keras cells without ablations, with their step decision and compat_v1 ratio.

    In KERAS_APIS, unroll=True is static and unroll=False dynamic. Keras runs the padded length,
    dynamic_rnn the batch's longest sequence.

    Args:
        summary: summary rows, one per cell.
        runs: load.load_results's table.
        margin: the practical margin (config ``margin``).

    Returns:
        The summary rows of KERAS_APIS at their reference, with ``step_decision`` (the step
        ratio's intervals.decide at ``margin``; 'below': unroll=True's steps faster by more than
        it) and ``compat_v1_step_ratio`` with ``_ci_low`` / ``_ci_high``: Keras's unroll=False
        step against dynamic_rnn's in the same cell in compat_v1 (``compat_v1_cell_id``;
        ratio_of of the dynamic runs; NaN without that cell).
    """
    plain = summary[summary["api"].isin(KERAS_APIS) & at_reference(summary)].copy()
    plain["step_decision"] = [decide(low, high, margin) for low, high in zip(
        plain["ratio_median_step_s_ci_low"], plain["ratio_median_step_s_ci_high"])]
    against = []
    for cell_id, stem in zip(plain["cell_id"], plain["compat_v1_cell_id"]):
        ours = runs[(runs["cell_id"] == cell_id) & (runs["impl"] == "dynamic")]
        theirs = runs[(runs["cell_id"] == stem) & (runs["impl"] == "dynamic")]
        against.append(ratio_of(ours, theirs, "median_step_s") if not theirs.empty
                       else (math.nan,) * 3)
    for position, column in enumerate(("compat_v1_step_ratio", "compat_v1_step_ratio_ci_low",
                                       "compat_v1_step_ratio_ci_high")):
        plain[column] = [values[position] for values in against]
    return plain


JAX_HORIZONS = (1_000, 100_000)
"""The step counts 'For JAX users' finds the fastest unroll factor for."""


def unroll_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Return the unroll spectrum of the jax_scan cells.

    A shape is the cells alike but for the unroll axis: those whose only ablation among the
    grid's varied axes is unroll. Unroll 1 is dynamic's runs (from the reference cell, unroll
    max_len); every other factor is a cell's static runs.

    Args:
        summary: summary rows, one per cell.

    Returns:
        One row per shape and unroll factor: ``shape`` (the reference cell's id,
        ``base_cell_id``), ``unroll`` (an int, at most max_len), and the geometric means over
        repeats, seconds, of tracing (graph_construction_s), XLA compilation (optimisation_s),
        setup (everything before the second step) and the median step (median_step_s). Then
        ``total_<N>_s``, the total to each of JAX_HORIZONS steps (setup + N x median step).
        Empty without jax_scan cells.
    """
    ablated = ablated_in_grid(summary)
    jax = summary[(summary["api"] == "jax_scan")
                  & summary["cell_id"].map(lambda cell: set(ablated[cell]) <= {"unroll"})]
    rows = []
    for _, cell in jax.iterrows():
        unroll = str(cell["unroll"])
        impls = [("static", cell["max_len"] if unroll == "max_len" else int(unroll))]
        if unroll == "max_len":
            impls.append(("dynamic", 1))
        for impl, factor in impls:
            row = {"shape": cell["base_cell_id"], "unroll": min(int(factor), int(cell["max_len"])),
                   **{key: cell[f"{impl}_{key}"] for key in (
                       "graph_construction_s", "optimisation_s", "setup_s", "median_step_s")}}
            row.update({f"total_{n}_s": row["setup_s"] + n * row["median_step_s"]
                        for n in JAX_HORIZONS})
            rows.append(row)
    if not rows:
        return pd.DataFrame()
    return (pd.DataFrame(rows).drop_duplicates(["shape", "unroll"])
            .sort_values(["shape", "unroll"]).reset_index(drop=True))


def cold_fetch_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Return the cold hook fetch's cost per cell and implementation.

    Only cells with ``fetches: hooks_cold``.

    Args:
        runs: load.load_results's table.

    Returns:
        Columns cell_id, impl, and medians over repeats, seconds: max_step_s (the slowest
        measured step: the hook fetch set's first run), median_step_s, mean_step_s; then
        n_steps, the measured steps of a run. Empty without such cells.
    """
    cold = runs[runs["fetches"] == "hooks_cold"]
    rows = [{"cell_id": cell_id, "impl": impl, "max_step_s": group["max_step_s"].median(),
             "median_step_s": group["median_step_s"].median(),
             "mean_step_s": group["mean_step_s"].median(),
             "n_steps": int(group["n_steps"].iloc[0])}
            for (cell_id, impl), group in cold.groupby(["cell_id", "impl"], sort=False)]
    return pd.DataFrame(rows, columns=["cell_id", "impl", "max_step_s", "median_step_s",
                                       "mean_step_s", "n_steps"])
