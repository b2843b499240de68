"""Say how much of the drift between runs of one grid on this machine its measures explain:

    rnnbench drift RESULTS RESULTS [RESULTS ...] [--out DIR]

Each RESULTS is a finished run's results folder (measurements.csv and rule peak's probe), all
of one grid on one machine, in one environment. For each implementation's step it prints how
far the runs moved (the standard deviation of their effects) and the share of that drift each
measure explains: the run's probe through the model in the probe's units (the map's
coefficients, docs/figures/probe-map/machine.json), and the jobs' own speed checks (Python,
matmul). Each share has a range from resampling the runs' repeats (rnnbench.costmodel.drift;
docs/cost-model.md, Drift between runs). --out DIR writes them to DIR/DRIFT.md and the shares
to DIR/drift.csv. Exit status 0,
or 2 with a one-line message (a folder without a run or a probe, runs of different
environments or grids).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from rnnbench.costmodel.drift import NOISE_MULTIPLE, PERCENTILES, RESAMPLES
from rnnbench.pipeline.arguments import existing_folder, output_folder

WORDS = {"probe": "the run's probe, through the model",
         "speed_python": "the jobs' Python speed check",
         "speed_matmul": "the jobs' matmul speed check"}
"""Each measure (drift.MEASURES) in words."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench drift``' arguments to ``parser``."""
    parser.add_argument("results", type=existing_folder, nargs="+",
                        help="two or more finished runs' results folders (one grid, one machine)")
    parser.add_argument("--out", type=output_folder, default=None,
                        help="a folder for DRIFT.md and drift.csv (default: print only)")


def _runs(folders: list[Path]) -> tuple[list[pd.DataFrame], list[dict]]:
    """Each folder's measurements.csv rows and rule peak's probe.

    Raises:
        ValueError: naming a folder without them, or runs of different environments or cells.
    """
    from rnnbench.report.machinepage import peak_probe
    from rnnbench.results.load import read_table

    runs, probes = [], []
    for folder in folders:
        if not (folder / "measurements.csv").is_file():
            raise ValueError(f"{folder}: no measurements.csv (not a finished run's results "
                             "folder)")
        runs.append(read_table(folder / "measurements.csv"))
        probes.append(peak_probe(folder)[0])
    seen = {str(f): sorted(set(r["environment"])) for f, r in zip(folders, runs)}
    if len({tuple(v) for v in seen.values()}) > 1:
        raise ValueError(f"runs of different environments are never compared: {seen}")
    if len({frozenset(r["cell_id"]) for r in runs}) > 1:
        raise ValueError("the runs hold different grids' cells: give runs of one config")
    return runs, probes


def page(tables: dict[str, tuple[pd.DataFrame, pd.DataFrame]], folders: list[Path],
         runs: list[pd.DataFrame]) -> str:
    """The Markdown of the tables, two per implementation, and what they cover.

    Args:
        tables: {impl: (drift.drift_table's table, drift.effects_table's)}.
        folders: the runs' results folders, in order.
        runs: their measurements.csv rows (the environment, when each started).

    Returns:
        Markdown text.
    """
    started = [str(r["utc_time"].min()) if "utc_time" in r else "?" for r in runs]
    lines = [f"# Drift between {len(folders)} runs", "",
             f"Written by `rnnbench drift`. Environment: {runs[0]['environment'].iloc[0]}. "
             "Runs: " + ", ".join(f"`{f}` (from {t})" for f, t in zip(folders, started)) + ".",
             ""]
    for impl, (table, effects) in tables.items():
        first = table.iloc[0]
        lines += [f"## {impl}_rnn's step", "",
                  f"Between the runs its step moved by {first['drift_sd']:.1%} (standard "
                  f"deviation of the {int(first['runs'])} runs' effects, over "
                  f"{int(first['cells'])} cells); the repeats' noise alone would move it by "
                  f"about {first['noise_sd']:.1%}.", ""]
        if first["share"] != first["share"]:
            lines += [f"That is under {NOISE_MULTIPLE:g} times the noise: the runs did not "
                      "drift beyond their repeats' own noise, and no measure has a drift to "
                      "explain.", ""]
        else:
            lines += ["Share of that drift each measure explains (1 - missed / total squared "
                      "log effects; below 0: it predicts moves the runs did not make), with "
                      f"its spread over {RESAMPLES} resamples of the repeats (percentiles "
                      f"{PERCENTILES[0]:g}-{PERCENTILES[1]:g}; not a confidence interval: "
                      "docs/cost-model.md, Drift between runs):", "",
                      table.assign(measure=table["measure"].map(WORDS))
                      [["measure", "share", "share_low", "share_high"]]
                      .to_markdown(index=False, floatfmt=".2f"), ""]
        lines += ["Each run's effect (its change against the runs' mean: + is slower) and "
                  "each measure's:", "",
                  effects.rename(columns=WORDS).to_markdown(index=False, floatfmt="+.1%"), ""]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench drift``: print (and with --out write) how much of the drift is explained.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 2 with a one-line message.
    """
    from rnnbench.costmodel.drift import cell_steps, drift_table, effects_table
    from rnnbench.costmodel.machine import MAP_FITS, read_counts, read_machine_fits

    folders = [Path(folder) for folder in args.results]
    try:
        if len(folders) < 2:
            raise ValueError(f"{len(folders)} results folder given: need two or more runs")
        runs, probes = _runs(folders)
        jobs = cell_steps(runs, probes, read_machine_fits(MAP_FITS), read_counts())
    except ValueError as error:
        print(f"rnnbench drift: {error}", file=sys.stderr)
        return 2
    tables = {impl: (drift_table(jobs, impl), effects_table(jobs, impl))
              for impl in ("dynamic", "static")}
    text = page(tables, folders, runs)
    if args.out:  # written first: a reader of the output that goes away loses nothing
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "DRIFT.md").write_text(text + "\n")
        pd.concat([table.assign(impl=impl) for impl, (table, _) in tables.items()]).to_csv(
            out / "drift.csv", index=False)
    print(text)
    if args.out:
        print(f"wrote {out / 'DRIFT.md'} and {out / 'drift.csv'}")
    return 0
