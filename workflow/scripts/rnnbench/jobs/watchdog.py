"""A measuring job's hard bounds, its resident memory and its wall time, enforced from outside it.

A job that outgrows its declared memory must fail alone and quickly, not take the machine
down: a Keras job with XLA and ``unroll=True`` declared 3072 MiB grew past 23 GB, thrashed a
24 GB machine for about 10 minutes and was killed by the kernel's OOM killer. Here a
separate process (this file, run as a script: standard library only) reads the job's resident
set size (``VmRSS`` in ``/proc/PID/status``: proc(5)) every POLL_S seconds. Past the job's
memory limit (its ``mem_mb`` resource) or its time limit (its ``runtime`` resource), it writes
one line to the job's log naming which, and kills the job (SIGKILL); failures.error_line puts
that line on the terminal and in ``results/partial/missing.csv``. It ends when the job ends.

Why not in the job: a thread there needs the interpreter's lock, which a framework may hold
through a long compilation; an address-space limit (RLIMIT_AS) counts what TensorFlow and XLA
reserve without touching (a bare TensorFlow import reserves 1.3 GB for 0.65 GB resident here),
and an allocation past it fails deep inside the framework with no word of the limit; a cgroup
limit needs rights (systemd delegation) that a user may not have. Polling lets a job pass its
limit by what it allocates within one poll (XLA compilation grows by tens of MB per second).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.2
"""How often (seconds) the watchdog reads the job's memory and clock."""


def resident_mb(pid: int) -> float | None:
    """Resident set size of process ``pid`` in MiB (``VmRSS`` of ``/proc/PID/status``, proc(5)),
    or None when there is no such process or it has exited (a zombie has no VmRSS line)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    rss = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")),
               None)
    return None if rss is None else int(rss) / 1024


def over_bound(rss_mb: float, elapsed_s: float, mem_mb: float, time_limit_s: float,
               rule: str = "train_static") -> str | None:
    """Why a job of ``rule`` at ``rss_mb`` MiB resident after ``elapsed_s`` seconds must stop,
    or None.

    Returns the line for its log: ``out of memory: ...`` when ``rss_mb`` > ``mem_mb`` (MiB),
    ``over its time limit: ...`` when ``elapsed_s`` > ``time_limit_s`` (seconds), with the fix.
    """
    if rss_mb > mem_mb:
        return (f"out of memory: the job's resident memory reached {rss_mb:.0f} MiB, over its "
                f"limit of {mem_mb:.0f} MiB (resource mem_mb), after {elapsed_s:.0f} s; stopped "
                "by rnnbench's watchdog. Make the cell smaller, or give the rule more where the "
                f"machine has it (--set-resources {rule}:mem_mb=N)")
    if elapsed_s > time_limit_s:
        return (f"over its time limit: the job ran {elapsed_s:.0f} s, past its limit of "
                f"{time_limit_s:.0f} s (resource runtime); stopped by rnnbench's watchdog. Make "
                f"the cell smaller, or give the rule more (--set-resources {rule}:runtime=MIN)")
    return None


def watch(pid: int, mem_mb: float, time_limit_s: float, log: Path, rule: str = "train_static",
          poll_s: float = POLL_S, kill=os.kill) -> str | None:
    """Watch process ``pid`` until it ends or passes a bound (over_bound); then write the
    reason as one line to ``log`` (appended) and kill it (SIGKILL). Returns the reason, or None
    when the job ended within its bounds. The clock starts now."""
    started = time.monotonic()
    while (rss := resident_mb(pid)) is not None:
        why = over_bound(rss, time.monotonic() - started, mem_mb, time_limit_s, rule)
        if why:
            with open(log, "a") as handle:
                handle.write(why + "\n")
            kill(pid, signal.SIGKILL)
            return why
        time.sleep(poll_s)
    return None


def start(mem_mb: float, time_limit_s: float, log: str | Path,
          rule: str = "train_static") -> subprocess.Popen:
    """Start the watchdog of this process (watch, in a fresh Python: ``-I``, this file's folder
    kept off its path); the limits count from now. It holds none of this process's file
    descriptors but standard error (the measuring lock stays this job's alone, and a reader of
    the job's output reads to its end when the job ends).

    Args:
        mem_mb: the job's memory limit, MiB (its ``mem_mb`` resource).
        time_limit_s: the job's time limit, seconds (its ``runtime`` resource x 60).
        log: the job's log file, where the reason is written.
        rule: the job's rule, named in the fix (``--set-resources RULE:mem_mb=N``).

    Raises:
        ValueError: a limit that is not positive (names it).
    """
    for name, value in (("mem_mb", mem_mb), ("time limit (s)", time_limit_s)):
        if not value > 0:
            raise ValueError(f"watchdog: {name} must be positive, not {value!r}")
    return subprocess.Popen([sys.executable, "-I", __file__, str(os.getpid()), str(mem_mb),
                             str(time_limit_s), str(log), rule], close_fds=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C ends the job; this ends with it
    watch(int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4]),
          sys.argv[5])
