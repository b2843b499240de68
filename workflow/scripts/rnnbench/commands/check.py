"""Check config files as the workflow does before any job, without Snakemake:

    rnnbench check [my-grid.yaml ...]

The files are read over config.yaml (the working directory's, else the workflow's), later
files overriding earlier ones' keys, as the workflow reads --configfile files over it; a
first file named config.yaml is its folder's grid, read over nothing, as
``snakemake --directory FOLDER`` reads it.
Use it on a file meant for --configfile: Snakemake reads those before the workflow is read, and
itself reports a missing one with a traceback and a YAML syntax error without its line.
Reads the files; writes nothing. Exit status 0 and a line of what the grid holds, or 1 and the
error."""

from __future__ import annotations

import argparse
import sys

from rnnbench.grid.configcheck import check_files, config_warnings
from rnnbench.grid.configfiles import layered_files, sources_of
from rnnbench.grid.layout import REPO
from rnnbench.pipeline.container import FLAVOR_OF_DEVICE, deployment_images
from rnnbench.pipeline.hardware import check_device, oversubscribed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench check``'s arguments to ``parser``."""
    parser.add_argument("configs", nargs="*", default=[], metavar="CONFIG",
                        help="config files, over config.yaml, later ones overriding earlier "
                             "ones' keys (none: config.yaml alone; a first one named "
                             "config.yaml: its folder's grid, over nothing)")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench check``.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 1 with the error printed. The workflow's warnings are printed
        too (configcheck.config_warnings, hardware.oversubscribed). A config that a local run here
        would refuse but a cluster run may take (device: gpu on a machine without a GPU), or
        a bare run would refuse but a run in the images may take (a tf_version other than the
        venv's), gets a note on standard error, and status 0.
    """
    try:
        config, cells, line = check_files(args.configs)
    except ValueError as error:  # and which file set each key it names
        _, files = layered_files(args.configs, REPO)
        print(f"config: {error}{sources_of(str(error), files)}", file=sys.stderr)
        return 1
    for warning in [*config_warnings(config, cells), oversubscribed(cells)]:
        if warning:  # as the workflow says them, before any job
            print(f"config: {warning}", file=sys.stderr)
    try:
        check_device(config["device"], local=True)
    except ValueError as error:
        print(f"config: a local run here refuses it: {error}", file=sys.stderr)
    try:
        deployment_images(set(), REPO, FLAVOR_OF_DEVICE[config["device"]], config["device"],
                          sorted({cell["tf_version"] for cell in cells.values()}), {})
    except ValueError as error:
        print(f"config: a bare run here refuses it: {error}", file=sys.stderr)
    print(line)
    return 0
