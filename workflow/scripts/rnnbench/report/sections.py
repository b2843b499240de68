"""FINDINGS.md's sections for users of one api or one question, in Markdown.

They come from the tables of rnnbench.stats.tables: For Keras users, For JAX users, Across
TensorFlow versions, What each ablation does, Where the setup goes, the fetch-set pitfall and
Stability. rnnbench.report.findings puts them together.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from rnnbench.grid.axes import JAX_APIS
from rnnbench.stats.formats import decision_text, breakeven_text, catch_up_text, column_interval, ratio_text
from rnnbench.results.load import BUSY_OTHERS_SHARE, BUSY_STEAL_SHARE
from rnnbench.measure.steady import DISTURBED_BLOCK_SPREAD, STABILITY_BLOCK
from rnnbench.stats.spread import spread_candidates
from rnnbench.stats.summary import DISAGREEMENT_REPEATS, OUTLIER_FACTOR
from rnnbench.stats.tables import (EFFECT_METRICS, JAX_HORIZONS, cell_labels, cold_fetch_table,
                             keras_table, unroll_table)
from rnnbench.grid.vocabulary import api_words

def effects_section(effects: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """Write FINDINGS' 'What each ablation does' table.

    Args:
        effects: tables.ablation_effects, one row per ablated cell, impl and metric.
        labels: cell id -> its name (tables.cell_labels).

    Returns:
        Markdown lines: an explanation and the table; a sentence where ``effects`` is empty.
    """
    if effects.empty:
        return ["No cell of this grid ablates another (every ablation axis at one value): "
                "nothing to compare.", ""]
    rows = []
    for (cell_id, stem, ablations), group in effects.groupby(
            ["cell_id", "base_cell_id", "ablations"], sort=False):
        values = group.set_index(["impl", "metric"])
        rows.append({"cell": labels.get(stem, stem), "ablation": ablations, **{
            f"{impl} {label}": "same runs" if values.loc[(impl, metric)]["shared"]
            else ratio_text(values.loc[(impl, metric)])
            for impl in ("static", "dynamic") for metric, label in EFFECT_METRICS.items()}})
    return ["Each figure is the ablated cell's geometric mean over its reference cell's (the "
            "same cell with every ablation axis the grid varies at its reference), per "
            "implementation, with its 95 % interval; 'mean step' is total time / steps, what a "
            "loop timed as a whole reports; 'same runs': the ablation leaves that "
            "implementation unchanged, and the cell reuses its reference's runs.", "",
            pd.DataFrame(rows).to_markdown(index=False), ""]


def setup_section(split: pd.DataFrame, labels: dict[str, str],
                  apis: Iterable[str] = ()) -> list[str]:
    """Write FINDINGS' 'Where the setup goes' table.

    Args:
        split: tables.setup_split, one row per cell and impl (seconds, medians over repeats).
        labels: cell id -> its name (tables.cell_labels).
        apis: the grid's apis. Where ``split`` is empty, they say why: axes.JAX_APIS have no
            Grappler (their XLA compilation is timed alone).

    Returns:
        Markdown lines: the table, or a sentence saying why there is none.
    """
    if split.empty:
        if set(apis) and set(apis) <= set(JAX_APIS):
            return ["Not isolated by Grappler: the grid's apis run on JAX, which has none; "
                    "their XLA compilation is timed alone, apart from the first call (the "
                    "setup_split chart, and 'For JAX users').", ""]
        return ["Not isolated: no cell of this grid has a twin with Grappler off "
                "(meta_optimizer on and off).", ""]
    def words(phase: str) -> str:  # in the words of the apis of these cells
        return api_words(split["api"], phase)

    table = pd.DataFrame({
        "cell": split["cell_id"].map(lambda c: labels.get(c, c)), "impl": split["impl"],
        words("graph_construction_s"): split["graph_construction_s"].map("{:.2f}".format),
        words("init_s"): split["init_s"].map("{:.2f}".format),
        words("first_step_s"): split["first_step_s"].map("{:.2f}".format),
        f"{words('first_step_s')} without Grappler": split[
            "first_step_without_grappler_s"].map("{:.2f}".format),
        "graph optimisation": split["optimisation_s"].map("{:.2f}".format),
        "time to the 100th step": split["first_100_steps_s"].map("{:.2f}".format),
        "optimisation's share of it": split["optimisation_share_of_first_100"].map(
            lambda v: f"{100 * v:.0f} %"),
    })
    return ["Medians over repeats, seconds. The first step's graph optimisation is the first "
            "step with Grappler less the first step of the same cell with Grappler off "
            "(meta_optimizer ablation).", "", table.to_markdown(index=False), ""]


def cold_fetch_lines(runs: pd.DataFrame) -> list[str]:
    """Describe the fetch-set pitfall: one sentence per hooks_cold cell and implementation.

    Args:
        runs: measurements.csv, one row per run (tables.cold_fetch_table).

    Returns:
        Markdown list lines: the slowest measured step (the hook fetch set's first run)
        against the median step, and what the mean makes of it. Empty without such cells.
    """
    return [f"- `{row['cell_id']}` {row['impl']}: the hook fetch set's first run, inside the "
            f"timed loop, took {row['max_step_s']:.3f} s against a median step of "
            f"{row['median_step_s']:.4f} s ({row['max_step_s'] / row['median_step_s']:.0f}x); "
            f"over {int(row['n_steps'])} measured steps the mean step is "
            f"{row['mean_step_s'] / row['median_step_s']:.2f}x the median."
            for _, row in cold_fetch_table(runs).iterrows()]


def keras_lines(summary: pd.DataFrame, runs: pd.DataFrame, margin: float,
                labels: dict[str, str] | None = None) -> list[str]:
    """Write 'For Keras users': unroll=True against unroll=False, per Keras cell.

    Per cell of axes.KERAS_APIS without ablations: setup and step ratios with 95 % intervals,
    and break-even. Where the grid has the same cell in compat_v1, also Keras's unroll=False
    step against dynamic_rnn's (tables.keras_table).

    Args:
        summary: summary.csv, one row per cell.
        runs: measurements.csv, one row per run.
        margin: the practical margin the step is decided at.
        labels: cell id -> its name (tables.cell_labels); default: by api, max_len and
            sequence_length.

    Returns:
        One Markdown list line per cell; empty without keras cells.
    """
    lines = []
    plain = keras_table(summary, runs, margin)
    labels = labels or cell_labels(plain, ("api", "max_len", "sequence_length"))
    for _, cell in plain.iterrows():
        setup = (cell["ratio_setup_s"], cell["ratio_setup_s_ci_low"], cell["ratio_setup_s_ci_high"])
        step = (cell["ratio_median_step_s"], cell["ratio_median_step_s_ci_low"],
                cell["ratio_median_step_s_ci_high"])
        phases = ", ".join(api_words([cell["api"]], phase) for phase in (
            "graph_construction_s", "first_step_s", "init_s"))
        line = (f"- {labels[cell['cell_id']]}: unroll=True takes "
                f"{setup[0]:.2f} [{setup[1]:.2f}, {setup[2]:.2f}] times the setup of "
                f"unroll=False ({phases}), its steps "
                f"{step[0]:.2f} [{step[1]:.2f}, {step[2]:.2f}] times as long "
                f"({decision_text(cell['step_decision'], margin, 'unroll=True', 'unroll=False')}); "
                f"it {catch_up_text(cell)}.")
        if not pd.isna(cell["compat_v1_step_ratio"]):
            ratio, low, high = (cell[f"compat_v1_step_ratio{end}"]
                                for end in ("", "_ci_low", "_ci_high"))
            line += (f" Its unroll=False step takes {ratio:.2f} [{low:.2f}, {high:.2f}] times "
                     f"dynamic_rnn's (compat_v1) in the same cell"
                     + (" (JAX against TensorFlow)." if cell["api"] in JAX_APIS else "."))
        lines.append(line)
    return lines


def jax_lines(summary: pd.DataFrame, labels: dict[str, str] | None = None) -> list[str]:
    """Write 'For JAX users': per cell shape, the unroll spectrum as a table.

    Args:
        summary: summary.csv, one row per cell (tables.unroll_table).
        labels: shape -> its name; default: the shape as it is.

    Returns:
        Markdown lines per shape: where the total time to each of JAX_HORIZONS steps is
        lowest (point estimates: geometric means over repeats), then the table. Empty
        without jax_scan cells.
    """
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
                      "XLA compilation (s)": group["optimisation_s"].map("{:.3f}".format),
                      "setup (s)": group["setup_s"].map("{:.3f}".format),
                      "median step (ms)": (1000 * group["median_step_s"]).map("{:.3f}".format),
                      **{f"total to {n:,} steps (s)": group[f"total_{n}_s"].map("{:.4g}".format)
                         for n in JAX_HORIZONS},
                  }).to_markdown(index=False), ""]
    return lines


def version_section(table: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """Write FINDINGS' 'Across TensorFlow versions' table.

    Args:
        table: tables.version_table, one row per cell and TensorFlow release.
        labels: cell stem -> its name.

    Returns:
        The Markdown table, as one string in a list.
    """
    rows = [{
        "cell": labels.get(r["stem"], r["stem"]), "TensorFlow": r["release"],
        "setup s, static / dynamic": f"{r['static_setup_s']:.2f} / {r['dynamic_setup_s']:.2f}",
        "setup ratio": column_interval(r, "ratio_setup_s"),
        "step ms, static / dynamic": f"{1e3 * r['static_median_step_s']:.2f} / "
                                     f"{1e3 * r['dynamic_median_step_s']:.2f}",
        "step ratio": column_interval(r, "ratio_median_step_s"),
        "break-even (steps)": breakeven_text(r) or "never",
    } for _, r in table.iterrows()]
    return [pd.DataFrame(rows).to_markdown(index=False)]


def busy_words(runs: pd.DataFrame) -> str:
    """Say what 'busy' meant for these runs (load._busy).

    Args:
        runs: measurements.csv rows; with others_share recorded, the test was on the CPUs a
            run may use, else machine-wide.

    Returns:
        The thresholds in words.
    """
    if "others_share" in runs and runs["others_share"].notna().any():
        return (f"other processes took over {100 * BUSY_OTHERS_SHARE:g} % of the time of the "
                f"CPUs a run may use, or the hypervisor stole over {100 * BUSY_STEAL_SHARE:g} % "
                "of it")
    return (f"the hypervisor stole over {100 * BUSY_STEAL_SHARE:g} % of the CPU time, or the "
            "1-minute load average exceeded the CPUs")


def overlapped(runs: pd.DataFrame) -> tuple[int, int, str] | None:
    """How many runs another measuring job of this workflow measured beside, under another lock.

    Args:
        runs: measurements.csv rows (load_results: ``others_measuring``,
            ``others_measuring_in``).

    Returns:
        (runs that saw one, runs that looked, the other jobs' folders) over the runs each
        cell measured itself; None where no run looked (results written before).
    """
    if "others_measuring" not in runs:
        return None
    own = runs[runs["measured_in"] == runs["cell_id"]]  # a shared run counts once
    seen = pd.to_numeric(own["others_measuring"], errors="coerce")
    if seen.isna().all():
        return None
    hit = own[seen > 0]
    folders = sorted({folder for text in hit["others_measuring_in"].dropna()
                      for folder in str(text).split("; ")})
    return len(hit), int(seen.notna().sum()), ", ".join(folders)


def overlap_line(runs: pd.DataFrame) -> str | None:
    """FINDINGS' Stability line on the runs measured beside another measuring job (overlapped);
    None where no run looked."""
    found = overlapped(runs)
    if found is None:
        return None
    hit, looked, folders = found
    return ("- Measured while another measuring job of this workflow measured on this machine "
            "under another measuring lock (looked for as each run took its lock and as its "
            "measurement ended, rnnbench/jobs/overlap.py; a job that began and ended within a "
            f"run is seen by its own run only): {hit} of {looked} runs"
            + (f" (the other jobs' folders: {folders})" if hit else "") + ".")


def _disturbed_count(own: pd.DataFrame) -> str:
    """'3 of the 30 runs measured had a disturbed stretch'; where some runs measured fewer
    steps than two blocks (steady.block_spread: None), '0 of the 4 runs long enough to tell
    (8 of 12 measured fewer than 100 steps) had ...'; where none did, 'No run measured the
    100 steps it takes to tell a disturbed stretch'."""
    tested = own["block_spread"].notna() if "block_spread" in own else pd.Series(True, own.index)
    count, need = int(own.loc[tested, "disturbed"].sum()), 2 * STABILITY_BLOCK
    if tested.all():
        return f"{count} of the {len(own)} runs measured had a disturbed stretch"
    if not tested.any():
        return f"No run measured the {need} steps it takes to tell a disturbed stretch"
    return (f"{count} of the {int(tested.sum())} runs long enough to tell ({int((~tested).sum())}"
            f" of {len(own)} measured fewer than {need} steps) had a disturbed stretch")


def stability_lines(summary: pd.DataFrame, runs: pd.DataFrame,
                    labels: dict[str, str] | None = None) -> list[str]:
    """Write FINDINGS' 'Stability' list, each flag with its basis (summary.summarize).

    Flags: cells whose verdicts one process decides, busy or capped runs, disturbed and
    outlier runs, and repeats that disagree.

    Args:
        summary: summary.csv, one row per cell.
        runs: measurements.csv, one row per run.
        labels: cell id -> its name (tables.cell_labels).

    Returns:
        Markdown list lines.
    """
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
        f"- Measured on a busy machine ({busy_words(runs)}): {cells('busy')}.",
        *filter(None, [overlap_line(runs)]),
        f"- Warm-up: still warming up at max_warmup_steps: {cells('warmup_capped')}"
        + ("" if runs["warmup_settled"].notna().any() else " (no settle test ran)") + ".",
        f"- {_disturbed_count(own)} (50-step block medians more than {100 * DISTURBED_BLOCK_SPREAD:.0f} % "
        f"apart; on the development machine an undisturbed process's blocks differed by 2-7 "
        f"%, docs/method.md, Warm-up): a run's median step is robust to slow stretches shorter than "
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
                bool).any() else _no_disagreement(summary)) + ".",
    ] + spread_lines(runs)


def _no_disagreement(summary: pd.DataFrame) -> str:
    """'none', or where some cells have fewer repeats than the test needs
    (summary.disagreeing_repeats, DISAGREEMENT_REPEATS), that it did not test them."""
    few = [column for column in ("static_repeats", "dynamic_repeats") if column in summary]
    untested = int((summary[few].min(axis=1) < DISAGREEMENT_REPEATS).sum()) if few else 0
    if not untested:
        return "none"
    return (f"none found, but {untested} of {len(summary)} cells were not tested (fewer than "
            f"{DISAGREEMENT_REPEATS} repeats of an implementation)")


SPREAD_P = 0.01
"""The p-value under which FINDINGS says a process's step follows a candidate."""


def spread_lines(runs: pd.DataFrame) -> list[str]:
    """FINDINGS' lines on what the spread between a cell's processes follows.

    Args:
        runs: measurements.csv rows.

    Returns:
        A line naming the candidates the step follows (stats.spread.spread_candidates, p
        under SPREAD_P), then the table of every candidate; none where too few runs.
    """
    table = spread_candidates(runs)
    if table.empty:
        return []
    follows = [f"{r['words']} (ρ {r['rho']:+.2f})" for _, r in table.iterrows()
               if r["p"] < SPREAD_P]
    shown = pd.DataFrame({
        "candidate (measurements.csv)": "`" + table["candidate"] + "`: " + table["words"],
        "Spearman's ρ": table["rho"].map("{:+.2f}".format),
        "p": table["p"].map("{:.2g}".format),
        "runs": table["runs"],
        f"follows (p < {SPREAD_P:g})": (table["p"] < SPREAD_P).map({True: "yes", False: "no"}),
    })
    return [f"- What the spread between processes follows (each run's median step and each "
            f"candidate recorded beside it, both relative to its cell's median; docs/method.md, "
            f"Repeats that disagree, where an ablation on a 2-core VM traced the modes to "
            f"where the scheduler put the job's threads): "
            + ("; ".join(follows) if follows else "none of the candidates") + ".", "",
            shown.to_markdown(index=False, disable_numparse=True)]



def probe_lines(peaks: list[dict]) -> list[str]:
    """FINDINGS' lines on the machine's unit costs during the run, one per probe.

    Args:
        peaks: rule peak's records (``probe``: measure.probe.probe's record, or None on a
            GPU; ``tf_version``; ``metadata`` with the threads).

    Returns:
        A line per probe, naming its TensorFlow and threads where there are several; none
        without a probe (older records, a GPU). A unit cost whose slope came out at or below
        zero (a busy machine) is said to be not resolved.
    """
    probes = [peak for peak in peaks if peak.get("probe")]
    lines = []
    for peak in probes:
        costs = peak["probe"]["unit_costs"]

        def us(key: str) -> str:
            # a slope at or below 0: the run at the larger size was not the slower (a busy
            # machine during the probe), so the cost is not resolved
            value = costs[key]
            return f"{1e6 * value:.3g} µs" if value > 0 else "not resolved (slope <= 0)"

        rates = [row["forward_flop_per_s"] / 1e9 for row in peak["probe"]["matmul"]]
        where = (f" (TensorFlow {peak['tf_version']}, "
                 f"{peak['metadata']['intra_op_parallelism_threads']} intra-op threads)"
                 if len(probes) > 1 else "")
        lines.append(
            f"The machine's unit costs during this run{where} (`rnnbench probe`, in rule "
            f"peak's job; docs/cost-model.md, The probe): a while_loop iteration "
            f"{us('while_iteration_s')}; a multiply-add pair {us('loop_op_pair_s')} in the loop "
            f"and {us('op_pair_s')} unrolled; a skipped cond {us('cond_skipped_s')}; "
            f"{us('graph_construction_s_per_node')} of graph construction and "
            f"{us('session_setup_s_per_node')} of Session setup per node; matmul forward "
            f"{min(rates):.3g} to {max(rates):.3g} GFLOP/s. `rnnbench probe` measures another "
            "machine the same way, in under a minute.")
    return lines
