"""The start of a measuring job (rules train_static, train_dynamic, peak), in one place.

It runs before any framework is imported: Ctrl-C ends the job at once, a dying Snakemake
takes it along, it waits for the machine's measuring lock, and then a watchdog holds it to
its ``mem_mb`` and ``runtime``. check_still_bounded runs before the result is written.
Standard library only. The order and its reasons: docs/running.md, How a measuring job is
bounded.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

from rnnbench.jobs import exclusive, interrupt, watchdog

_watchdog: list[subprocess.Popen] = []  # this job's watchdog, once started


def start_measuring_job(log: Callable[[str], None], log_path: str | Path, mem_mb: float,
                        runtime_min: float, rule: str = "train_static") -> dict:
    """Bound this job and take the machine's measuring lock.

    Args:
        log: writes a line to the job's log (the lock's wait; a dead Snakemake).
        log_path: the job's log file, where the watchdog names a bound it passed.
        mem_mb: the job's memory limit, MiB (its ``mem_mb`` resource).
        runtime_min: the job's time limit, minutes (its ``runtime`` resource).
        rule: the job's rule (named in the watchdog's fix).

    Returns:
        exclusive.measure_alone's record plus ``mem_limit_mb`` and ``time_limit_s`` (seconds).

    Raises:
        OSError: when the measuring lock cannot be opened.
        ValueError: when a limit is not positive.
    """
    interrupt.end_at_once_on_ctrl_c()
    interrupt.exit_with_snakemake(log)
    alone = exclusive.measure_alone(log)
    _watchdog.append(watchdog.start(mem_mb, 60.0 * runtime_min, log_path, rule))
    return {**alone, "mem_limit_mb": mem_mb, "time_limit_s": 60.0 * runtime_min}


def check_still_bounded() -> None:
    """Check, before the result is written, that the job's watchdog still runs.

    Raises:
        RuntimeError: when it has ended (killed from outside). The job then ran without its
            bounds for a while, so its result is not written; the next run measures it again.
    """
    if _watchdog and _watchdog[0].poll() is not None:
        raise RuntimeError(
            f"this job's watchdog (pid {_watchdog[0].pid}) ended before the job did (killed?): "
            "the job ran without its memory and time bounds, so its result is not written; "
            "run the same command again")
