"""One measuring job at a time on a machine, whatever Snakemake's ``--cores`` says.

Each measuring job (rules train_static, train_dynamic, peak) takes an exclusive ``flock(2)``
on MEASURING_LOCK (``/tmp/rnnbench-measuring.lock``) before it imports its framework. It
holds the lock until its process ends.
``RNNBENCH_MEASURING_LOCK`` names another file. The holder writes who it is into the lock
file (holder_record): another run's time estimate reads it (lock_holder), and the kernel's
lock table says whether that holder holds the lock still. Standard library only: train.py
takes the lock before TensorFlow or JAX is imported. Why, and how it behaves on a cluster:
docs/running.md, How a measuring job is bounded.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Callable, Mapping

from rnnbench.jobs import interrupt, overlap

MEASURING_LOCK = "/tmp/rnnbench-measuring.lock"
LOCK_VARIABLE = "RNNBENCH_MEASURING_LOCK"
_held: list[int] = []  # the lock's descriptor, open until the process ends


def lock_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The machine's measuring lock file: ``$RNNBENCH_MEASURING_LOCK`` or MEASURING_LOCK."""
    return Path(environ.get(LOCK_VARIABLE) or MEASURING_LOCK)


def _open(path: Path) -> int:
    """A descriptor of ``path`` to flock, created readable and writable by every user (the
    next user's jobs on the machine take the same lock); read-only where another user made it
    without write access for us (flock needs no write access)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY)
    try:
        os.fchmod(fd, 0o666)  # past the umask
    except PermissionError:  # another user's file
        pass
    return fd


def open_lock(path: Path) -> int:
    """Open the measuring lock file (created where missing), as every measuring job does.

    The workflow opens it once before any job, so that a lock no job can open stops the run
    at its start, not at its first measuring job.

    Args:
        path: lock_path's file.

    Returns:
        A descriptor of it (the caller closes it, or holds the lock through it).

    Raises:
        OSError: naming the path, the cause and LOCK_VARIABLE.
    """
    try:
        return _open(path)
    except OSError as error:
        raise OSError(f"{path}: cannot open the measuring lock ({error.strerror}); set "
                      f"{LOCK_VARIABLE} to a file every job on this machine can open") from None


def measure_alone(log: Callable[[str], None] | None = None,
                  environ: Mapping[str, str] = os.environ) -> dict:
    """Take the machine's measuring lock and hold it until this process ends.

    The call waits while another measuring job holds the lock, and says so through ``log``.

    Args:
        log: writes one line to the job's log; None says nothing.
        environ: the environment that may name another lock file (lock_path).

    Returns:
        ``{"lock": path, "waited_s": seconds spent waiting, "start_s": Unix time (seconds)
        when it was taken}``. The caller adds ``end_s`` when its measurement ends; the result
        records it, and load.check_no_overlap compares the runs' spans.

    Raises:
        OSError: when the lock file cannot be opened (names the path).
        RuntimeError: when this process holds the lock already.
    """
    if _held:
        raise RuntimeError("measure_alone: this process holds the measuring lock already")
    path = lock_path(environ)
    began = time.monotonic()
    fd = open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if log:
            log(f"another measuring job holds {path}: waiting for it to end (measuring jobs "
                "never run side by side on one machine)")
        fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)
    start = time.time()
    _write_record(fd, holder_record(_read_record(fd), start))
    return {"lock": str(path), "waited_s": round(time.monotonic() - began, 3),
            "start_s": start}


def release() -> None:
    """Let go of the measuring lock this process took (measure_alone), if it holds it.

    A measuring job holds it until it ends; a command that measures and then goes on (or a
    test that calls one in its own process) lets go when its measurement is over.
    """
    while _held:
        fd = _held.pop()
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def holder_record(previous: dict | None, now: float, pid: int | None = None) -> dict:
    """Who holds the lock, as its holder writes it into the lock file.

    Args:
        previous: the record the lock file held (the last holder's), or None.
        now: the Unix time (seconds) the lock was taken.
        pid: the holder (default this process).

    Returns:
        ``{"pid", "start_time" (interrupt.start_time), "host", "folder" (the working folder),
        "snakemake_pid" (the run's Snakemake: interrupt.outermost_snakemake), "since_s" (this
        job's hold), "run_since_s"}``: run_since_s, when the run's measuring began, is kept
        from ``previous`` where the last holder was a job of the same run, else ``now``.
    """
    pid = os.getpid() if pid is None else pid
    record = {"pid": pid, "start_time": interrupt.start_time(pid), "host": socket.gethostname(),
              "folder": os.getcwd(), "snakemake_pid": interrupt.outermost_snakemake(pid),
              "since_s": now, "run_since_s": now}
    same_run = ("host", "folder", "snakemake_pid")
    if (previous and record["snakemake_pid"] is not None
            and all(previous.get(key) == record[key] for key in same_run)
            and isinstance(previous.get("run_since_s"), (int, float))):
        record["run_since_s"] = previous["run_since_s"]
    return record


def _read_record(fd: int) -> dict | None:
    """The holder record a lock file's descriptor holds; None where empty or unreadable."""
    try:
        record = json.loads(os.pread(fd, 65536, 0) or b"null")
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(fd: int, record: dict) -> None:
    """Write ``record`` into the lock file; nothing where it is not ours to write."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
    except OSError:  # opened read-only: another user's lock file
        pass


def lock_holder(environ: Mapping[str, str] = os.environ,
                locks: str = overlap.PROC_LOCKS) -> dict | None:
    """Say who holds the machine's measuring lock now, without taking it.

    Args:
        environ: the environment that may name another lock file (lock_path).
        locks: the kernel's lock table (overlap.PROC_LOCKS), which says who holds it.

    Returns:
        None when no process holds the lock (or the lock table cannot be read). Else the
        holder's record (holder_record) with ``lock`` (the path) added; where the holder wrote
        none (an older workflow, another user's file), only ``lock``, ``pid`` and the
        ``folder`` /proc shows (None where hidden).
    """
    path = lock_path(environ)
    key = overlap.file_key(path)
    holders = [pid for pid, files in overlap.read_flock_holders(locks).items()
               if key is not None and key in files]
    if not holders:
        return None
    pid = holders[0]
    try:
        record = json.loads(path.read_text() or "null")
    except (OSError, ValueError):
        record = None
    if (not isinstance(record, dict) or record.get("pid") != pid
            or record.get("start_time") not in (None, interrupt.start_time(pid))):
        record = {"pid": pid, "folder": overlap.folder_of(pid)}
    return {**record, "lock": str(path)}
