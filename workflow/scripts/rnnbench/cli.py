"""``rnnbench``: the one command for users, with a subcommand per tool (as pyperf and benchopt
do). ./install.sh installs it as ``.venv/bin/rnnbench``; without the install,
``PYTHONPATH=workflow/scripts python3 -m rnnbench ...`` runs the same (on a GPU machine that has
numpy and JAX only: ``rnnbench jax``).

Each subcommand lives in its own module (COMMANDS), which exposes ``add_arguments(parser)``
and ``main(args) -> int`` (the exit status). Only the chosen one is imported, when it runs:
this module imports nothing but the standard library, so ``rnnbench jax`` needs no pandas,
PyYAML, TensorFlow or Snakemake.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "check": (None,
              "check config files as the workflow does before any job (reads the YAML files; "
              "writes nothing)"),
    "compare": ("compare",
                "compare two result sets (reads two runs folders or measurements.csv; writes "
                "OUT/compare.csv, .md, .svg, .html)"),
    "reference": ("reference",
                  "run a reference run (--run main: the main job and the tests; apis; sweep) "
                  "and rewrite its folder under docs/figures/ and the README's answer"),
    "predict": ("predict",
                "predict static and dynamic setup, step, ratio and break-even for a shape not "
                "run, from the cost model fitted to a results folder (reads it; writes "
                "nothing)"),
    "reproduce": ("reproduce",
                  "run the main job twice and compare the verdicts (writes OUTDIR/run1, run2, "
                  "reproducibility.md, .csv)"),
    "scale": ("scale",
              "time aggregation on synthetic results and a large grid's dry run (writes only "
              "temporary folders)"),
    "jax": ("standalone",
            "measure a JSON preset of JAX cells without Snakemake or TensorFlow (reads PRESET; "
            "writes OUT/runs/, OUT/data/, OUT/standalone.json)"),
}
"""Subcommand -> (its module in rnnbench, None for ``check``: this module's; the one line
``rnnbench --help`` lists)."""
CHECK_DOC = """Check config files as the workflow does before any job, without Snakemake:

    rnnbench check [my-grid.yaml ...]

The files are read over config.yaml (the working directory's, else the workflow's), later
files overriding earlier ones' keys, as the workflow reads --configfile files over it.
Use it on a file meant for --configfile: Snakemake reads those before the workflow is read, and
itself reports a missing one with a traceback and a YAML syntax error without its line.
Reads the files; writes nothing. Exit status 0 and a line of what the grid holds, or 1 and the
error."""


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """``rnnbench check``'s arguments."""
    parser.add_argument("configs", nargs="*", default=[], metavar="CONFIG",
                        help="config files, over config.yaml, later ones overriding earlier "
                             "ones' keys (none: config.yaml alone)")


def check(args: argparse.Namespace) -> int:
    """``rnnbench check``: configcheck.check_files' line, or its error; the exit status."""
    from rnnbench.configcheck import check_files

    try:
        _, _, line = check_files(args.configs)
    except ValueError as error:
        print(f"config: {error}", file=sys.stderr)
        return 1
    print(line)
    return 0


def _chosen(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names (its first word not an option), or None."""
    words = [word for word in argv if not word.startswith("-")]
    return words[0] if words and words[0] in COMMANDS else None


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The ``rnnbench`` parser; the subcommand ``argv`` names gets its module's arguments and
    its module docstring as description (the module is imported here: others are not).

    Raises:
        ImportError: when the chosen subcommand's module needs a package this Python lacks.
    """
    parser = argparse.ArgumentParser(
        prog="rnnbench", description=__doc__.split("\n\n")[0],
        epilog="'rnnbench COMMAND --help' says what a command reads and writes.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = _chosen(argv)
    for name, (module_name, summary) in COMMANDS.items():
        if name != chosen:
            subparsers.add_parser(name, help=summary)
            continue
        if module_name is None:
            doc, add_arguments, run = CHECK_DOC, add_check_arguments, check
        else:
            module = importlib.import_module(f"rnnbench.{module_name}")
            doc, add_arguments, run = module.__doc__, module.add_arguments, module.main
        sub = subparsers.add_parser(name, help=summary, description=doc,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        add_arguments(sub)
        sub.set_defaults(_handler=run)  # (a name no command's own argument can take)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``rnnbench`` with ``argv`` (default: the command line); returns the exit status
    (the console script exits with it)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
    except ImportError as error:  # e.g. rnnbench compare on a machine without pandas
        print(f"rnnbench {_chosen(argv)}: {error} (the venv has it: ./install.sh, then "
              ".venv/bin/rnnbench)", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    return args._handler(args)
