"""One measuring job at a time on a machine, whatever Snakemake's ``--cores`` says.

Each measuring job (rules train_static, train_dynamic, peak) takes an exclusive ``flock(2)``
on MEASURING_LOCK (``/tmp/rnnbench-measuring.lock``) before it imports its framework. It
holds the lock until its process ends.
``RNNBENCH_MEASURING_LOCK`` names another file. Standard library only: train.py takes the
lock before TensorFlow or JAX is imported. Why, and how it behaves on a cluster:
docs/running.md, How a measuring job is bounded.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Callable, Mapping

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
    try:
        fd = _open(path)
    except OSError as error:
        raise OSError(f"{path}: cannot open the measuring lock ({error.strerror}); set "
                      f"{LOCK_VARIABLE} to a file every job on this machine can open") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if log:
            log(f"another measuring job holds {path}: waiting for it to end (measuring jobs "
                "never run side by side on one machine)")
        fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)
    return {"lock": str(path), "waited_s": round(time.monotonic() - began, 3),
            "start_s": time.time()}
