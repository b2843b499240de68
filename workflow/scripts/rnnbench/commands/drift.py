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

from rnnbench.pipeline.arguments import existing_folder, output_folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench drift``' arguments to ``parser``."""
    parser.add_argument("results", type=existing_folder, nargs="+",
                        help="two or more finished runs' results folders (one grid, one machine)")
    parser.add_argument("--out", type=output_folder, default=None,
                        help="a folder for DRIFT.md and drift.csv (default: print only)")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench drift``: print (and with --out write) how much of the drift is explained.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 2 with a one-line message.
    """
    from rnnbench.report import driftpage

    folders = [Path(folder) for folder in args.results]
    try:
        if len(folders) < 2:
            raise ValueError(f"{len(folders)} results folder given: need two or more runs")
        twice = [f for i, f in enumerate(folders) if f.resolve() in
                 {g.resolve() for g in folders[:i]}]
        if twice:
            raise ValueError(f"{twice[0]} given twice: one run's drift against itself is none; "
                             "give each run's folder once")
        runs, probes = driftpage.read_runs(folders)
        tables = driftpage.drift_tables(runs, probes)
    except ValueError as error:
        print(f"rnnbench drift: {error}", file=sys.stderr)
        return 2
    text = driftpage.page(tables, folders, runs)
    if args.out:  # written first: a reader of the output that goes away loses nothing
        driftpage.write(Path(args.out), tables, text)
    print(text)
    if args.out:
        print(f"wrote {Path(args.out) / 'DRIFT.md'} and {Path(args.out) / 'drift.csv'}")
    return 0
