"""The timing protocol every runner (rnnbench.measure.runners) follows after its first step.

The warm-up runs until the step times settle, then the measured steps, each step timed on
its own with ``time.perf_counter``; a heartbeat covers the slow phases before them. The
whole run's phases: docs/experiment.md, A run's phases, in every api.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from rnnbench.measure import steady

log = logging.getLogger("rnnbench")


@contextmanager
def heartbeat(phase: str, every_s: float = 10.0) -> Iterator[None]:
    """Log '<phase>: still running after N s' every ``every_s`` seconds until the block ends.

    A user watching a slow static graph build or first step sees that the job is alive.
    """
    done = threading.Event()
    start = time.perf_counter()

    def beat() -> None:
        while not done.wait(every_s):
            log.info("%s: still running after %.0f s", phase, time.perf_counter() - start)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def step_stats(step_s: list[float]) -> dict[str, float]:
    """Summarise measured step times.

    Args:
        step_s: the step times, seconds.

    Returns:
        The median step (seconds), the median steps/s (1 / median step), IQR / median of the
        step times, and the mean step (total / count: what a loop timed as a whole reports).

    Raises:
        ValueError: for fewer than two step times.
    """
    if len(step_s) < 2:
        raise ValueError(f"step_s: need at least 2 step times, got {len(step_s)}")
    arr = np.asarray(step_s, dtype=float)
    median = float(np.median(arr))
    q1, q3 = np.percentile(arr, [25, 75])
    return {
        "median_step_s": median,
        "steps_per_s": 1.0 / median,
        "step_iqr_over_median": float((q3 - q1) / median),
        "mean_step_s": float(arr.mean()),
    }


def timed_steps(step: Callable[[bool], Any], is_hook: Callable[[int], bool], steps: int,
                min_s: float, log_every: int) -> tuple[list[float], Any]:
    """Run and time the measured steps, each on its own with ``time.perf_counter``.

    Steps run until at least ``steps`` have run and they took at least ``min_s`` seconds in
    all. So a cell of short steps measures more of them, and its median spans the machine's
    slow spells of tens of milliseconds. Logs 'measured step i, running N steps/s' every
    ``log_every`` steps and at the end.

    Args:
        step: ``step(is_hook(j))`` runs training step j (from 0).
        is_hook: whether step j fetches the hook set.
        steps: the fewest steps.
        min_s: the shortest measurement, seconds.
        log_every: steps between progress lines.

    Returns:
        Their seconds, and the last step's return value (None when there is no step).
    """
    seconds, out = [], None
    loop_start = time.perf_counter()
    while len(seconds) < steps or time.perf_counter() - loop_start < min_s:
        start = time.perf_counter()
        out = step(is_hook(len(seconds)))
        seconds.append(time.perf_counter() - start)
        if len(seconds) % log_every == 0:
            log.info("measured step %d, running %.1f steps/s", len(seconds),
                     len(seconds) / (time.perf_counter() - loop_start))
    log.info("measured %d steps in %.2f s", len(seconds), time.perf_counter() - loop_start)
    return seconds, out


def warm_and_measure(step: Callable[[bool], Any], hook_at: Callable[[int | None, int], bool],
                     protocol: dict) -> dict[str, Any]:
    """Run the warm-up (steady.warm_up), then the measured steps (timed_steps).

    Args:
        step: ``step(is_hook)`` runs one training step, fetching the hook set when ``is_hook``.
        hook_at: ``hook_at(warmup_steps, k)`` says whether step k does (the hook_step of the
            cell's fetches; warmup_steps is None during the warm-up).
        protocol: warmup_steps, max_warmup_steps, steps, min_measure_s (seconds), log_every.

    Returns:
        ``warmup_step_s``, ``warmup_settled``, ``step_s`` (seconds), ``hook_steps`` (the steps,
        0 the first, that fetched the hook set) and ``last`` (the last step's return value).
    """
    loop_start = time.perf_counter()

    def warm_step(k: int) -> float:
        start = time.perf_counter()
        step(hook_at(None, 1 + k))
        seconds = time.perf_counter() - start
        if (k + 1) % protocol["log_every"] == 0:
            log.info("warm-up step %d, running %.1f steps/s", k + 1,
                     (k + 1) / (time.perf_counter() - loop_start))
        return seconds

    warmup_step_s, settled = steady.warm_up(warm_step, protocol["warmup_steps"],
                                            protocol["max_warmup_steps"])
    warmup = len(warmup_step_s)
    log.info("warm-up: %d steps, %s", warmup,
             {True: "settled", False: "still warming at max_warmup_steps",
              None: "fixed (no settle test)"}[settled])
    step_s, last = timed_steps(step, lambda j: hook_at(warmup, 1 + warmup + j),
                               protocol["steps"], protocol["min_measure_s"],
                               protocol["log_every"])
    total = 1 + warmup + len(step_s)
    return {"warmup_step_s": warmup_step_s, "warmup_settled": settled, "step_s": step_s,
            "hook_steps": [k for k in range(total) if hook_at(warmup if k > warmup else None, k)],
            "last": last}
