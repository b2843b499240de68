"""Count what one step of each cell type's compat_v1 graph executes (the cost model's counts):

    rnnbench counts [--out FILE]

Builds the training jobs' graphs (rnnbench.measure.graphcounts) of every cell type, static and
dynamic, in training and inference, at two max_len, and writes the table the probe-unit model
reads (default: the committed rnnbench/costmodel/graph_counts.csv). About 10 s. Exit status 0,
or 2 with a one-line message for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from rnnbench.costmodel.machine import COUNTS
from rnnbench.measure.graphcounts import COLUMNS, count_table
from rnnbench.measure.model import import_tf
from rnnbench.pipeline.arguments import given_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench counts``' arguments to ``parser``."""
    parser.add_argument("--out", type=given_path, default=COUNTS,
                        help="the CSV to write (default: %(default)s)")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench counts``: write the table to ``args.out`` and print it.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 2 where --out is a folder.
    """
    out = Path(args.out)
    if out.is_dir():
        print(f"rnnbench counts: --out {out}: a folder, not a file", file=sys.stderr)
        return 2
    table = pd.DataFrame(count_table(import_tf()))[[*COLUMNS, "tf_version"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    print(table.to_markdown(index=False))
    print(f"wrote {out}")
    return 0
