"""Other measuring jobs of this workflow on the machine, whatever measuring lock they take.

The measuring lock (rnnbench.jobs.exclusive) keeps apart only the jobs that take the same
file: a run given another ``RNNBENCH_MEASURING_LOCK`` measures beside this one unseen by it.
So a measuring job also looks, at its start and at its end, for processes that run one of
this workflow's measuring scripts (``workflow/scripts/train.py``; Snakemake runs rule peak's
script as ``.snakemake/scripts/tmpXXXX.peak.py``) and hold an exclusive ``flock`` (``/proc/locks``):
those measure now. A job still waiting for a lock does not measure yet, and is not counted;
nor are this process, its parents (Snakemake, a container's shell) and its children (its
watchdog). Standard library only; Linux's ``/proc``: elsewhere it finds none.
"""

from __future__ import annotations

import os
from pathlib import Path

from rnnbench.jobs import interrupt

MEASURING_SCRIPTS = ("train", "peak")
"""The workflow's scripts that measure (workflow/scripts/<name>.py): rules train_*, peak."""
PROC_LOCKS = "/proc/locks"
"""The kernel's table of the file locks held (and waited for) on the machine (proc(5))."""


def flock_holders(table: str) -> dict[int, set[str]]:
    """Read the exclusive ``flock`` locks held now from a ``/proc/locks`` text.

    Args:
        table: the text of ``/proc/locks``: one lock a line, ``N: FLOCK ADVISORY WRITE pid
            major:minor:inode start end``; a line with ``->`` after the number is a process
            waiting for that lock, which holds nothing.

    Returns:
        {pid: the locked files, as ``major:minor:inode`` (device numbers in hex)}.
    """
    held: dict[int, set[str]] = {}
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1:4] != ["FLOCK", "ADVISORY", "WRITE"]:
            continue
        try:
            held.setdefault(int(fields[4]), set()).add(fields[5])
        except ValueError:  # a pid the kernel cannot map into this namespace
            continue
    return held


def read_flock_holders(locks: str = PROC_LOCKS) -> dict[int, set[str]]:
    """flock_holders of the machine's ``/proc/locks``; {} where it cannot be read."""
    try:
        return flock_holders(Path(locks).read_text())
    except OSError:
        return {}


def file_key(path: str | Path) -> str | None:
    """How ``/proc/locks`` names the file ``path`` (``major:minor:inode``); None if absent."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"


def measuring_script(pid: int) -> str | None:
    """Return which measuring script process ``pid`` runs (MEASURING_SCRIPTS), or None.

    Args:
        pid: the process; its arguments are read from ``/proc/PID/cmdline``.

    Returns:
        The script's name (``train``, ``peak``) where an argument is the script,
        ``.../workflow/scripts/<name>.py`` (a shell: rule's), or Snakemake's copy of it,
        ``.../.snakemake/scripts/tmp*.<name>.py`` (a script: rule's); None otherwise, or when
        it is gone.
    """
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    for arg in (Path(raw.decode(errors="replace")) for raw in argv):
        for name in MEASURING_SCRIPTS:
            if arg.parent.parts[-2:] == ("workflow", "scripts") and arg.name == f"{name}.py":
                return name
            if (arg.parent.parts[-2:] == (".snakemake", "scripts") and arg.name.startswith("tmp")
                    and arg.name.endswith(f".{name}.py")):
                return name
    return None


def folder_of(pid: int) -> str | None:
    """The working folder of process ``pid`` (its run's folder); None where unreadable."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def ancestors(pid: int) -> set[int]:
    """The pids of the parents of process ``pid``, up to the first process."""
    found: set[int] = set()
    parent = interrupt.parent_pid(pid)
    while parent and parent > 1 and parent not in found:
        found.add(parent)
        parent = interrupt.parent_pid(parent)
    return found


def others_measuring(me: int | None = None, locks: str = PROC_LOCKS) -> list[dict]:
    """List the other measuring jobs of this workflow that measure on this machine now.

    Args:
        me: the asking process (default this one); it, its parents and its children are left
            out.
        locks: the kernel's lock table (PROC_LOCKS).

    Returns:
        One ``{"pid", "job", "folder"}`` per process that runs a measuring script
        (measuring_script: ``job``) and holds an exclusive flock (read_flock_holders), with
        its working folder (None where unreadable), by pid; [] where none (or no ``/proc``).
    """
    me = os.getpid() if me is None else me
    family = ancestors(me) | {me}
    found = []
    for pid in sorted(set(read_flock_holders(locks)) - family):
        job = measuring_script(pid)
        if job is None or me in ancestors(pid):
            continue
        found.append({"pid": pid, "job": job, "folder": folder_of(pid)})
    return found


def words(others: list[dict]) -> str:
    """'pid 123 (train, in /home/a/run2)' for each of ``others`` (others_measuring), joined."""
    return ", ".join(f"pid {other['pid']} ({other['job']}, in {other['folder'] or '?'})"
                     for other in others)
