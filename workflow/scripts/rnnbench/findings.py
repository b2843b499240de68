"""Verdicts on the claims under test (config ``claims``) and results/FINDINGS.md, written only
from measured tables: every number and every verdict below comes from summary.csv and
measurements.csv, nothing is written by hand.

A claim says which implementation is larger on a quantity ("static > dynamic": the
static/dynamic ratio exceeds 1) and may give the seed's own ratio. Per grid cell, the
verdict compares the ratio's 95 % interval (rnnbench/intervals.py: a paired t-interval on
the log ratio over fresh processes) with 1: it **holds** when the whole interval lies on the
claimed side, **does not hold** when it lies on the other side, and is **inconclusive** when
it contains 1 (or could not be computed).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Iterable

import pandas as pd

from rnnbench.claims import judge
from rnnbench import grid
from rnnbench.grid import ABLATION_DEFAULTS, RATIO_CLAIM_API, tf_version_key
from rnnbench.intervals import MIN_REPEATS
from rnnbench.results import BUSY_STEAL_SHARE, OUTLIER_FACTOR, ratio_of
from rnnbench.scaling import scaling_section, scaling_table
from rnnbench.steady import DISTURBED_BLOCK_SPREAD, SETTLE_BLOCK

QUANTITIES = {
    "graph_construction_s": "graph construction time",
    "setup_s": "setup time (graph construction + session setup + first step)",
    "first_100_steps_s": "time to the 100th step (setup + 99 steps)",
    "median_step_s": "steady-state step time",
    "peak_rss_mb": "peak memory (RSS)",
    "first_step_s": "first step (graph optimisation, executor creation, one step)",
}
"""Quantities a claim can be about: summary columns ``ratio_<quantity>`` (static / dynamic)."""
DIRECTIONS = ("static > dynamic", "static < dynamic")


def verdict(direction: str, low: float, high: float) -> str:
    """'holds', 'does not hold' or 'inconclusive' for a claimed direction, from the 95 %
    interval [low, high] of the static/dynamic ratio (see the module docstring). An interval
    that touches 1 is inconclusive; a NaN bound (fewer than 2 repeats) is inconclusive.

    Raises:
        ValueError: for a direction not in DIRECTIONS.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: {direction!r} is not one of {DIRECTIONS}")
    if math.isnan(low) or math.isnan(high):
        return "inconclusive"
    above, below = low > 1, high < 1
    if direction == "static > dynamic":
        return "holds" if above else "does not hold" if below else "inconclusive"
    return "holds" if below else "does not hold" if above else "inconclusive"


CLAIM_COLUMNS = ["claim", "cell_id", "quantity", "direction", "ratio", "ci_low", "ci_high",
                 "verdict", "fragile", "figure", "figure_in_interval", "ablations",
                 "base_cell_id", "reference"]


def claim_table(summary: pd.DataFrame, claims: list[dict]) -> pd.DataFrame:
    """One row per claim and compat_v1 cell (the seeds' claims are about static_rnn and
    dynamic_rnn; the keras apis have their own section): the ratio, its interval, the
    verdict, ``fragile`` (one process decides it: the quantity is among the cell's
    results.fragile_metrics), the seed's figure and whether our interval contains it (None
    without a figure), the cell's ablations.

    Raises:
        ValueError: for a claim whose quantity is not in QUANTITIES.
    """
    rows = []
    summary = summary[summary["api"] == RATIO_CLAIM_API]
    for claim in claims:
        if claim.get("kind", "ratio") != "ratio":
            continue  # rnnbench.claims judges the other kinds
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
                "verdict": verdict(claim["direction"], low, high),
                "fragile": quantity in str(cell.get("fragile", "")).split(", "),
                "figure": figure,
                "figure_in_interval": None if figure is None else bool(low <= figure <= high),
                "ablations": cell["ablations"],
                "base_cell_id": cell["base_cell_id"],
                # no ablation, or the cell it ablates is not in the grid (e.g. every cell
                # runs 2 threads): a reference cell, not a twin
                "reference": cell["ablations"] == ""
                or cell["base_cell_id"] not in set(summary["cell_id"]),
            })
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


LABEL_AXES = ("cell", "api", "tf_version", "batch_size", "max_len", "sequence_length",
              "num_units", "input_dim")
"""The cell axes a label may name (cell_labels), in this order."""


def _axis_words(axis: str, value) -> str:
    if axis == "sequence_length":
        value = str(value)
        if value == "full":
            return "full-length sequences"
        if value.startswith("u"):
            return f"sequence_length uniform {value[1:]}"
    if axis in ("cell", "api"):
        return str(value)
    if axis == "tf_version":
        return f"TensorFlow {value}"
    return f"{axis} {value}"


def cell_labels(summary: pd.DataFrame, axes: tuple[str, ...] = LABEL_AXES) -> dict[str, str]:
    """cell_id -> the cell in words, by what tells it apart in its grid: the LABEL_AXES that
    (or ``axes``) take more than one value among ``summary``'s cells ('max_len 24,
    sequence_length 2'),
    then its ablations ('dynamic loops to max_len'); in a grid where no axis varies, its
    max_len and sequence_length. Two cells that the words do not tell apart (hand-made
    tables) get their ids added."""
    varied = [axis for axis in axes
              if axis in summary and summary[axis].astype(str).nunique() > 1]
    shown = varied or ["max_len", "sequence_length"]
    out = {}
    for _, cell in summary.iterrows():
        words = [_axis_words(axis, cell[axis]) for axis in shown]
        if isinstance(cell.get("ablations"), str) and cell["ablations"]:
            words.append(cell["ablations"])
        out[cell["cell_id"]] = ", ".join(words)
    seen = pd.Series(list(out.values())).value_counts()
    return {cid: f"{label} ({cid})" if seen[label] > 1 else label for cid, label in out.items()}


def bottom_line(table: pd.DataFrame, claims: list[dict], labels: dict[str, str]) -> list[str]:
    """FINDINGS' first section: one sentence per claim: its verdicts over the reference cells
    (counts and the range of ratios), the seed's figure against our intervals, and the cause
    where the grid isolates one: an ablation under which the verdict changes, with the share
    of the log-ratio gap to the seed's figure it explains (causes).

    ``table``: claim_table; ``labels``: cell_labels."""
    lines = []
    for claim in claims:
        rows = table[table["claim"] == claim["id"]]
        if rows.empty:
            continue
        base = rows[rows["reference"]]
        said = _count(base["verdict"])
        low, high = base["ratio"].min(), base["ratio"].max()
        span = f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"
        line = f"- **{claim['id']}**, \"{claim['statement']}\": {said} (static / dynamic {span})"
        figure = claim.get("figure")
        if figure is not None:
            inside = int(base["figure_in_interval"].sum())
            line += (f"; the seed's {figure:.2f} lies inside {inside} of our intervals"
                     if inside else f"; the seed's {figure:.2f} lies outside every interval")
        for _, twin in rows[~rows["reference"]].iterrows():
            ref = rows[rows["cell_id"] == twin["base_cell_id"]]
            if ref.empty or ref.iloc[0]["verdict"] == twin["verdict"]:
                continue
            ref = ref.iloc[0]
            line += (f"; with {twin['ablations']} it {twin['verdict']} in "
                     f"{labels[ref['cell_id']]} ({_ratio(twin)} against {_ratio(ref)})")
            if figure is not None and ref["ratio"] != figure:
                share = gap_share(twin["ratio"], ref["ratio"], figure)
                line += f": the cause of {100 * share:.0f} % of the gap to the seed's figure"
        lines.append(line + ".")
    return lines


def _other_claim_test(claim: dict) -> str:
    """What a between, trend or law claim tests, in words (rnnbench.claims)."""
    kind, quantity = claim["kind"], QUANTITIES[claim["quantity"]]
    if kind == "between":
        return (f"{claim['impl']} {quantity} at {claim['axis']} {claim['values'][0]} against "
                f"{claim['values'][1]}, {claim['direction']} (Welch's 95 % interval of the ratio)")
    if kind == "trend":
        return (f"the static / dynamic ratio of the {quantity} along {claim['axis']}, "
                f"{claim['direction']} (the 95 % interval of the slope of its log)")
    if "form" in claim:
        return (f"{claim['impl']} {quantity} linear in {claim['axis']} (a line that fits the "
                "repeats, rising)")
    return (f"{claim['impl']} {quantity} reaches {claim['value']:g} at {claim['axis']} "
            f"{claim['at']:g} (within the line's 95 % prediction interval)")


def _other_claim_line(claim: dict, verdicts: list[dict]) -> str:
    """The bottom line of a between, trend or law claim: its verdicts, and the first
    estimate."""
    if not verdicts:
        return (f"- **{claim['id']}**, \"{claim['statement']}\": not judged, no group of cells "
                "in this grid has what it needs.")
    said = _count(pd.Series([v["verdict"] for v in verdicts]),
                  ("group of cells", "groups of cells"))
    return (f"- **{claim['id']}**, \"{claim['statement']}\": {said} "
            f"({verdicts[0]['estimate']}{'; ...' if len(verdicts) > 1 else ''}).")


def interval_text(estimate: float, low: float, high: float) -> str:
    """'1.49 [1.16, 1.90]': two decimals, or as many more (up to 5) as it takes to show that
    an interval which is not a single point is one ('1.222 [1.222, 1.223]', not '1.22 [1.22,
    1.22]')."""
    digits = 2
    point = math.isnan(low) or math.isclose(low, high, rel_tol=1e-9)
    while digits < 5 and not point and f"{low:.{digits}f}" == f"{high:.{digits}f}":
        digits += 1
    return f"{estimate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _ratio(row: pd.Series) -> str:
    return interval_text(row["ratio"], row["ci_low"], row["ci_high"])


def column_interval(row: pd.Series, column: str) -> str:
    """interval_text of a table's ``column`` and its ``<column>_ci_low`` / ``_ci_high``."""
    return interval_text(row[column], row[f"{column}_ci_low"], row[f"{column}_ci_high"])


def _threads(runs: pd.DataFrame) -> str:
    """'1 intra-op and 1 inter-op thread(s)', or every combination the grid ran."""
    pairs = runs[["intra_op_parallelism_threads", "inter_op_parallelism_threads"]]
    pairs = sorted(set(map(tuple, pairs.to_numpy().tolist())))
    return " or ".join(f"{intra} intra-op and {inter} inter-op thread(s)" for intra, inter in pairs)


def _count(verdicts: pd.Series, units: tuple[str, str] = ("cell", "cells")) -> str:
    """The verdicts over ``units`` (singular, plural) in words: 'over 3 cells it holds in 1, is inconclusive in
    2' where they differ; 'it holds in the one cell', '... in both cells', '... in all 4
    cells' where they agree."""
    counts = verdicts.value_counts()
    verb = {label: f"{'is ' * (label == 'inconclusive')}{label}" for label in counts.index}
    n = len(verdicts)
    if len(counts) == 1:
        every = "the one" if n == 1 else "both" if n == 2 else f"all {n}"
        return f"it {verb[counts.index[0]]} in {every} {units[n != 1]}"
    return f"over {n} {units[1]} it " + ", ".join(
        f"{verb[label]} in {counts[label]}" for label in ("holds", "does not hold", "inconclusive")
        if counts.get(label, 0))


def gap_share(ablated: float, reference: float, figure: float) -> float:
    """The share of the log-ratio gap between our ``reference`` ratio and a seed's ``figure``
    that an ablation closes, moving our ratio to ``ablated``: (log ablated - log reference) /
    (log figure - log reference); 1 means the ablation alone moves our ratio to the seed's.
    Raises ZeroDivisionError when reference == figure (no gap)."""
    return ((math.log(ablated) - math.log(reference))
            / (math.log(figure) - math.log(reference)))


def causes(table: pd.DataFrame, labels: dict[str, str] | None = None) -> list[str]:
    """Sentences on what each ablation changes, per cell with ablation twins (named by
    ``labels``, cell_labels; by id without).

    A twin is a cell equal to a base cell (all ablations at TensorFlow's defaults) except its
    ablations. With a seed figure f, the share of the gap explained is
    (log r_twin - log r_base) / (log f - log r_base): 1 means the ablation alone moves our
    ratio to the seed's.
    """
    lines = []
    for _, twin in table[~table["reference"]].iterrows():
        stem = twin["base_cell_id"]
        ref = table[table["cell_id"] == stem].iloc[0]
        name = (labels or {}).get(stem, f"`{stem}`")
        line = (f"- {name} with {twin['ablations']}: ratio {_ratio(twin)} ({twin['verdict']}), "
                f"against {_ratio(ref)} ({ref['verdict']}) without")
        figure = twin["figure"]
        if figure is not None and not pd.isna(figure) and ref["ratio"] != figure:
            share = gap_share(twin["ratio"], ref["ratio"], figure)
            line += f"; it explains {100 * share:.0f} % of the log-ratio gap to the seed's {figure:.2f}"
        lines.append(line + ".")
    return lines


EFFECT_METRICS = {"setup_s": "setup", "median_step_s": "median step",
                  "mean_step_s": "mean step", "peak_rss_mb": "peak RSS"}
"""What ablation_effects compares between a twin and its base cell (measurements columns)."""


def ablation_effects(runs: pd.DataFrame) -> pd.DataFrame:
    """What each ablation does to each implementation on its own: per twin cell (a cell
    whose reference cell, ``base_cell_id``, is in ``runs``), implementation and
    EFFECT_METRICS column, the ratio twin / base of the geometric means over processes with
    its 95 % interval (results.ratio_of, paired by repeat). ``shared`` is True where the twin
    took the reference's runs of that implementation (grid.shared_runs): the ratio is then 1
    by construction.

    ``runs``: results.load_results's table (after share_runs). Returns columns cell_id,
    base_cell_id, ablations, impl, metric, ratio, ci_low, ci_high, shared; empty without
    twins.
    """
    rows = []
    twins = runs[(runs["ablations"] != "") & runs["base_cell_id"].isin(set(runs["cell_id"]))]
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


def _effects_section(effects: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """FINDINGS' 'What each ablation does' table from ablation_effects."""
    if effects.empty:
        return ["No cell of this grid ablates another (every ablation axis at one value): "
                "nothing to compare.", ""]
    rows = []
    for (cell_id, stem, ablations), group in effects.groupby(
            ["cell_id", "base_cell_id", "ablations"], sort=False):
        values = group.set_index(["impl", "metric"])
        rows.append({"cell": labels.get(stem, stem), "ablation": ablations, **{
            f"{impl} {label}": "same runs" if values.loc[(impl, metric)]["shared"]
            else _ratio(values.loc[(impl, metric)])
            for impl in ("static", "dynamic") for metric, label in EFFECT_METRICS.items()}})
    return ["Each figure is the ablated cell's geometric mean over its reference cell's (the "
            "same cell with every ablation axis the grid varies at its reference), per "
            "implementation, with its 95 % interval; 'mean step' is total time / steps, what a "
            "loop timed as a whole reports; 'same runs': the ablation leaves that "
            "implementation unchanged, and the cell reuses its reference's runs.", "",
            pd.DataFrame(rows).to_markdown(index=False), ""]
def setup_split(runs: pd.DataFrame) -> pd.DataFrame:
    """Where the setup goes, from the meta_optimizer ablation: per cell that has a twin
    differing only in meta_optimizer "off", and per implementation, the medians over repeats
    (seconds) of graph construction, session setup, the first step with Grappler (the cell)
    and without (its twin), their difference (the first step's graph optimisation), the time
    to the 100th step with Grappler, and the optimisation's share of it.

    ``runs``: results.load_results's table. Empty when the grid has no such twin.
    """
    rows = []
    twins = runs[runs["ablations"] == "no Grappler"]
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
                "session_setup_s": on["session_setup_s"].median(),
                "first_step_s": on["first_step_s"].median(),
                "first_step_without_grappler_s": off["first_step_s"].median(),
                "graph_optimisation_s": optimisation,
                "first_100_steps_s": first_100,
                "optimisation_share_of_first_100": optimisation / first_100,
            })
    return pd.DataFrame(rows)


def _setup_section(split: pd.DataFrame, labels: dict[str, str],
                   apis: Iterable[str] = ()) -> list[str]:
    """FINDINGS' 'Where the setup goes' from setup_split; ``apis``, the grid's, say why it
    is empty: no Grappler in grid.JAX_APIS (their XLA compilation is timed alone)."""
    if split.empty:
        if set(apis) and set(apis) <= set(grid.JAX_APIS):
            return ["Not isolated by Grappler: the grid's apis run on JAX, which has none; "
                    "their XLA compilation is timed alone, apart from the first call (the "
                    "setup_split chart, and 'For JAX users').", ""]
        return ["Not isolated: no cell of this grid has a twin with Grappler off "
                "(meta_optimizer on and off).", ""]
    def words(phase: str) -> str:  # in the words of the apis of these cells
        return grid.api_words(split["api"], phase)

    table = pd.DataFrame({
        "cell": split["cell_id"].map(lambda c: labels.get(c, c)), "impl": split["impl"],
        words("graph_construction_s"): split["graph_construction_s"].map("{:.2f}".format),
        words("session_setup_s"): split["session_setup_s"].map("{:.2f}".format),
        words("first_step_s"): split["first_step_s"].map("{:.2f}".format),
        f"{words('first_step_s')} without Grappler": split[
            "first_step_without_grappler_s"].map("{:.2f}".format),
        "graph optimisation": split["graph_optimisation_s"].map("{:.2f}".format),
        "time to the 100th step": split["first_100_steps_s"].map("{:.2f}".format),
        "optimisation's share of it": split["optimisation_share_of_first_100"].map(
            lambda v: f"{100 * v:.0f} %"),
    })
    return ["Medians over repeats, seconds. The first step's graph optimisation is the first "
            "step with Grappler less the first step of the same cell with Grappler off "
            "(meta_optimizer ablation).", "", table.to_markdown(index=False), ""]
def _cold_fetch_lines(runs: pd.DataFrame) -> list[str]:
    """One sentence per hooks_cold cell and implementation: the slowest measured step (the
    hook fetch set's first run) against the median step, and what the mean makes of it."""
    lines = []
    cold = runs[runs["fetches"] == "hooks_cold"]
    for (cell_id, impl), group in cold.groupby(["cell_id", "impl"], sort=False):
        slowest, median = group["max_step_s"].median(), group["median_step_s"].median()
        mean = group["mean_step_s"].median()
        lines.append(
            f"- `{cell_id}` {impl}: the hook fetch set's first run, inside the timed loop, "
            f"took {slowest:.3f} s against a median step of {median:.4f} s "
            f"({slowest / median:.0f}x); over {int(group['n_steps'].iloc[0])} measured steps "
            f"the mean step is {mean / median:.2f}x the median.")
    return lines


def _breakeven(cell: pd.Series) -> str | None:
    """A summary row's break-even steps with their interval ('1818 [1777, never]'); None
    for never."""
    steps = cell["breakeven_steps"]
    if pd.isna(steps):
        return None
    return (f"{int(steps)} [{cell['breakeven_steps_ci_low']:.0f}, "
            f"{cell['breakeven_steps_ci_high']:.0f}]").replace("inf", "never")


def _breakeven_text(cell: pd.Series) -> str:
    steps = _breakeven(cell)
    return "never catches up" if steps is None else f"catches up after {steps} steps"


SPEED = {"holds": "faster", "does not hold": "slower", "inconclusive": "no clear difference"}


KERAS_APIS = ("keras", "keras_xla", "keras_jax")
"""The apis of 'For Keras users' (keras_lines): a Keras layer, unroll=True against False."""


def keras_lines(summary: pd.DataFrame, runs: pd.DataFrame,
                labels: dict[str, str] | None = None) -> list[str]:
    """'For Keras users': per cell of KERAS_APIS without ablations, unroll=True (static)
    against unroll=False (dynamic): setup and step ratios with 95 % intervals and break-even;
    and, where the grid has the same cell in compat_v1, Keras's unroll=False step against
    dynamic_rnn's (Keras runs the padded length, dynamic_rnn the batch's longest sequence).
    Cells are named by ``labels`` (cell_labels; default: by api, max_len and
    sequence_length). Empty without keras cells."""
    lines = []
    plain = summary[summary["api"].isin(KERAS_APIS) & (summary["ablations"] == "")]
    labels = labels or cell_labels(plain, ("api", "max_len", "sequence_length"))
    for _, cell in plain.iterrows():
        setup = (cell["ratio_setup_s"], cell["ratio_setup_s_ci_low"], cell["ratio_setup_s_ci_high"])
        step = (cell["ratio_median_step_s"], cell["ratio_median_step_s_ci_low"],
                cell["ratio_median_step_s_ci_high"])
        phases = ", ".join(grid.api_words([cell["api"]], phase) for phase in (
            "graph_construction_s", "first_step_s", "session_setup_s"))
        line = (f"- {labels[cell['cell_id']]}: unroll=True takes "
                f"{setup[0]:.2f} [{setup[1]:.2f}, {setup[2]:.2f}] times the setup of "
                f"unroll=False ({phases}), its steps "
                f"{step[0]:.2f} [{step[1]:.2f}, {step[2]:.2f}] times as long "
                f"({SPEED[verdict('static < dynamic', step[1], step[2])]}); "
                f"it {_breakeven_text(cell)}.")
        stem = cell["compat_v1_cell_id"]  # the same cell in compat_v1 (grid.Cell)
        ours = runs[(runs["cell_id"] == cell["cell_id"]) & (runs["impl"] == "dynamic")]
        theirs = runs[(runs["cell_id"] == stem) & (runs["impl"] == "dynamic")]
        if not theirs.empty:
            ratio, low, high = ratio_of(ours, theirs, "median_step_s")
            line += (f" Its unroll=False step takes {ratio:.2f} [{low:.2f}, {high:.2f}] times "
                     f"dynamic_rnn's (compat_v1) in the same cell"
                     + (" (JAX against TensorFlow)." if cell["api"] in grid.JAX_APIS else "."))
        lines.append(line)
    return lines


JAX_HORIZONS = (1_000, 100_000)
"""The step counts 'For JAX users' finds the fastest unroll factor for."""


def unroll_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The unroll spectrum of the jax_scan cells: per cell shape (the cells alike but for the
    unroll axis, named by the id of the one at unroll max_len) and unroll factor, the geometric means over repeats of tracing, XLA compilation,
    setup (everything before the second step) and the median step (seconds), and the total
    to each of JAX_HORIZONS steps (setup + N x median step). unroll 1 is dynamic's runs (from
    the reference cell); every other factor a cell's static runs. ``shape`` is the group's
    cell id at the reference; ``unroll`` an int. Empty without jax_scan cells."""
    jax = summary[(summary["api"] == "jax_scan")
                  & summary["ablations"].map(lambda a: all(
                      part.startswith("static at scan unroll=") for part in a.split(", ")
                      if part))]
    rows = []
    for _, cell in jax.iterrows():
        unroll = str(cell["unroll"])
        shape = cell["cell_id"].removesuffix(f"_u{unroll}")  # grid.cell_id's last suffix
        impls = [("static", cell["max_len"] if unroll == "max_len" else int(unroll))]
        if unroll == "max_len":
            impls.append(("dynamic", 1))
        for impl, factor in impls:
            row = {"shape": shape, "unroll": min(int(factor), int(cell["max_len"])),
                   **{key: cell[f"{impl}_{key}"] for key in (
                       "graph_construction_s", "graph_optimisation_s", "setup_s",
                       "median_step_s")}}
            row.update({f"total_{n}_s": row["setup_s"] + n * row["median_step_s"]
                        for n in JAX_HORIZONS})
            rows.append(row)
    if not rows:
        return pd.DataFrame()
    return (pd.DataFrame(rows).drop_duplicates(["shape", "unroll"])
            .sort_values(["shape", "unroll"]).reset_index(drop=True))


def jax_lines(summary: pd.DataFrame, labels: dict[str, str] | None = None) -> list[str]:
    """'For JAX users': per cell shape, the unroll spectrum (unroll_table) as a table, and
    where on it the total time to each of JAX_HORIZONS steps is lowest (point estimates:
    geometric means over repeats). Empty without jax_scan cells."""
    table = unroll_table(summary)
    if table.empty:
        return []
    labels = labels or {}
    lines = []
    for shape, group in table.groupby("shape", sort=False):
        best = {n: group.loc[group[f"total_{n}_s"].idxmin()] for n in JAX_HORIZONS}
        lines += [f"**{labels.get(shape, shape)}**: the total time to "
                  + " and to ".join(f"{n:,} steps is lowest at unroll {int(row['unroll'])} "
                                    f"({row[f'total_{n}_s']:.3g} s)" for n, row in best.items())
                  + ".", "",
                  pd.DataFrame({
                      "unroll": group["unroll"].astype(int),
                      "tracing and lowering (s)": group["graph_construction_s"].map("{:.3f}".format),
                      "XLA compilation (s)": group["graph_optimisation_s"].map("{:.3f}".format),
                      "setup (s)": group["setup_s"].map("{:.3f}".format),
                      "median step (ms)": (1000 * group["median_step_s"]).map("{:.3f}".format),
                      **{f"total to {n:,} steps (s)": group[f"total_{n}_s"].map("{:.4g}".format)
                         for n in JAX_HORIZONS},
                  }).to_markdown(index=False), ""]
    return lines


def _warmup_text(config: dict, runs: pd.DataFrame) -> str:
    """How the runs warmed up: detected (steady.warm_up) or, without room for the settle test,
    a fixed number of steps."""
    if runs["warmup_settled"].isna().all():
        return (f"a fixed warm-up of {config['warmup_steps']} steps (max_warmup_steps "
                f"{config['max_warmup_steps']} leaves no room for the settle test, which needs "
                f"{2 * SETTLE_BLOCK})")
    return (f"a warm-up of at least {config['warmup_steps']} steps that went on until the step "
            f"times had settled (at most {config['max_warmup_steps']}; the longest needed "
            f"{int(runs['warmup_steps_run'].max())})")


def stability_lines(summary: pd.DataFrame, runs: pd.DataFrame,
                    labels: dict[str, str] | None = None) -> list[str]:
    """FINDINGS' 'Stability': cells whose verdicts one process decides, busy or capped runs,
    disturbed and outlier runs, repeats that disagree, each with its basis (results.summarize);
    cells named by ``labels`` (cell_labels)."""
    labels = labels or {}
    def cells(flag: str) -> str:
        flagged = summary[summary[flag]]
        return f"{len(flagged)} of {len(summary)} cells" + (
            ": " + ", ".join(f"`{c}`" + (f" ({f})" if flag == "unstable" else "")
                             for c, f in zip(flagged["cell_id"], flagged["fragile"]))
            if len(flagged) else "")

    own = runs[runs["measured_in"] == runs["cell_id"]]  # a shared run counts once
    outliers = int(summary["outlier_runs"].sum())
    return [
        f"- Unstable, a verdict one process decides (leaving out one repeat moves a ratio's "
        f"interval to the other side of 1, or onto it; the ratios named): {cells('unstable')}.",
        f"- Measured on a busy machine (the hypervisor stole over {100 * BUSY_STEAL_SHARE:g} % "
        f"of the CPU time, or the 1-minute load average exceeded the CPUs): {cells('busy')}.",
        f"- Warm-up: still warming up at max_warmup_steps: {cells('warmup_capped')}"
        + ("" if runs["warmup_settled"].notna().any() else " (no settle test ran)") + ".",
        f"- {int(own['disturbed'].sum())} of the {len(own)} runs measured had a disturbed "
        f"stretch (50-step block medians more than {100 * DISTURBED_BLOCK_SPREAD:.0f} % "
        f"apart; on the development machine an undisturbed process's blocks differed by 2-7 "
        f"%, rnnbench/steady.py): a run's median step is robust to slow stretches shorter than "
        f"half its steps, and the intervals carry the spread between runs. Outliers (a median "
        f"step over {OUTLIER_FACTOR:g}x or under 1/{OUTLIER_FACTOR:g} of its cell's median "
        f"run): {outliers} "
        f"run{'' if outliers == 1 else 's'}.",
        "- Repeats that disagree (their median steps fall into groups more than "
        f"{OUTLIER_FACTOR:g}x apart: bimodal, or one far from the rest; the intervals of such "
        "a cell rest on few processes): " + (
            "; ".join(f"{labels.get(c, c)} ({groups})" for c, groups in
                      zip(summary["cell_id"], summary["disagreeing_repeats"]) if groups)
            if "disagreeing_repeats" in summary and summary["disagreeing_repeats"].astype(
                bool).any() else "none") + ".",
    ]


def _hosts(runs: pd.DataFrame) -> str:
    """'host vm', or, where runs came from several environments or hosts, each environment
    (results.environment) with its hosts and run count."""
    own = runs.drop_duplicates("path") if "path" in runs else runs
    if own["environment"].nunique() == 1 and own["hostname"].nunique() == 1:
        return f"host {own['hostname'].iloc[0]}"
    return "environments (each cell's runs come from one; never pooled): " + "; ".join(
        f"{env}, host(s) {', '.join(sorted(set(group['hostname'])))}: {len(group)} runs"
        for env, group in own.groupby("environment", sort=True))


def _software(runs: pd.DataFrame) -> str:
    """'TensorFlow 2.21.0 (Keras 3.15.1), JAX 0.10.2 (Keras 3.15.1)', one entry per release
    the runs used (JAX for the runs of grid.JAX_APIS, which import no TensorFlow; Keras
    where a keras api ran on it), and the Apptainer images' sha256 (or 'no container')."""
    parts = []
    for framework, column in (("TensorFlow", "tensorflow_version"), ("JAX", "jax_version")):
        for release, group in runs.groupby(column, sort=True):
            keras = sorted(set(group["keras_version"].dropna()))
            parts.append(f"{framework} {release}"
                         + (f" (Keras {', '.join(keras)})" if keras else ""))
    images = sorted(set(runs["image_sha256"].dropna()))
    where = ("no container (bare run)" if not images else "Apptainer image" + (
        "s" if len(images) > 1 else "") + " sha256 " + ", ".join(f"{i[:16]}..." for i in images))
    return ", ".join(parts) + "; " + where


def version_table(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The cells (without ablations) that the grid ran in more than one TensorFlow version:
    per cell and tf_version, the release that ran, each implementation's median setup and
    step seconds, the static / dynamic ratios with their intervals and the break-even. Column
    ``stem`` is the cell's id in the default TensorFlow version (grid.Cell), ``release``
    the TensorFlow that ran."""
    plain = summary[summary["ablations"] == ""].copy()
    plain["stem"] = plain["default_tf_cell_id"]
    several = plain.groupby("stem")["tf_version"].transform("nunique") > 1
    release = runs.groupby("cell_id")["tensorflow_version"].first()
    table = plain[several].assign(release=lambda t: t["cell_id"].map(release),
                                  order=lambda t: t["tf_version"].astype(str).map(tf_version_key))
    return table.sort_values(["stem", "order"], kind="stable").drop(columns="order")


def _version_section(table: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    rows = [{
        "cell": labels.get(r["stem"], r["stem"]), "TensorFlow": r["release"],
        "setup s, static / dynamic": f"{r['static_setup_s']:.2f} / {r['dynamic_setup_s']:.2f}",
        "setup ratio": column_interval(r, "ratio_setup_s"),
        "step ms, static / dynamic": f"{1e3 * r['static_median_step_s']:.2f} / "
                                     f"{1e3 * r['dynamic_median_step_s']:.2f}",
        "step ratio": column_interval(r, "ratio_median_step_s"),
        "break-even (steps)": _breakeven(r) or "never",
    } for _, r in table.iterrows()]
    return [pd.DataFrame(rows).to_markdown(index=False)]


def findings_markdown(summary: pd.DataFrame, runs: pd.DataFrame, claims: list[dict],
                      config: dict) -> str:
    """results/FINDINGS.md: the bottom line (a sentence per claim), where it was measured,
    each claim's verdicts with our ratios and intervals, what the ablations change, stability
    flags and break-even, and the cells' ids; all from the tables (summary:
    results.summarize; runs: results.load_results). Cells are named by what tells them apart
    (cell_labels); tables are pandas' to_markdown."""
    first = runs.iloc[0]
    labels = cell_labels(summary)
    table = claim_table(summary, claims)
    out = [
        "# Findings",
        "",
        f"Written by rule `findings` from `results/summary.csv` and `results/measurements.csv` "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC); do not edit, re-run the workflow.",
        "",
        "## Bottom line",
        "",
    ]
    if not claims:
        out += ["The config lists no claims (`claims:`)."]
    elif table.empty and any(c.get("kind", "ratio") == "ratio" for c in claims):
        ids = ", ".join(f"**{c['id']}**" for c in claims if c.get("kind", "ratio") == "ratio")
        out += [f"Not judged: {ids}. These claims compare static_rnn with dynamic_rnn, which "
                "needs an `api: compat_v1` cell: this grid has none to test them on."]
        claims = [c for c in claims if c.get("kind", "ratio") != "ratio"]
    ratio_claims = [c for c in claims if c.get("kind", "ratio") == "ratio"]
    others = {c["id"]: judge(c, runs) for c in claims if c.get("kind", "ratio") != "ratio"}
    out += bottom_line(table, ratio_claims, labels)
    for claim in claims:
        if claim["id"] in others:
            out.append(_other_claim_line(claim, others[claim["id"]]))
    if ratio_claims and table["reference"].all():
        out += ["", "No cell of this grid ablates another (the ablation axes at one value "
                "each): no cause is isolated here."]
    out += [
        "",
        "## Where this was measured",
        "",
        f"{_software(runs)}; on {first['device']} ({first['device_name']}), "
        f"{_threads(runs)}, Python {first['python_version']}, " + _hosts(runs)
        + f". {len(summary)} cells, {config['repeats']} repeats per cell and implementation, "
        f"each a fresh process measuring at least {config['steps']} steps and at least "
        f"{config.get('min_measure_s', 0):g} s ({int(runs['n_steps'].min())} to "
        f"{int(runs['n_steps'].max())} steps) after " + _warmup_text(config, runs) + ".",
        "",
        "How to read the numbers: each run gives one value (its setup seconds, the median of "
        "its measured step times, its peak RSS); a cell's figure is the geometric mean of its "
        "runs' values, and a static / dynamic ratio the ratio of geometric means, each with a "
        "95 % t-interval on the log scale over processes, paired by repeat (the workflow runs "
        "the static and dynamic runs of a repeat next to each other, which cancels the "
        "machine's drift; a resumed run, or one a cell shares with its reference, is paired "
        "by its repeat all the same); "
        "break-even intervals invert the paired t-test (Fieller). The method and its source "
        "(Kalibera and Jones, ISMM 2013; Welch 1947; Fieller 1954) are in "
        "`workflow/scripts/rnnbench/intervals.py`, and a simulation test shows its 95 % "
        "intervals cover 95 % at these repeats"
        + ("" if config["repeats"] >= MIN_REPEATS else
           f"; with {config['repeats']} repeats, below {MIN_REPEATS}, they do not") + ".",
        "",
    ]
    if claims:
        out += ["## Claims", ""]
    for claim in claims:
        if claim["id"] in others:
            verdicts = pd.DataFrame(others[claim["id"]], columns=["scope", "estimate", "verdict"])
            out += [f"### {claim['id']}: {claim['statement']}", "",
                    f"Source: {claim['seed']}" + (f" ({claim['conditions']})"
                                                  if claim.get("conditions") else "") + ". "
                    f"Tested: {_other_claim_test(claim)}.", "",
                    verdicts.to_markdown(index=False) if len(verdicts) else
                    "No group of cells in this grid has what the claim needs.", ""]
            continue
        rows = table[table["claim"] == claim["id"]]
        figure = claim.get("figure")
        verdicts = pd.DataFrame({
            "cell": rows["cell_id"].map(labels),
            "static / dynamic [95 % interval]": [_ratio(r) for _, r in rows.iterrows()],
            "verdict": [r["verdict"] + (" (one process decides it)" if r["fragile"] else "")
                        for _, r in rows.iterrows()],
        })
        out += [
            f"### {claim['id']}: {claim['statement']}",
            "",
            f"Source: {claim['seed']}" + (f" ({claim['conditions']})" if claim.get("conditions")
                                          else "") + ". "
            f"Tested: {QUANTITIES[claim['quantity']]}, {claim['direction']}"
            + (f"; the seed's ratio {figure:.2f}" if figure is not None else "") + ".",
            "",
            verdicts.to_markdown(index=False),
        ]
        if rows["fragile"].any():
            out += ["", "*One process decides it*: leaving out one repeat moves the interval "
                    "across 1 or onto it, so another run of the job may give another verdict "
                    "for that cell."]
        lines = causes(rows, labels)
        out += (["", "What the ablations change:", ""] + lines if lines else []) + [""]
    keras = keras_lines(summary, runs, labels)
    if keras:
        out += ["## For Keras users", "",
                "A Keras LSTM / GRU layer, unroll=True against unroll=False (api keras: its "
                "step in a tf.function; keras_xla: with jit_compile=True; keras_jax: on "
                "Keras's JAX backend, in a jax.jit step), measured as above (same device, "
                "threads, data and initial weights; mode inference times the forward pass "
                "alone). Keras runs the whole padded length either way, masked: the loop-bound "
                "saving of dynamic_rnn does not apply.", "",
                *keras, ""]
    jax = jax_lines(summary, labels)
    if jax:
        out += ["## For JAX users", "",
                "The model written in JAX (api jax_scan: jax.lax.scan, a jit-compiled train "
                "step, TF1's Adam), its scan at each unroll factor the grid lists (1: dynamic's "
                "loop; max_len: fully unrolled, static's reference), measured as above; the "
                "scan runs the padded length, masked. Totals are setup + N x the median step, "
                "from geometric means over repeats (point estimates; the ratios with intervals "
                "are in the tables below).", ""] + jax
    versions = version_table(summary, runs)
    if not versions.empty:
        out += ["## Across TensorFlow versions", "",
                "The same cells (without ablations) in each TensorFlow version the grid lists, "
                "each version in its own image (`tf_version`), measured in this run; ratios "
                "are static / dynamic medians with 95 % intervals.", ""]
        out += _version_section(versions, cell_labels(
            summary, tuple(axis for axis in LABEL_AXES if axis != "tf_version"))) + [""]
    out += ["## What each ablation does", ""] + _effects_section(ablation_effects(runs), labels)
    cold = _cold_fetch_lines(runs)
    if cold:
        out += ["The fetch-set pitfall (`fetches: hooks_cold`; medians over repeats):", ""]
        out += cold + [""]
    out += ["## Where the setup goes", ""] + _setup_section(setup_split(runs), labels,
                                                            summary["api"])
    out += ["## Scaling laws", ""] + scaling_section(
        scaling_table(runs, config.get("extrapolate") or {}))
    out += ["## Stability", ""] + stability_lines(summary, runs, labels) + [""]
    breakeven = pd.DataFrame({
        "cell": summary["cell_id"].map(labels),
        "steps after which static's total time stays below dynamic's [95 % interval]":
            [_breakeven(cell) or "never" for _, cell in summary.iterrows()]})
    ids = pd.DataFrame({"cell": summary["cell_id"].map(labels),
                        "cell id (results/runs/<protocol>/<id>/)": "`" + summary["cell_id"] + "`"})
    out += ["## Break-even", "", breakeven.to_markdown(index=False), "",
            "## Cells", "", ids.to_markdown(index=False)]
    return "\n".join(out) + "\n"
