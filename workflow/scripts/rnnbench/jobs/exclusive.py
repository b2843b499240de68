"""One measuring job at a time on a machine, whatever Snakemake's ``--cores`` says.

Two training jobs side by side disturb each other's timings: on a tiny grid with
``--cores 2``, dynamic_rnn's median step went from 1.06 to 3.66 ms and the static/dynamic step
ratio from 0.86 to 0.34. Snakemake runs as many jobs as ``--cores`` allows, and its
users pass ``--cores N`` by habit; so each measuring job (rules train_static, train_dynamic and
peak) takes an exclusive ``flock(2)`` on one file of the machine before it imports its
framework, and holds it until its process ends (the kernel releases it, however the process
ends: no stale lock). A job that finds the lock taken waits, and says so in its log. Data,
aggregation and charts take no lock and still run beside it.

The file is ``/tmp/rnnbench-measuring.lock`` (MEASURING_LOCK; not ``$TMPDIR``, which a cluster
may set per job): every run on the machine, in any folder, bare or in an Apptainer image (which
binds the host's /tmp), takes the same one. On a cluster each node has its own /tmp, so jobs on
different nodes run in parallel, and two jobs that the scheduler puts on one node take turns
(the wait counts against the job's time limit). ``RNNBENCH_MEASURING_LOCK`` names another file:
the tests give each of their concurrent workflows its own.

Standard library only: train.py takes the lock before TensorFlow or JAX is imported.
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
    """Take the machine's measuring lock (lock_path) and hold it until this process ends,
    waiting while another measuring job holds it.

    Returns:
        ``{"lock": path, "waited_s": seconds spent waiting, "start_s": Unix time (s) when
        it was taken}``; the caller adds ``end_s`` when its measurement ends (the result
        records it: load.check_no_overlap compares the runs' spans).

    Raises:
        OSError: where the lock file cannot be opened (names the path); RuntimeError if this
            process holds the lock already.
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
