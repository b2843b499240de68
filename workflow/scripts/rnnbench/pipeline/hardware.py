"""What the machine that plans a run has, and whether the jobs run on it.

Checked before any job, dry runs included (common.smk). gpu_names lists the NVIDIA GPUs the
driver shows, with no framework imported. invocation says where this Snakemake's jobs would
run, and whether it runs any. check_device refuses ``device: gpu`` for a local run on a
machine without one; Snakemake alone would fail at the first training job. Standard
library, and Snakemake's parser where invocation runs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

LOCAL_EXECUTORS = ("local", "dryrun", "touch")


def gpu_names(proc: str | Path = "/proc/driver/nvidia/gpus",
              environ: Mapping[str, str] = os.environ) -> list[str]:
    """List the NVIDIA GPUs of this machine, with no framework imported.

    Args:
        proc: the driver's folder of GPUs.
        environ: the environment whose PATH finds nvidia-smi.

    Returns:
        One entry per folder of ``proc``, or, where that folder is absent (a container
        without /proc/driver), per ``GPU <n>: <name>`` line of ``nvidia-smi -L``. [] without
        a driver or a GPU.
    """
    folder = Path(proc)
    if folder.is_dir():
        return sorted(path.name for path in folder.iterdir())
    smi = shutil.which("nvidia-smi", path=environ.get("PATH", os.defpath))
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.splitlines() if line.startswith("GPU ")]


INSPECTING = ("lint", "list_target_rules", "list_rules", "print_compilation", "dag", "rulegraph",
              "filegraph", "d3dag", "generate_unit_tests", "unlock", "cleanup_metadata",
              "conda_cleanup_envs", "conda_create_envs_only", "list_conda_envs",
              "cleanup_shadow", "container_cleanup_images", "list_changes",
              "list_input_changes", "list_params_changes", "list_untracked", "summary",
              "detailed_summary", "archive", "delete_all_output", "delete_temp_output",
              "report", "dryrun", "touch")
"""Snakemake's options (argparse destinations) whose command runs no job: it reads or lists,
and the workflow must not change results/ for it either."""


class Invocation(NamedTuple):
    """What a Snakemake command line asks for.

    Attributes:
        executor: ``local`` where it names none; never ``dryrun``: a dry run names the
            executor its real run would use.
        executes: False for -n, --summary, --dag, --report, --lint and the other INSPECTING
            options.
        report: --report's file as given (relative to the working directory); "" without.
        set_resources: --set-resources, {rule: {resource: value}}.
        set_threads: --set-threads, {rule: threads}.
        cores: --cores as Snakemake parsed it (``all``: this machine's); None where not given.
        jobs: --jobs, likewise.
        config: --config's ``key=value`` texts, in order.
        narrowed: the options that run fewer jobs than the whole workflow (NARROWING), as a
            user writes them (``a named target`` for targets on the command line); ().
        forced: the options that run jobs whose output exists (FORCING); ().
        locks: False under --nolock (Snakemake takes no lock of the working directory).
    """
    executor: str
    executes: bool
    report: str = ""
    set_resources: dict = {}
    set_threads: dict = {}
    cores: int | None = None
    jobs: int | None = None
    config: tuple = ()
    narrowed: tuple = ()
    forced: tuple = ()
    locks: bool = True


NARROWING = {"targets": "a named target", "until": "--until", "omit_from": "--omit-from",
             "allowed_rules": "--allowed-rules", "batch": "--batch"}
"""Snakemake's options (argparse destinations) that run fewer jobs than the whole workflow,
and how a user writes them."""
FORCING = {"forcerun": "--forcerun", "forceall": "--forceall"}
"""Snakemake's options that run jobs whose output exists, and how a user writes them."""


def invocation(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> Invocation:
    """Read a Snakemake command line with Snakemake's own parser.

    While the Snakefile is read, Snakemake has not chosen its executor: ``workflow.local_exec``
    is true and ``workflow.dryrun`` false, even for ``--profile profiles/slurm-gpu -n``. So the
    command line is read again, its profiles (``--profile``, $SNAKEMAKE_PROFILE, the workflow
    profile) and abbreviations included. It is read from the folder Snakemake was started in
    (``$PWD``): a relative --profile is relative to it, not to --directory.

    Args:
        argv: sys.argv of a Snakemake process.
        environ: the environment ($PWD, $SNAKEMAKE_PROFILE).

    Returns:
        An Invocation; Invocation("local", True) where argv cannot be read (Snakemake run
        through its API, not its command line). It raises nothing: Snakemake parsed the same
        argv already.
    """
    import contextlib
    import io

    from snakemake.cli import parse_args

    here = os.getcwd()
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            if environ.get("PWD") and Path(environ["PWD"]).is_dir():
                os.chdir(environ["PWD"])
            _, args = parse_args(list(argv[1:]))
    except (Exception, SystemExit):  # noqa: BLE001 (another caller's argv: not ours to judge)
        return Invocation("local", True)
    finally:
        os.chdir(here)
    executes = not (any(getattr(args, name, None) for name in INSPECTING)
                    or getattr(args, "containerize", None) is not None)
    overrides = {rule: {name: value.raw if value.is_evaluable() else value.value
                        for name, value in given.items()}
                 for rule, given in (getattr(args, "set_resources", None) or {}).items()}
    return Invocation(str(args.executor or "local"), executes, str(args.report or ""), overrides,
                      {rule: value.raw if value.is_evaluable() else value.value for rule, value
                       in (getattr(args, "set_threads", None) or {}).items()},
                      getattr(args, "cores", None), getattr(args, "jobs", None),
                      tuple(getattr(args, "config", None) or ()),
                      *(tuple(word for name, word in options.items() if getattr(args, name, None))
                        for options in (NARROWING, FORCING)),
                      locks=not getattr(args, "nolock", False))


def check_cores(invocation: Invocation) -> None:
    """Refuse --cores or --jobs below 1, with which Snakemake selects no job and waits forever.

    Args:
        invocation: the command line (invocation).

    Raises:
        ValueError: naming the option and its value, and what to give instead.
    """
    for option, value in (("--cores", invocation.cores), ("--jobs", invocation.jobs)):
        if isinstance(value, int) and value < 1:
            raise ValueError(f"{option} {value}: Snakemake would select no job and wait "
                             f"forever: give {option} 1 or more (or all)")


def check_threads(invocation: Invocation) -> None:
    """Refuse --set-threads RULE=N below 1, which Snakemake runs and the result's schema refuses.

    The job would train, then fail as its result is checked (job_threads below 1), losing
    the measurement.

    Args:
        invocation: the command line (invocation).

    Raises:
        ValueError: naming the option as given and the fix.
    """
    for rule, value in invocation.set_threads.items():
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise ValueError(f"--set-threads {rule}={value}: a job needs 1 thread or more")


def oversubscribed(cells: dict[str, dict], cpus: int | None = None) -> str | None:
    """Say where a cell's TensorFlow threads outnumber the CPUs its job may run on.

    Snakemake scales such a job's threads down to --cores without a word, while TensorFlow
    still starts as many threads as the cell asks for: its steps time threads sharing CPUs.

    Args:
        cells: the grid's cells by id (plan.job_threads reads their thread counts).
        cpus: the CPUs a job here may run on; None: this process's (sched_getaffinity(2)).

    Returns:
        One sentence naming the threads, the cells and the CPUs; None where every cell fits.
    """
    from rnnbench.grid.plan import job_threads

    cpus = cpus or len(os.sched_getaffinity(0))
    threads = {cell_id: job_threads(cell) for cell_id, cell in cells.items()}
    over = {cell_id: count for cell_id, count in threads.items() if count > cpus}
    if not over:
        return None
    most = max(over, key=over.get)
    return (f"{len(over)} cell(s) ask for more TensorFlow threads than the {cpus} CPU(s) a job "
            f"has here (intra_op_parallelism_threads or inter_op_parallelism_threads; e.g. "
            f"{over[most]} in {most}): their steps time threads that share CPUs, not what "
            "those threads would do on a machine that has them")


def check_rule_names(invocation: Invocation, rules: set[str]) -> None:
    """Refuse --set-resources or --set-threads for a rule the workflow lacks.

    Snakemake ignores such an override without a word, so a misspelt rule name would leave
    that rule's memory, runtime or threads as the workflow sets them.

    Args:
        invocation: the command line (invocation).
        rules: the names of the workflow's rules.

    Raises:
        ValueError: naming the option, the rule and the rules there are.
    """
    for option, given in (("--set-resources", invocation.set_resources),
                          ("--set-threads", invocation.set_threads)):
        unknown = sorted(set(given) - rules)
        if unknown:
            raise ValueError(f"{option} {unknown[0]}{':' if option == '--set-resources' else '='}"
                             f"...: this workflow has no rule "
                             f"{unknown[0]!r}; its rules: {', '.join(sorted(rules))}")


def check_report_folder(invocation: Invocation) -> None:
    """Refuse --report into a folder that does not exist, before the report is built.

    Snakemake would build the report, then stop with a traceback as it writes the file.

    Args:
        invocation: the command line (invocation); read in the working directory, where
            Snakemake writes a relative report path.

    Raises:
        ValueError: naming the option, the folder and the fix.
    """
    folder = Path(invocation.report).parent
    if invocation.report and not folder.is_dir():
        where = "" if folder.is_absolute() else f" in {os.getcwd()}"
        raise ValueError(f"--report {invocation.report}: there is no folder {folder}{where}: "
                         f"make it first (mkdir -p {shlex.quote(str(folder))}), or name a file "
                         "in a folder that exists")


def check_config_keys(invocation: Invocation) -> None:
    """Refuse a key given twice to --config, which Snakemake merges without a word.

    Args:
        invocation: the command line (invocation).

    Raises:
        ValueError: naming the key and both values (a key given twice in a config file is
            refused the same way).
    """
    given: dict[str, str] = {}
    for text in invocation.config:
        key, _, value = str(text).partition("=")
        if key in given:
            raise ValueError(f"--config: {key} given twice ({key}={given[key]} and "
                             f"{key}={value}): give it once")
        given[key] = value


def check_device(device: str, local: bool, gpus: list[str] | None = None) -> None:
    """Refuse ``device: gpu`` for a local run on a machine whose driver shows no GPU.

    Args:
        device: the config's ``device``.
        local: whether the jobs run on this machine; a cluster run is not checked here, as
            its nodes are not this machine.
        gpus: this machine's GPUs; None: gpu_names, asked only for a local gpu run.

    Raises:
        ValueError: naming the key, the value, how to check and what to do.
    """
    if device != "gpu" or not local:
        return
    if not (gpu_names() if gpus is None else gpus):
        raise ValueError(
            "device: 'gpu', but this machine shows no NVIDIA GPU (no /proc/driver/nvidia/gpus/, "
            "and nvidia-smi -L lists none); check with nvidia-smi -L. Run with device: cpu, on a "
            "machine with an NVIDIA GPU and driver, or through a cluster profile "
            "(profiles/slurm-gpu)")
