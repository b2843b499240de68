"""Verdicts on the claims under test (config ``claims``) and results/FINDINGS.md, written only
from measured tables: every number and every verdict below comes from summary.csv and
measurements.csv, nothing is written by hand.

A claim says which implementation is larger on a quantity ("static > dynamic": the
static/dynamic ratio exceeds 1) and may give the seed's own ratio. Per grid cell, the
verdict compares the ratio's 95 % bootstrap interval with 1: it **holds** when the whole
interval lies on the claimed side, **does not hold** when it lies on the other side, and is
**inconclusive** when it contains 1 (or could not be computed).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pandas as pd

from rnnbench.grid import ablation_label, base_cell_id

QUANTITIES = {
    "graph_construction_s": "graph construction time",
    "setup_s": "setup time (graph construction + session setup + first step)",
    "first_100_steps_s": "time to the 100th step (setup + 99 steps)",
    "median_step_s": "steady-state step time",
    "peak_rss_mb": "peak memory (RSS)",
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


def claim_table(summary: pd.DataFrame, claims: list[dict]) -> pd.DataFrame:
    """One row per claim and cell: the ratio, its interval, the verdict, the seed's figure
    and whether our interval contains it (None without a figure), the cell's ablations.

    Raises:
        ValueError: for a claim whose quantity is not in QUANTITIES.
    """
    rows = []
    for claim in claims:
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
                "figure": figure,
                "figure_in_interval": None if figure is None else bool(low <= figure <= high),
                "ablations": ablation_label(cell),
            })
    return pd.DataFrame(rows)


def _ratio(row: pd.Series) -> str:
    return f"{row['ratio']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


def _count(verdicts: pd.Series) -> str:
    counts = verdicts.value_counts()
    return ", ".join(f"{label} in {counts.get(label, 0)}"
                     for label in ("holds", "does not hold", "inconclusive"))


def causes(table: pd.DataFrame) -> list[str]:
    """Sentences on what each ablation changes, per cell with ablation twins.

    A twin is a cell equal to a base cell (all ablations at TensorFlow's defaults) except its
    ablations. With a seed figure f, the share of the gap explained is
    (log r_twin - log r_base) / (log f - log r_base): 1 means the ablation alone moves our
    ratio to the seed's.
    """
    lines = []
    base = table[table["ablations"] == ""]
    for _, twin in table[table["ablations"] != ""].iterrows():
        stem = base_cell_id(twin["cell_id"])
        match = base[base["cell_id"] == stem]
        if match.empty:
            continue
        ref = match.iloc[0]
        line = (f"- `{stem}` with {twin['ablations']}: ratio {_ratio(twin)} ({twin['verdict']}), "
                f"against {_ratio(ref)} ({ref['verdict']}) without")
        figure = twin["figure"]
        if figure is not None and not pd.isna(figure) and ref["ratio"] != figure:
            share = ((math.log(twin["ratio"]) - math.log(ref["ratio"]))
                     / (math.log(figure) - math.log(ref["ratio"])))
            line += f"; it explains {100 * share:.0f} % of the log-ratio gap to the seed's {figure:.2f}"
        lines.append(line + ".")
    return lines


def findings_markdown(summary: pd.DataFrame, runs: pd.DataFrame, claims: list[dict],
                      config: dict) -> str:
    """results/FINDINGS.md: where it was measured, each claim's verdicts with our ratios and
    intervals, what the ablations change, stability flags and break-even, all from the
    tables (summary: results.summarize; runs: results.load_results)."""
    first = runs.iloc[0]
    image = first["image_sha256"]
    out = [
        "# Findings",
        "",
        f"Written by rule `findings` from `results/summary.csv` and `results/measurements.csv` "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC); do not edit, re-run the workflow.",
        "",
        "## Where this was measured",
        "",
        f"TensorFlow {first['tf_version']} on {first['device']} ({first['device_name']}), "
        f"{first['intra_op_parallelism_threads']} intra-op and "
        f"{first['inter_op_parallelism_threads']} inter-op thread(s), Python "
        f"{first['python_version']}, host {first['hostname']}, "
        + (f"Apptainer image sha256 {image[:16]}..." if isinstance(image, str)
           else "no container (bare run)")
        + f". {len(summary)} cells, {config['repeats']} repeats per cell and implementation, "
        f"{config['steps']} measured steps after {config['warmup_steps']} warm-up steps; "
        "ratios are static / dynamic medians with 95 % bootstrap intervals over repeats.",
        "",
        "## Claims",
        "",
    ]
    if not claims:
        out += ["The config lists no claims (`claims:`).", ""]
    table = claim_table(summary, claims) if claims else pd.DataFrame()
    for claim in claims:
        rows = table[table["claim"] == claim["id"]]
        base = rows[rows["ablations"] == ""]
        figure = claim.get("figure")
        out += [
            f"### {claim['id']}: {claim['statement']}",
            "",
            f"Source: {claim['seed']}" + (f" ({claim['conditions']})" if claim.get("conditions")
                                          else "") + ". "
            f"Tested: {QUANTITIES[claim['quantity']]}, {claim['direction']}"
            + (f"; the seed's ratio {figure:.2f}" if figure is not None else "") + ".",
            "",
            f"Without ablations it {_count(base['verdict'])} of {len(base)} cells"
            + (f"; the seed's ratio lies inside our interval in "
               f"{int(base['figure_in_interval'].sum())} of them" if figure is not None else "")
            + ".",
            "",
            "| cell | ablations | static / dynamic [95 % interval] | verdict |",
            "|---|---|---|---|",
        ]
        out += [f"| `{r['cell_id']}` | {r['ablations'] or '-'} | {_ratio(r)} | {r['verdict']} |"
                for _, r in rows.iterrows()]
        lines = causes(rows)
        out += ["", "What the ablations change:" if lines else
                "This grid has no ablation cells for this claim (loop_bound, "
                "pass_sequence_length, meta_optimizer only at TensorFlow's defaults): no cause "
                "is isolated here.", ""] + lines + ([""] if lines else [])
    unstable = summary[summary["unstable"]]["cell_id"].tolist()
    short = summary[summary["warmup_too_short"]]["cell_id"].tolist()
    out += [
        "## Stability",
        "",
        f"{len(unstable)} of {len(summary)} cells are unstable (a run's measured step times "
        f"spread over 5 %, IQR / median)" + (": " + ", ".join(f"`{c}`" for c in unstable)
                                              if unstable else "") + ".",
        f"{len(short)} of {len(summary)} cells had a run whose step times settled only after "
        "the warm-up steps" + (": " + ", ".join(f"`{c}`" for c in short) if short else "") + ".",
        "",
        "## Break-even",
        "",
        "| cell | steps after which static's total time stays below dynamic's [95 % interval] |",
        "|---|---|",
    ]
    for _, cell in summary.iterrows():
        steps = cell["breakeven_steps"]
        text = "never" if pd.isna(steps) else (
            f"{int(steps)} [{cell['breakeven_steps_ci_low']:.0f}, "
            f"{cell['breakeven_steps_ci_high']:.0f}]".replace("inf", "never"))
        out.append(f"| `{cell['cell_id']}` | {text} |")
    return "\n".join(out) + "\n"
