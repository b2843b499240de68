"""A training job's command line: the rules' shell command and the script's reading of it.

Rules train_static and train_dynamic run ``workflow/scripts/train.py`` as a ``shell:`` command
(TRAIN_COMMAND), not as a ``script:``: Snakemake reads a ``script:``'s source once per job while
it builds the DAG, a cost a dry run of a large grid pays for every job (docs/tests.md,
Aggregation at scale). Both ends of the command line are here, so that they cannot drift
apart; tests/jobs/test_command.py formats the command as Snakemake does and parses it back.
Standard library only: train.py reads it before any framework's import.
"""

from __future__ import annotations

import argparse
import json

TRAIN_COMMAND = (
    "exec {params.python:q} {params.script:q} --rule {params.rule} --impl {params.impl}"
    " --cell-id {wildcards.cell:q} --repeat {wildcards.repeat} --threads {threads}"
    " --mem-mb {resources.mem_mb} --runtime-min {resources.runtime}"
    " --npz {input.npz:q} --sidecar {input.sidecar:q} --result {output.result:q} --log {log:q}"
    " --cell {params.cell:q} --protocol {params.protocol:q} --log-every {params.log_every}"
    " --workflow-meta {params.workflow_meta:q} 2> {log:q}"
)
"""The training rules' ``shell:`` command, in Snakemake's format (``:q`` quotes for the shell).

params.python and params.script are common.smk's TRAIN_PYTHON and TRAIN_SCRIPT; params.cell,
params.protocol and params.workflow_meta are JSON text (as_json). log_every is apart from the
protocol: it changes no measurement (the default profile's rerun triggers leave params out).
Standard error goes to the job's log from the first line on, a failed import's traceback
included. ``exec``: the job replaces the shell, so a signal to the process group cannot end
the shell while the job keeps a written result (interrupt.write_result_whole)."""


def as_json(value) -> str:
    """Return ``value`` as the JSON text a training job's parameter holds (TRAIN_COMMAND).

    Args:
        value: a cell, protocol or workflow record (JSON types only).

    Returns:
        Compact JSON with sorted keys, so that equal values give equal text.

    Raises:
        TypeError: when ``value`` holds something JSON cannot hold.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def parse_train_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """Read a training job's command line (TRAIN_COMMAND, after its interpreter and script).

    Args:
        argv: the arguments; None for ``sys.argv[1:]``.

    Returns:
        The job: rule, impl, cell_id (str), repeat, threads, log_every (int), mem_mb, runtime_min
        (float: MiB, minutes), npz, sidecar, result, log (paths, str) and cell, protocol,
        workflow_meta (dicts, read from JSON).

    Raises:
        SystemExit: status 2, naming the argument, for a missing or unreadable one
            (argparse's error).
    """
    parser = argparse.ArgumentParser(prog="train.py", description=__doc__.splitlines()[0])
    for name in ("rule", "cell-id", "npz", "sidecar", "result", "log"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--impl", required=True, choices=("static", "dynamic"))
    for name in ("repeat", "threads", "log-every"):
        parser.add_argument(f"--{name}", required=True, type=int)
    for name in ("mem-mb", "runtime-min"):
        parser.add_argument(f"--{name}", required=True, type=float)
    for name in ("cell", "protocol", "workflow-meta"):
        parser.add_argument(f"--{name}", required=True, type=_json_object)
    return parser.parse_args(argv)


def _json_object(text: str) -> dict:
    """argparse's type of a JSON object argument: the dict, or ArgumentTypeError."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object: {text[:80]!r}")
    return value
