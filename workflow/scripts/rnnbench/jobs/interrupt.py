"""Resuming after an interruption with the same command, and no job outliving its Snakemake.

Snakemake locks the working directory while it runs (files in ``.snakemake/locks/``) and
removes the locks when it ends; a Snakemake killed outright (SIGKILL, a lost terminal, an
out-of-memory kill, a power loss) leaves them, and the next run stops with a LockException
that asks for ``--unlock``. Here each run records who holds its locks (``OWNER``: host, pid,
the process's start time) once it holds them, and removes that record when it ends; the next
run on the same host removes the locks only when that owner is gone and no lock is newer than
the record (a lock taken since belongs to another run, which may be alive). A training job
started by a Snakemake that is killed would otherwise run on and write its result after the
workflow died: exit_with_snakemake stops it within a poll interval; Ctrl-C ends it at once
(end_at_once_on_ctrl_c).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Callable

OWNER = "rnnbench-lock-owner.json"
"""The lock owner record, in Snakemake's folder (``.snakemake/``)."""
POLL_S = 0.5
"""How often (seconds) a job checks that its Snakemake is alive."""


def start_time(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot: field 22 of
    ``/proc/PID/stat``, proc(5)), or None when there is no such process, or it has exited
    (a zombie). With the pid it names one process: a pid is reused, a (pid, start time) pair
    is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):  # exited, not yet reaped by its parent: gone all the same
        return None
    return int(fields[19])


def parent_pid(pid: int) -> int | None:
    """The parent of process ``pid`` (field 4 of ``/proc/PID/stat``), or None."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def is_snakemake(pid: int) -> bool:
    """Whether process ``pid`` runs Snakemake: its program or, for ``python -m snakemake``
    and the ``snakemake`` entry point, its first arguments are named snakemake. A job's own
    script (``.snakemake/scripts/tmpXXX.train.py``) is not."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(Path(arg.decode(errors="replace")).name == "snakemake" for arg in argv[:3])


def snakemake_ancestor(pid: int | None = None) -> int | None:
    """The nearest ancestor of process ``pid`` (default: this one) that runs Snakemake
    (is_snakemake), or None when there is none (run outside Snakemake, or /proc hidden).
    Inside an Apptainer image the host's processes are visible: Apptainer shares the
    host's pid namespace unless given ``--pid``."""
    pid = parent_pid(os.getpid() if pid is None else pid)
    while pid and pid > 1:
        if is_snakemake(pid):
            return pid
        pid = parent_pid(pid)
    return None


def exit_with_snakemake(log: Callable[[str], None] = print, poll_s: float = POLL_S,
                        exit: Callable[[int], None] = os._exit) -> int | None:
    """Stop this process (``exit(3)``) within ``poll_s`` seconds of the Snakemake that
    started it ending: a daemon thread checks its pid and start time. Returns that
    Snakemake's pid, or None (nothing watched) when no ancestor runs Snakemake. A job killed
    this way writes no result; the next run measures it again (Snakemake marks its output
    incomplete)."""
    pid = snakemake_ancestor()
    if pid is None:
        return None
    started = start_time(pid)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if start_time(pid) != started:
                log(f"Snakemake (pid {pid}) has ended: this job stops without a result")
                sys.stderr.flush()
                exit(3)

    threading.Thread(target=watch, name="exit_with_snakemake", daemon=True).start()
    return pid


def end_at_once_on_ctrl_c() -> None:
    """Ctrl-C (SIGINT) ends this process at once, however deep in TensorFlow, XLA or JAX it is.

    Python turns SIGINT into a KeyboardInterrupt raised only when its main thread runs Python
    code again: a job in Grappler's first step, in Keras tracing or in an XLA compilation ran on
    for 13 to 53 s after Ctrl-C, and one compiling did not stop (29 s measured here in
    the first step of a static_rnn graph of max_len 200). SIGINT's default action ends the
    process in the kernel, as SIGTERM's does. Ctrl-C reaches every process of the terminal's
    foreground group: Snakemake, its jobs and their watchdogs. The job writes no result (it is
    written whole at the end); Snakemake marks its output incomplete and the next run measures
    it again. Call it first in a job's script, before any framework is imported.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def owner_record(pid: int | None = None) -> dict:
    """Who holds the locks: host, pid (default this process) and its start_time."""
    pid = os.getpid() if pid is None else pid
    return {"host": socket.gethostname(), "pid": pid, "start_time": start_time(pid)}


def write_owner(snakemake_dir: str | Path, pid: int | None = None) -> Path:
    """Record (owner_record) that this run holds the locks of ``snakemake_dir``
    (``.snakemake``); call it once the locks are taken (Snakemake's ``onstart``)."""
    path = Path(snakemake_dir) / OWNER
    path.write_text(json.dumps(owner_record(pid)))
    return path


def remove_owner(snakemake_dir: str | Path) -> None:
    """The run ends (``onsuccess``/``onerror``): its locks go with it, so does the record."""
    (Path(snakemake_dir) / OWNER).unlink(missing_ok=True)


def stale_locks(snakemake_dir: str | Path) -> tuple[list[Path], dict | None]:
    """The lock files of ``snakemake_dir`` that a killed Snakemake left, and its record.

    Stale means: an owner record exists, written on this host, its process is gone (no
    process with its pid and start time), and no lock file is newer than the record. Returns
    ([], record) when the locks are not known to be stale (another run may hold them: leave
    them to Snakemake's own check), ([], None) without a record.
    """
    folder = Path(snakemake_dir)
    locks = sorted((folder / "locks").glob("*.lock"))
    try:
        record = json.loads((folder / OWNER).read_text())
        written = (folder / OWNER).stat().st_mtime
    except (OSError, ValueError):
        return [], None
    now = start_time(record.get("pid", -1))
    alive = now is not None and now == record.get("start_time")
    if record.get("host") != socket.gethostname() or alive:
        return [], record
    if any(lock.stat().st_mtime > written for lock in locks):
        return [], record
    return locks, record


def remove_stale_locks(snakemake_dir: str | Path = ".snakemake",
                       log: Callable[[str], None] = print) -> list[Path]:
    """Remove the locks a killed Snakemake left in ``snakemake_dir`` (stale_locks) and its
    record, saying so through ``log``; returns the removed lock files. Call it when the
    Snakefile is read, before Snakemake checks its locks."""
    locks, record = stale_locks(snakemake_dir)
    if locks:
        for lock in locks:
            lock.unlink(missing_ok=True)
        remove_owner(snakemake_dir)
        log(f"resume: removed the {len(locks)} lock file(s) left by Snakemake pid "
            f"{record['pid']}, which was stopped without cleaning up (killed?) and is no "
            "longer running")
    return locks
