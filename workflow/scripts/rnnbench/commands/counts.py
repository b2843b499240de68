"""Count what one step of each cell type's compat_v1 graph executes (the cost model's counts):

    rnnbench counts [--out FILE]

Builds the training jobs' graphs (rnnbench.measure.graphcounts) of every cell type, static and
dynamic, in training and inference, at two max_len, and writes the table the probe-unit model
reads (default: the committed rnnbench/costmodel/graph_counts.csv). About 10 s. Exit status 0,
or 2 with a one-line message for bad arguments.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rnnbench.costmodel.machine import COUNTS
from rnnbench.measure.graphcounts import COLUMNS, count_table
from rnnbench.measure.model import import_tf
from rnnbench.pipeline.arguments import output_file


def counts_file(text: str) -> Path:
    """The type of --out: a file to write (output_file) that, where it exists, is a counts
    table (its header is graphcounts.COLUMNS'), so that nothing else is overwritten.

    Raises:
        argparse.ArgumentTypeError: naming the path.
    """
    path = output_file(text)
    if path.exists():
        try:
            header = path.read_text().splitlines()[0]
        except (OSError, UnicodeDecodeError, IndexError):
            header = ""
        if not header.startswith(",".join(COLUMNS)):
            raise argparse.ArgumentTypeError(f"{text}: exists and is not a counts table: not "
                                             "overwritten; give another path, or remove it")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench counts``' arguments to ``parser``."""
    parser.add_argument("--out", type=counts_file, default=COUNTS,
                        help="the CSV to write (default: %(default)s); an existing file is "
                             "replaced only where it is a counts table")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench counts``: write the table to ``args.out`` and print it.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status, 0 (bad arguments: 2, from argparse).
    """
    out = Path(args.out)
    table = pd.DataFrame(count_table(import_tf()))[[*COLUMNS, "tf_version"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    print(table.to_markdown(index=False))
    print(f"wrote {out}")
    return 0
