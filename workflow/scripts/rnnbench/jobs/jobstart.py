"""The start of a measuring job (rules train_static, train_dynamic, peak), in one place.

It runs before any framework is imported: Ctrl-C ends the job at once, a dying Snakemake
takes it along, it waits for the machine's measuring lock, and then a watchdog holds it to
its ``mem_mb`` and ``runtime``; it notes the other measuring jobs of this workflow that
measure beside it all the same (rnnbench.jobs.overlap), at its start and at its end
(end_measuring_job). check_still_bounded runs before the result is written.
Standard library only. The order and its reasons: docs/running.md, How a measuring job is
bounded.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable

from rnnbench.jobs import exclusive, interrupt, overlap, watchdog

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
        exclusive.measure_alone's record plus ``mem_limit_mb`` and ``time_limit_s`` (seconds),
        and ``others_at_start``: the other measuring jobs measuring as it took the lock
        (overlap.others_measuring; [] for none), which ``log`` names.

    Raises:
        OSError: when the measuring lock cannot be opened.
        ValueError: when a limit is not positive.
    """
    interrupt.end_at_once_on_ctrl_c()
    interrupt.exit_with_snakemake(log)
    alone = exclusive.measure_alone(log)
    _watchdog.append(watchdog.start(mem_mb, 60.0 * runtime_min, log_path, rule))
    others = overlap.others_measuring()
    _say_others(log, others, "starts")
    return {**alone, "mem_limit_mb": mem_mb, "time_limit_s": 60.0 * runtime_min,
            "others_at_start": others}


def end_measuring_job(taken: dict, log: Callable[[str], None]) -> dict:
    """Close a measuring job's record of its lock as its measurement ends.

    Args:
        taken: start_measuring_job's record.
        log: writes a line to the job's log (the other measuring jobs, if any).

    Returns:
        ``taken`` plus ``end_s`` (Unix seconds, now) and ``others_at_end``: the other
        measuring jobs measuring now (overlap.others_measuring; [] for none). The result's
        ``exclusive`` record.
    """
    end = time.time()
    others = overlap.others_measuring()
    _say_others(log, others, "ends")
    return {**taken, "end_s": end, "others_at_end": others}


def _say_others(log: Callable[[str], None], others: list[dict], when: str) -> None:
    """Name in the job's log the other measuring jobs that measure as this one ``when``."""
    if others:
        log(f"this job {when} while {len(others)} other measuring job(s) of this workflow "
            f"measure on this machine, under another lock: {overlap.words(others)}; its "
            "timings may be slowed (the result records them: exclusive.others_at_" +
            ("start)" if when == "starts" else "end)"))


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
