"""``rnnbench``: the one command for users, with a subcommand per tool (as pyperf and benchopt
do). ./install.sh installs it as ``.venv/bin/rnnbench``; without the install,
``PYTHONPATH=workflow/scripts python3 -m rnnbench ...`` runs the same (on a GPU machine that has
numpy and JAX only: ``rnnbench jax``).

Each subcommand lives in its own module, ``rnnbench.commands.<name>``. It exposes
``add_arguments(parser)`` and ``main(args) -> int`` (the exit status). Only the chosen one is
imported, when it runs. This module imports nothing but the standard library, so
``rnnbench jax`` needs no pandas, PyYAML, TensorFlow or Snakemake.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = {
    "check": "check config files as the workflow does before any job (reads the YAML files; "
             "writes nothing)",
    "compare": "compare two result sets (reads two runs folders or measurements.csv; writes "
               "OUT/compare.csv, .md, .svg, .html)",
    "reference": "run a reference run (--run main: the main job and the tests; apis; sweep) "
                 "and rewrite its folder under docs/figures/ and the README's answer",
    "predict": "predict static and dynamic setup, step, ratio and break-even for a shape not "
               "run, from the cost model fitted to a results folder (reads it; writes nothing)",
    "reproduce": "run the main job twice and compare the verdicts (writes OUTDIR/run1, run2, "
                 "reproducibility.md, .csv)",
    "scale": "time aggregation on synthetic results and a large grid's dry run (writes only "
             "temporary folders)",
    "probe": "measure this machine's unit costs (loop iteration, cond, op, graph node, "
             "matmul) in about a minute (writes results/probe.json or --out)",
    "counts": "count the nodes, conds and loop iterations one step of each cell type's graph "
              "executes (writes the cost model's graph_counts.csv or --out)",
    "drift": "say how much of the drift between runs of one grid on this machine its probes "
             "and speed checks explain (reads two or more results folders; writes --out)",
    "jax": "measure a JSON preset of JAX cells without Snakemake or TensorFlow (reads PRESET; "
           "writes OUT/runs/, OUT/data/, OUT/standalone.json)",
}
"""Subcommand -> the one line ``rnnbench --help`` lists; its module is
``rnnbench.commands.<subcommand>``."""


def _chosen(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names (its first word not an option), or None."""
    words = [word for word in argv if not word.startswith("-")]
    return words[0] if words and words[0] in COMMANDS else None


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """Build the ``rnnbench`` parser, importing only the chosen subcommand's module.

    Args:
        argv: the command line's words, without the program name. The subcommand it names
            gets its module's arguments, and its module docstring as description. Other
            modules are not imported.

    Returns:
        The parser; a parsed subcommand's ``_handler`` is its module's ``main``.

    Raises:
        ImportError: when the chosen subcommand's module needs a package this Python lacks.
    """
    parser = argparse.ArgumentParser(
        prog="rnnbench", description=__doc__.split("\n\n")[0],
        epilog="'rnnbench COMMAND --help' says what a command reads and writes.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = _chosen(argv)
    for name, summary in COMMANDS.items():
        if name != chosen:
            subparsers.add_parser(name, help=summary)
            continue
        module = importlib.import_module(f"rnnbench.commands.{name}")
        sub = subparsers.add_parser(name, help=summary, description=module.__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(_handler=module.main)  # (a name no command's own argument can take)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``rnnbench`` with ``argv``.

    Args:
        argv: the command line's words, without the program name; None for ``sys.argv[1:]``.

    Returns:
        The exit status, which the console script exits with. 1 when the chosen subcommand's
        module needs a package this Python lacks (the message goes to standard error); 130
        after Ctrl-C, and 143 after a SIGTERM that the command turned into an interrupt
        (jobs.interrupt.sigterm_as_interrupt), each with one line and no traceback; 141
        when the reader of its output went away (a pipe into head), silently.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
    except ImportError as error:  # e.g. rnnbench compare on a machine without pandas
        print(f"rnnbench {_chosen(argv)}: {error} (the venv has it: ./install.sh, then "
              ".venv/bin/rnnbench)", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    try:
        return args._handler(args)
    except KeyboardInterrupt as stop:  # the command's with and finally blocks have run
        terminated = str(stop) == "SIGTERM"  # (jobs.interrupt.TERMINATED: stdlib only here)
        print(f"rnnbench {args.command}: {'terminated' if terminated else 'interrupted'}",
              file=sys.stderr)
        return 143 if terminated else 130
    except BrokenPipeError:  # the reader of its output went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
