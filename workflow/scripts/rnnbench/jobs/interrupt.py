"""Resume after an interruption with the same command; no job outlives its Snakemake.

A killed Snakemake leaves its locks in ``.snakemake/locks/``. Each run records who holds
them (OWNER), and the next run on the host removes them once that owner is gone
(remove_stale_locks). A training job stops within a poll interval of its Snakemake's end
(exit_with_snakemake); Ctrl-C ends it at once (end_at_once_on_ctrl_c), until its result is
written (write_result_whole). The reasons and the rules: docs/running.md, How a measuring job
is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

OWNER = "rnnbench-lock-owner.json"
"""The lock owner record, in Snakemake's folder (``.snakemake/``)."""
POLL_S = 0.5
"""How often (seconds) a job checks that its Snakemake is alive."""


def start_time(pid: int) -> int | None:
    """Return the start time of a process, in clock ticks since boot.

    The value is field 22 of ``/proc/PID/stat`` (proc(5)). With the pid it names one process:
    a pid is reused, a (pid, start time) pair is not.

    Args:
        pid: the process id.

    Returns:
        The start time, or None when there is no such process or it has exited (a zombie).
    """
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
    """Return the parent of process ``pid`` (field 4 of ``/proc/PID/stat``), or None."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def is_snakemake(pid: int) -> bool:
    """Tell whether process ``pid`` runs Snakemake.

    It does when its program is named snakemake, or its first arguments are, for
    ``python -m snakemake`` and the ``snakemake`` entry point. A job's own script
    (``.snakemake/scripts/tmpXXX.train.py``) is not.
    """
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(Path(arg.decode(errors="replace")).name == "snakemake" for arg in argv[:3])


def snakemake_ancestor(pid: int | None = None) -> int | None:
    """Return the nearest ancestor of process ``pid`` that runs Snakemake (is_snakemake).

    Args:
        pid: the process whose ancestors are searched; None for this one.

    Returns:
        The ancestor's pid, or None when there is none (run outside Snakemake, or /proc
        hidden). Inside an Apptainer image the host's processes are visible: Apptainer shares
        the host's pid namespace unless given ``--pid``.
    """
    pid = parent_pid(os.getpid() if pid is None else pid)
    while pid and pid > 1:
        if is_snakemake(pid):
            return pid
        pid = parent_pid(pid)
    return None


def outermost_snakemake(pid: int | None = None) -> int | None:
    """Return the farthest ancestor of process ``pid`` that runs Snakemake: its run's.

    Snakemake may start a job through a Snakemake of its own (``--mode subprocess``); the
    farthest is the one the user started, whose pid hooks.smk reads as ``os.getpid()``.

    Args:
        pid: the process whose ancestors are searched; None for this one.

    Returns:
        The ancestor's pid, or None when no ancestor runs Snakemake.
    """
    found = None
    pid = snakemake_ancestor(pid)
    while pid is not None:
        found, pid = pid, snakemake_ancestor(pid)
    return found


def exit_with_snakemake(log: Callable[[str], None] = print, poll_s: float = POLL_S,
                        exit: Callable[[int], None] = os._exit) -> int | None:
    """Stop this process (``exit(3)``) soon after the Snakemake that started it ends.

    A daemon thread checks that Snakemake's pid and start time. A job killed this way writes no
    result; Snakemake marks its output incomplete, and the next run measures it again.

    Args:
        log: writes one line to the job's log when Snakemake is gone.
        poll_s: seconds between checks: the longest the job outlives its Snakemake.
        exit: the function that ends the process (tests pass their own).

    Returns:
        That Snakemake's pid, or None (nothing watched) when no ancestor runs Snakemake.
    """
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
    """Make Ctrl-C (SIGINT) end this process at once, however deep in a framework it is.

    SIGINT gets its default action, which ends the process in the kernel. Call it first in a
    job's script, before any framework is imported. Why a KeyboardInterrupt is not enough
    (13 to 53 s late, measured): docs/running.md, How a measuring job is bounded.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_result_whole(path: str | Path, text: str) -> None:
    """Write a finished job's result; from here on no SIGINT or SIGTERM stops the job.

    The measurement is over: a Ctrl-C or a ``kill`` of the process group (``timeout``) that
    arrives now would end the job with a signal after its result is written, and Snakemake
    removes the output of a failed job. Ignoring both (signal(7)) lets the job exit with
    status 0 (its teardown lasts about a second), so Snakemake keeps the result. The rules'
    shell ``exec``s the job (TRAIN_COMMAND): no shell stands between them to die instead.

    Args:
        path: the result file (created or replaced).
        text: its content.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(path).write_text(text)


TERMINATED = "SIGTERM"
"""The text of the KeyboardInterrupt that sigterm_as_interrupt raises."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Make SIGTERM (``kill``, ``timeout``) unwind this process as Ctrl-C does, while inside.

    By default SIGTERM ends Python at once, and no ``finally`` or ``with`` block runs: a
    temporary folder is left behind. Inside, it raises KeyboardInterrupt(TERMINATED) instead,
    so that they run; the previous handler is restored on leaving.

    Yields:
        None.
    """
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(TERMINATED)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def owner_record(pid: int | None = None) -> dict:
    """Return who holds the locks: host, pid (default this process) and its start_time."""
    pid = os.getpid() if pid is None else pid
    return {"host": socket.gethostname(), "pid": pid, "start_time": start_time(pid)}


def write_owner(snakemake_dir: str | Path, pid: int | None = None) -> Path:
    """Record (owner_record) that this run holds the locks of ``snakemake_dir`` (``.snakemake``).

    Call it once the locks are taken (Snakemake's ``onstart``). Returns the record's path.
    """
    path = Path(snakemake_dir) / OWNER
    path.write_text(json.dumps(owner_record(pid)))
    return path


def remove_owner(snakemake_dir: str | Path) -> None:
    """Remove this run's owner record as it ends (``onsuccess``/``onerror``); its locks go too."""
    (Path(snakemake_dir) / OWNER).unlink(missing_ok=True)


def live_owner(snakemake_dir: str | Path) -> dict | None:
    """Return the owner record of a run that holds ``snakemake_dir``'s locks and is running.

    Its process, on this host, is alive (the same pid and start time) and is not this one.

    Args:
        snakemake_dir: the ``.snakemake`` folder.

    Returns:
        The record (owner_record) plus ``since``: when it took the locks (Unix seconds, the
        record's mtime); None where no such run is known.
    """
    path = Path(snakemake_dir) / OWNER
    try:
        record, since = json.loads(path.read_text()), path.stat().st_mtime
    except (OSError, ValueError):
        return None
    if (not isinstance(record, dict) or record.get("host") != socket.gethostname()
            or record.get("pid") == os.getpid()):
        return None
    return {**record, "since": since} if _alive(record) else None


def _alive(record: dict) -> bool:
    """Whether the process an owner record names runs now (the same pid and start time)."""
    now = start_time(record.get("pid", -1))
    return now is not None and now == record.get("start_time")


def stale_locks(snakemake_dir: str | Path) -> tuple[list[Path], dict | None]:
    """Find the lock files of ``snakemake_dir`` that a killed Snakemake left, and its record.

    Stale means: an owner record exists, written on this host; its process is gone (no
    process with its pid and start time); and no lock file is newer than the record.

    Returns:
        (lock files, record) when stale. ([], record) when the locks are not known to be
        stale: another run may hold them, so they are left to Snakemake's own check. ([], None)
        without a record.
    """
    folder = Path(snakemake_dir)
    locks = sorted((folder / "locks").glob("*.lock"))
    try:
        record = json.loads((folder / OWNER).read_text())
        written = (folder / OWNER).stat().st_mtime
    except (OSError, ValueError):
        return [], None
    if not isinstance(record, dict):  # not a record of ours (edited): no owner known
        return [], None
    if record.get("host") != socket.gethostname() or _alive(record):
        return [], record
    if any(lock.stat().st_mtime > written for lock in locks):
        return [], record
    return locks, record


def remove_stale_locks(snakemake_dir: str | Path = ".snakemake",
                       log: Callable[[str], None] = print) -> list[Path]:
    """Remove the locks a killed Snakemake left in ``snakemake_dir``, and its record.

    Call it when the Snakefile is read, before Snakemake checks its locks.

    Args:
        snakemake_dir: the ``.snakemake`` folder.
        log: says which locks were removed.

    Returns:
        The removed lock files (stale_locks).
    """
    locks, record = stale_locks(snakemake_dir)
    if locks:
        for lock in locks:
            lock.unlink(missing_ok=True)
        remove_owner(snakemake_dir)
        log(f"resume: removed the {len(locks)} lock file(s) left by Snakemake pid "
            f"{record['pid']}, which was stopped without cleaning up (killed?) and is no "
            "longer running")
    return locks
