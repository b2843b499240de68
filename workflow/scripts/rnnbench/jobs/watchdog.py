"""A measuring job's hard bounds, resident memory and wall time, enforced from outside it.

This file, run as a script (standard library only), reads the job's ``VmRSS`` every POLL_S
seconds. Past the job's ``mem_mb`` or ``runtime``, it writes one line naming which to the
job's log and kills the job (SIGKILL); failures.error_line shows that line. It ends when
the job ends. Why a separate process, not a thread or an rlimit: docs/running.md, How a
measuring job is bounded.
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
    """Return the resident set size of process ``pid``, in MiB.

    The value is ``VmRSS`` of ``/proc/PID/status`` (proc(5)). None when there is no such
    process or it has exited (a zombie has no VmRSS line).
    """
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    rss = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")),
               None)
    return None if rss is None else int(rss) / 1024


def over_bound(rss_mb: float, elapsed_s: float, mem_mb: float, time_limit_s: float,
               rule: str = "train_static") -> str | None:
    """Say why a job must stop, or None when it is within its bounds.

    Args:
        rss_mb: the job's resident memory, MiB.
        elapsed_s: seconds since the watch began.
        mem_mb: the memory limit, MiB.
        time_limit_s: the time limit, seconds.
        rule: the job's rule, named in the fix.

    Returns:
        The line for its log: ``out of memory: ...`` when ``rss_mb`` > ``mem_mb``, ``over its
        time limit: ...`` when ``elapsed_s`` > ``time_limit_s``, each with the fix; else None.
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
    """Watch process ``pid`` until it ends or passes a bound (over_bound); the clock starts now.

    A bound passed: the reason goes to ``log`` as one appended line, and the process is
    killed (SIGKILL, through ``kill``).

    Returns:
        The reason, or None when the job ended within its bounds.
    """
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
    """Start the watchdog of this process; the limits count from now.

    It runs watch in a fresh Python (``-I``, this file's folder kept off its path). It holds
    none of this process's file descriptors but standard error. So the measuring lock stays
    this job's alone, and a reader of the job's output reads to its end when the job ends.

    Args:
        mem_mb: the job's memory limit, MiB (its ``mem_mb`` resource).
        time_limit_s: the job's time limit, seconds (its ``runtime`` resource x 60).
        log: the job's log file, where the reason is written.
        rule: the job's rule, named in the fix (``--set-resources RULE:mem_mb=N``).

    Raises:
        ValueError: for a limit that is not positive (names it).
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
