"""Measure this machine's unit costs, the terms the cost model is written in, in about a minute:

    rnnbench probe [--out FILE] [--threads N]

A while_loop iteration, a multiply-add pair inside the loop and unrolled, a skipped cond,
graph construction and Session setup per node, the memory a node holds, and matmul rates at
an LSTM step's shapes (forward and gradient), in TF1 graph mode with the training jobs'
threads (docs/cost-model.md, The probe). Writes the record (the unit costs, the machine's
fingerprint as results carry it: load.environment) to FILE (default: results/probe.json)
and prints the unit costs. It takes the machine's measuring lock first, as the workflow's
measuring jobs do (rnnbench/jobs/exclusive.py): it never measures beside them. Exit status 0,
or 2 with a one-line message for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from rnnbench.costmodel.machine import probe_record
from rnnbench.jobs import exclusive
from rnnbench.pipeline.arguments import at_least, output_record

MAX_THREADS = 1024
"""The most threads --threads takes, as the config's intra_op_parallelism_threads."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench probe``'s arguments to ``parser``."""
    parser.add_argument("--out", type=output_record("probe"), default=Path("results/probe.json"),
                        help="where the record goes (default: results/probe.json); an existing "
                             "file is replaced only where it is an earlier probe record")
    parser.add_argument("--threads", default=1,
                        type=at_least(1, maximum=MAX_THREADS, over=" (as the config's "
                                      "intra_op_parallelism_threads)"),
                        help="the Session's intra- and inter-op threads (default 1, as the "
                             "training jobs)")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench probe``: write the record to ``args.out`` and print the unit costs.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 2 with one line where the measuring lock cannot be opened.
    """
    # a measurement: alone on the machine, as every measuring job of the workflow
    try:
        alone = exclusive.measure_alone(lambda line: print(f"probe: {line}", file=sys.stderr))
    except OSError as error:  # a lock no process can open
        print(f"rnnbench probe: {error}", file=sys.stderr)
        return 2
    try:
        result = probe_record(args.threads)
    finally:  # the measurement is over (or stopped): the lock goes, the process may go on
        exclusive.release()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name, value in result["unit_costs"].items():
        unit = "" if name.endswith(("_nodes", "bytes_per_node", "_spread")) else " µs"
        shown = value * 1e6 if unit else value
        print(f"{name:32} {shown:10.3g}{unit}")
    best = np.nanmax([row["forward_flop_per_s"] for row in result["matmul"]])
    print(f"{'matmul forward, best shape':32} {best / 1e9:10.3g} GFLOP/s")
    print(f"{result['environment']}; {result['probe_s']:.0f} s"
          + (f" (after {alone['waited_s']:.0f} s waiting for the measuring lock)"
             if alone["waited_s"] >= 1 else "") + f"; wrote {args.out}")
    return 0
