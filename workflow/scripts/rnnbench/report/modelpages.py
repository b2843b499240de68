"""The cost model's committed runs and the pages written from them.

- The model fitted to the reference map (docs/figures/map/).
- Its predictions for the held-out run, written before it runs
  (docs/figures/heldout/predicted.csv), and their check (VALIDATION.md).
- On the public claims of docs/presets.md, one sentence per claim a preset ran: what the
  model predicts against what the preset measured. ``rnnbench reference --run map`` writes
  the block; tests/commands/test_predict.py checks it.
- The README's paragraph on why (map_paragraph).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rnnbench.costmodel.fit import ratio_prediction, shape_rows
from rnnbench.stats.formats import interval_text
from rnnbench.results.load import read_table
from rnnbench.grid.layout import REPO

MAP = ("presets/reference-map.yaml", "docs/figures/map")
HELDOUT = ("presets/reference-heldout.yaml", "docs/figures/heldout")
"""The cost model's two reference runs: config and folder (report.readme.REFERENCE_RUNS)."""

BEGIN = "<!-- cost model: written by rnnbench reference --run map -->"
END = "<!-- cost model end -->"
CLAIMS = (
    ("The batch trend (tensorflow#9527: dynamic_rnn catches up as the batch grows)",
     "case-batch-trend", [8, 64, 256], "batch_size"),
    ("Long sequences (tensorflow#18705 saw dynamic_rnn 2x slower at max_len 380 on a GPU; "
     "the preset: max_len 100, full length)",
     "case-dynamic-sequence-length", ["full"], "sequence_length"),
    ("Short sequences (the seed's 20 of 300 steps; the preset: 20 of 100)",
     "case-dynamic-sequence-length", ["20"], "sequence_length"),
)
"""Each public claim a preset ran: its words, the preset's folder under docs/presets/, and
the values of the axis that pick its cells (at their reference ablations)."""


def _cells(summary: pd.DataFrame, axis: str, values: list) -> pd.DataFrame:
    """The summary's reference cells whose ``axis`` takes ``values``, in that order."""
    plain = summary[summary["cell_id"] == summary["base_cell_id"]]
    wanted = [str(v) for v in values]
    return plain[plain[axis].astype(str).isin(wanted)].sort_values(
        axis, key=lambda column: column.astype(str).map(wanted.index))


def claim_sentences(pair: dict, repo: Path, machine: str) -> list[str]:
    """Write one sentence per CLAIMS entry: the model's step ratio against the preset's.

    Per preset cell: the model's static/dynamic step ratio with its 95 % interval (for the
    medians of as many runs as the preset ran), against the ratio the preset measured, and
    whether the shape is off the map.

    Args:
        pair: the map's fit, {impl: Fit} (map_fit).
        repo: the repository root; the presets' summary.csv are read from docs/presets/.
        machine: unused (the page names only the presets' machine).

    Returns:
        Markdown lines, with an intro and a closing line on the GPU claims.
    """
    from rnnbench.costmodel.fit import extrapolates

    out = []
    for words, case, values, axis in CLAIMS:
        summary = read_table(repo / "docs" / "presets" / case / "summary.csv")
        parts, off = [], []
        for _, cell in _cells(summary, axis, values).iterrows():
            length = (cell["max_len"] if cell["sequence_length"] == "full"
                      else int(cell["sequence_length"]))
            shape = shape_rows(cell["cell"], cell["batch_size"], cell["num_units"],
                               cell["input_dim"], cell["max_len"], length)
            model = ratio_prediction(pair, shape, runs=int(cell["static_repeats"])).iloc[0]
            parts.append(f"{axis.replace('_', ' ')} {cell[axis]}: "
                         f"{interval_text(model['ratio'], model['low'], model['high'])} "
                         f"predicted, {cell['ratio_median_step_s']:.2f} measured")
            off += extrapolates(pair["static"], shape)
        out.append(f"- **{words}**, [{case}](presets/{case}/FINDINGS.md): "
                   + "; ".join(parts) + "."
                   + (f" Off the map ({'; '.join(dict.fromkeys(off))}): an extrapolation."
                      if off else ""))
    del machine  # (this page names the presets' machine only: the map's is the README's)
    return ["The cost model fitted to the [reference map](figures/map/FINDINGS.md) "
            "(on the README's machine) predicts each case's static_rnn / dynamic_rnn step ratio; the "
            "presets ran on the Xeon, so machine and model differ at once:", "", *out, "",
            "The GPU claims (the blog post's 3.8x, tensorflow#18705's 2x at batch 60, "
            "max_len 380, 512 units) need a map run on a GPU: no GPU was lent here."]


def block(pair: dict, repo: Path, machine: str) -> str:
    """Write the docs/presets.md block, BEGIN and END included (claim_sentences between).

    Args:
        pair: the map's fit, {impl: Fit} (map_fit).
        repo: the repository root.
        machine: passed to claim_sentences.

    Returns:
        The block's text.
    """
    return "\n".join([BEGIN, *claim_sentences(pair, repo, machine), END])


def replace_block(text: str, new: str) -> str:
    """Replace the BEGIN..END block of ``text`` with ``new``.

    Args:
        text: the page's text.
        new: the new block, BEGIN and END included (block).

    Returns:
        ``text`` with the block replaced; where it has none, ``new`` appended under a heading
        "What the cost model says about these claims".
    """
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return text.rstrip("\n") + "\n\n## What the cost model says about these claims\n\n" + \
            new + "\n"
    return text[:start] + new + text[end + len(END):]


def map_paragraph(runs: pd.DataFrame, validated: pd.DataFrame | None, where: str) -> str:
    """Write the README's paragraph on why, from the cost model fitted to the map's runs.

    Args:
        runs: the map's measurements.csv rows; their first fitted group is used.
        validated: the held-out validation table, or None (why.answer_sentences).
        where: '' or ' (measured on ...)', put after the map's shape count.

    Returns:
        The paragraph (why.answer_sentences), with links and a ``rnnbench predict`` example.
    """
    from rnnbench.costmodel.fit import fit_groups
    from rnnbench.report.why import answer_sentences

    return (f"Why, from a cost model fitted to a map of {runs['cell_id'].nunique()} shapes"
            f"{where} ([its FINDINGS](docs/figures/map/FINDINGS.md), "
            "[the crossover chart](docs/figures/map/crossover.svg)).\n"
            + "\n".join(answer_sentences(fit_groups(runs)[0], runs, validated))
            + " For a shape nobody ran: `.venv/bin/rnnbench predict --batch 64 --units 256 "
            "--max-len 100 --length 40 --steps 10000` (from the map, in about a second).")


def map_fit(repo: Path = REPO) -> dict:
    """Fit the cost model to the committed map's runs (costmodel.fit_groups).

    Args:
        repo: the repository root; the map's measurements.csv is read from it.

    Returns:
        The one fitted group, {impl: Fit}.

    Raises:
        ValueError: where the map has no fitted group, or more than one.
    """
    from rnnbench.costmodel.fit import fit_groups

    pairs = fit_groups(read_table(repo / MAP[1] / "measurements.csv"))
    if len(pairs) != 1:
        raise ValueError(f"the map's runs give {len(pairs)} fitted groups; expected 1")
    return pairs[0]


def write_predictions(path: Path, repo: Path = REPO) -> None:
    """Write the map's predictions for the held-out preset's cells, before they run.

    Args:
        path: the CSV file to write (costmodel.check.predicted_table).
        repo: the repository root; the held-out preset and the map are read from it.

    Raises:
        ValueError: for a held-out preset that fails the config checks
            (configcheck.check_files), or a map without one fitted group (map_fit).
    """
    from rnnbench.grid.configcheck import check_files
    from rnnbench.costmodel.check import predicted_table

    config, cells, _ = check_files([repo / HELDOUT[0]])
    predicted_table(map_fit(repo), cells, config["repeats"]).to_csv(path, index=False)


def validation_page(runs: pd.DataFrame, repo: Path = REPO) -> str:
    """Write docs/figures/heldout/VALIDATION.md: the held-out predictions against the runs.

    The page holds the validation (costmodel.check), where each run was measured (environment
    and the fastest matmul throughput reached), and the steps' error beside the ratios'. Where
    runs were flagged busy, it adds the same check without them.

    Args:
        runs: the held-out run's measurements.csv rows.
        repo: the repository root; predicted.csv and the map's runs are read from it.

    Returns:
        The page's Markdown text.
    """
    from rnnbench.report.sections import busy_words
    from rnnbench.costmodel.fit import quiet_runs
    from rnnbench.costmodel.check import error_words, step_error, validation, validation_markdown

    predicted = read_table(repo / HELDOUT[1] / "predicted.csv")
    table = validation(predicted, runs)
    fitted = read_table(repo / MAP[1] / "measurements.csv")

    def where(measured: pd.DataFrame) -> str:
        return (f"{' / '.join(sorted(set(measured['environment'])))}, its matmuls at up to "
                f"{measured['achieved_flop_per_s'].max() / 1e9:.0f} GFLOP/s")

    steps = step_error(table)
    busy = ~quiet_runs(runs)
    quiet = runs[~busy]
    whole = quiet.groupby("cell_id")["impl"].nunique() == 2
    intro = ("Written by `rnnbench reference --run heldout`: the map's model "
             "(docs/figures/map/) predicted these cells (predicted.csv, committed before they "
             f"ran); here is what they measured. The map ran on {where(fitted)}; these cells "
             f"on {where(runs)}."
             + (" Their fingerprints read alike: the runs did not yet record the CPU's vector "
                "units (metadata.cpu_simd does now)." if set(fitted["environment"]) == set(
                    runs["environment"]) else "")
             + f" Each implementation's predicted step is {abs(steps):.0%} "
             + ("shorter" if steps < 0 else "longer") + " than the measured one at the "
             "median (errors below are predicted / measured - 1): a step's time is its "
             "machine's, and the model is fitted to one; a ratio is measured within one run, "
             "on one machine.")
    page = validation_markdown(table, "The cost model on cells it was not fitted to", intro)
    if busy.any():
        page += (f"\n{int(busy.sum())} of {len(runs)} runs were flagged busy "
                 f"({busy_words(runs)}). Without them" + (
                     f" ({int(whole.sum())} cells keep runs of both implementations, "
                     f"{int(quiet['cell_id'].isin(whole[whole].index).sum())} runs): "
                     + error_words(validation(predicted[predicted["cell_id"].isin(
                         whole[whole].index)], quiet)) + ".\n" if whole.any() else
                     ", no cell keeps runs of both implementations: nothing to check.\n"))
    return page
