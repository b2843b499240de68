"""After a failed run: what went wrong, the tables of the runs that exist, and what to say.

error_line reads a failed job's log; write_partial writes the tables. after_failure,
report_missing and report_failed_tables tell the terminal; the workflow's onerror and
onsuccess hooks (workflow/rules/hooks.smk) call them. missing_charts and
report_missing_charts name the charts a report must do without, and why.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Callable

import pandas as pd

from rnnbench.grid.layout import (FINDINGS, MEASUREMENTS, PARTIAL, chart_files, chart_path,
                                  dataset_path, rule_log)
from rnnbench.results.load import load_results, share_runs
from rnnbench.stats.summary import summarize

ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b")
"""The first line of a Python exception message in a log: ``ValueError: ...``,
``tensorflow.python.framework.errors_impl.ResourceExhaustedError: ...``."""


ROOT_CAUSE = re.compile(r"OOM when allocating tensor[^\n]*|\bMemoryError\b[^\n]*|std::bad_alloc")
"""A log line that names why a job failed more plainly than its exception: TensorFlow reports an
allocation that failed as ``InvalidArgumentError: Graph execution error:`` and names the out
of memory ('OOM when allocating tensor ...') only lines above."""

ADDRESS_SPACE = re.compile(r"Fatal process out of memory: Oilpan: CagedHeap reservation")
"""What the chart renderer (vl-convert's V8) prints when it cannot reserve its address space."""
ADDRESS_SPACE_WORDS = ("the chart renderer (vl-convert's V8) could not reserve its address space: "
                       "an address-space limit is set (ulimit -v "
                       "{limit}); lift it (ulimit -v unlimited) and run the same command again")
"""error_line's words for ADDRESS_SPACE ({limit}: this process's limit, in kB)."""
ADDRESS_SPACE_THEN = ("the chart renderer (vl-convert's V8) could not reserve its address space: "
                      "an address-space limit (ulimit -v) was set where it ran, and is not "
                      "here; run the workflow again without it")
"""error_line's words for ADDRESS_SPACE where this process has no address-space limit (a
report, read after the run)."""
BOUND = re.compile(r"^(?:out of memory|over its time limit): ")
"""The line rnnbench's watchdog writes when it stops a job past its memory or time limit
(watchdog.over_bound)."""

PARTIAL_TABLES = ("missing.csv", "measurements.csv", "summary.csv")
"""What write_partial writes in its folder (the last two where some runs exist)."""

STOPPED_FROM_OUTSIDE = "stopped without an error of its own (Ctrl-C, or killed), after: "
"""Why a job failed whose log names no error: it was ended from outside, after its last line."""

NOT_STARTED = "not run: the run stopped before this job started"
"""Why a result is missing whose job left no log."""

CHART_NOT_STARTED = ("not drawn: the run stopped before its job started; run the workflow "
                     "again to draw it")
"""Why a chart is missing whose job left no log."""

RST_MARKUP = re.compile(r"([\\`*_|\[\]<>:])")
"""The characters reStructuredText may read as markup in a line of text (a log's line)."""

STOPPED_EARLY = ("stopped before its first log line (Ctrl-C, or killed, while Python and the "
                 "framework started)")
"""Why a result is missing whose job left an empty log."""


def address_space_limit() -> str:
    """Read this process's address-space limit.

    Returns:
        The soft limit in kB as ``ulimit -v`` prints it, or 'unlimited'.
    """
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return "unlimited" if soft == resource.RLIM_INFINITY else str(soft // 1024)


def error_line(lines: list[str]) -> str:
    """Say what a failed job's log says went wrong, in one line.

    Args:
        lines: the log's lines.

    Returns:
        The first that applies:

        - the chart renderer's failure to reserve its address space (ADDRESS_SPACE), with
          its fix (ADDRESS_SPACE_THEN where this process has no limit);
        - the watchdog's line where it stopped the job (BOUND);
        - '' for an empty log;
        - the last exception message line (a TensorFlow error is followed by more stack
          frames, so the log's last line is no message). Where another line names a
          ROOT_CAUSE the exception does not: 'out of memory: ' and that cause;
        - without an exception, or with a KeyboardInterrupt (Ctrl-C in Python code), the job
          was stopped from outside: STOPPED_FROM_OUTSIDE and the log's last line before it.
    """
    lines = [line.strip() for line in lines if line.strip()]
    if any(ADDRESS_SPACE.search(line) for line in lines):
        limit = address_space_limit()
        return ADDRESS_SPACE_THEN if limit == "unlimited" else ADDRESS_SPACE_WORDS.format(
            limit=limit)
    bound = [line for line in lines if BOUND.match(line)]
    if bound:
        return bound[-1]
    if not lines:
        return ""
    errors = [line for line in lines if ERROR_LINE.match(line)]
    if errors and errors[-1].startswith("KeyboardInterrupt"):  # Ctrl-C in Python code
        before = lines[:max((i for i, line in enumerate(lines)
                             if line.startswith("Traceback")), default=len(lines))]
        return f"{STOPPED_FROM_OUTSIDE}{before[-1] if before else errors[-1]}"
    last = errors[-1] if errors else lines[-1]
    if ROOT_CAUSE.search(last):
        return last
    cause = next((found for found in map(ROOT_CAUSE.search, lines) if found), None)
    if cause:
        return f"out of memory: {cause.group().strip()[:300]}"
    return last if errors else f"{STOPPED_FROM_OUTSIDE}{last}"


def refusal_line(lines: list[str]) -> str | None:
    """Find the line a Snakefile refusal printed before any job, in a run's log.

    Args:
        lines: the log's lines.

    Returns:
        The log's last line, stripped, where it starts with ``config:``: the workflow's
        one-line refusal of a config key, file or setting, after which the run stops (notes
        and warnings of that form come before its jobs). None otherwise.
    """
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    return last if last.startswith("config: ") else None


def write_partial(expected: list[tuple[str, str, int, str, str]], outdir: str | Path,
                  shared: dict[tuple[str, str], str] | None = None,
                  blocked: dict[str, str] | None = None,
                  since: float | None = None) -> pd.DataFrame:
    """After a failed run: list the missing results and summarise the runs that exist.

    Args:
        expected: every training job of the grid: (cell_id, impl, repeat, result path, log
            path), as planned (plan.job_priorities); nothing is read from the paths' names.
        outdir: where to write ``missing.csv`` (cell_id, impl, repeat, path, log, and the
            log's error_line) and, when some results exist,
            ``measurements.csv`` and ``summary.csv`` (cells with both implementations only).
        shared: cells.shared_runs of the grid (runs a cell takes from another).
        blocked: result path -> why it could not be written, for results whose job did not
            run (obstacles); it is their error_line. A job that left no log: NOT_STARTED; an
            empty log: STOPPED_EARLY.
        since: this run's start (Unix seconds): a log last written before it is an earlier
            run's, and its job NOT_STARTED in this one; None: every log is this run's.

    Returns:
        The missing rows, missing.csv's columns.

    Raises:
        ValueError: as load_results raises (e.g. a result that is not valid, or not its cell's).
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for table in PARTIAL_TABLES:  # an earlier failure's tables describe other runs
        (outdir / table).unlink(missing_ok=True)
    rows, present = [], []
    for cell_id, impl, repeat, path, log in expected:
        if str(path) not in (blocked or {}) and Path(path).exists():  # a folder, FIFO: blocked
            present.append(path)
        else:
            ours = Path(log).is_file() and (since is None or Path(log).stat().st_mtime >= since)
            lines = Path(log).read_text().splitlines() if ours else None
            why = ((blocked or {}).get(str(path))
                   or (NOT_STARTED if lines is None else error_line(lines) or STOPPED_EARLY))
            rows.append({"cell_id": cell_id, "impl": impl, "repeat": repeat, "path": str(path),
                         "log": str(log), "error_line": why})
    missing = pd.DataFrame(rows, columns=["cell_id", "impl", "repeat", "path", "log",
                                          "error_line"])
    missing.to_csv(outdir / "missing.csv", index=False)
    if present:
        runs = share_runs(load_results(present), shared or {})
        runs.to_csv(outdir / "measurements.csv", index=False)
        complete = runs.groupby("cell_id")["impl"].transform("nunique") == 2
        if complete.any():
            summarize(runs[complete]).to_csv(outdir / "summary.csv", index=False)
    return missing


def after_failure(jobs: list[tuple[str, str, int, str, str]], say: Callable[[str], None],
                  shared: dict[tuple[str, str], str] | None = None,
                  blocked: dict[str, str] | None = None,
                  partial: str = PARTIAL, since: float | None = None) -> pd.DataFrame | None:
    """After a failed or interrupted run: list what is missing, or drop a listing now stale.

    A run that still lacks a training result (or was blocked from one) writes ``partial``
    and says why (report_missing). A run that failed after every result existed (a chart,
    the aggregation) lists nothing missing: an earlier failure's ``partial`` would still
    name runs that have since completed, so it goes.

    Args:
        jobs: every training job of the grid, as write_partial's ``expected``.
        say: where each line goes (the workflow: standard error).
        shared: cells.shared_runs of the grid.
        blocked: why a result could not be written, for jobs a file blocked.
        partial: the folder a failed run writes.
        since: this run's start (write_partial).

    Returns:
        report_missing's rows, or None where every result exists and ``partial`` was removed.
    """
    if blocked or not all(Path(job[3]).exists() for job in jobs):
        return report_missing(jobs, say, shared, blocked, partial, since)
    shutil.rmtree(partial, ignore_errors=True)
    return None


def report_missing(jobs: list[tuple[str, str, int, str, str]], say: Callable[[str], None],
                   shared: dict[tuple[str, str], str] | None = None,
                   blocked: dict[str, str] | None = None, partial: str = PARTIAL,
                   since: float | None = None) -> pd.DataFrame:
    """Write ``partial`` and say which runs are missing and why, after failed or blocked jobs.

    Args:
        jobs: every training job of the grid, as write_partial's ``expected``.
        say: where each line goes (the workflow: standard error).
        shared: cells.shared_runs of the grid.
        blocked: why a result could not be written, for jobs a file blocked.
        partial: the folder written.
        since: this run's start (write_partial).

    Returns:
        The missing rows (write_partial's); nothing is said when there are none.
    """
    missing = write_partial(jobs, partial, shared, blocked, since)
    if not len(missing):
        return missing
    say(f"{len(missing)} of {len(jobs)} training results are missing:")
    started = missing[missing["error_line"] != NOT_STARTED]
    for row in started.itertuples():
        say(f"  {row.cell_id} {row.impl} repeat {row.repeat}: {row.error_line}")
    if len(started) < len(missing):
        say(f"  {len(missing) - len(started)} {'other ' if len(started) else ''}"
            f"run(s): {NOT_STARTED}")
    say(f"Listed in {partial}/missing.csv, with the logs"
        + (f"; cells that completed are summarised in {partial}/summary.csv."
           if Path(partial, "summary.csv").exists() else "; no cell has completed yet."))
    return missing


def rule_steps(charts: list[str], peaks: list[tuple[str, str]],
               datasets: list[str]) -> dict[str, tuple[str, str]]:
    """The jobs of the rules other than training whose failure report_failed_tables names.

    Args:
        charts: the grid's charts.
        peaks: (log, output) of each rule peak job.
        datasets: the grid's dataset names.

    Returns:
        {name on the terminal: (log, output)}: aggregate, findings, each chart, peak, dataset.
    """
    steps = {"aggregate": (rule_log("aggregate"), MEASUREMENTS),
             "findings": (rule_log("findings"), FINDINGS)}
    for chart in charts:
        steps[f"plot {chart}"] = (rule_log("plot", chart), chart_path(chart))
    for log, peak in peaks:
        steps[f"peak {Path(peak).stem}"] = (log, peak)
    for name in datasets:
        steps[f"make_data {name}"] = (rule_log("make_data", name), dataset_path(name))
    return steps


def report_failed_tables(steps: dict[str, tuple[str, str]], since: float,
                         say: Callable[[str], None]) -> list[str]:
    """Say the cause of each job of ``steps`` that failed in a run, in one line each.

    Snakemake only says there was an error and names the log.

    Args:
        steps: {name: (log, output)} (rule_steps).
        since: when the run started (seconds since the epoch): a log written since is its.
        say: where each line goes (the workflow: standard error).

    Returns:
        The lines said: '<name> failed: <error_line> (its log: <log>)', one per job whose log
        was written since ``since`` and whose output is missing; STOPPED_EARLY for an empty
        log (a job killed before its first line).
    """
    lines = []
    for name, (log, output) in steps.items():
        if Path(log).exists() and Path(log).stat().st_mtime >= since and not Path(output).exists():
            error = error_line(Path(log).read_text(errors="replace").splitlines()) or STOPPED_EARLY
            lines.append(f"{name} failed: {error} (its log: {log})")
            say(lines[-1])
    return lines


def missing_charts(charts: list[str]) -> dict[str, str]:
    """Name the grid's charts that a run did not draw, each with why.

    Args:
        charts: the grid's charts (chartlist.plots).

    Returns:
        {chart: why} for each chart one of whose files (CHART_FORMATS) is missing: its plot
        log's error_line and the log ('<error_line> (its log: <log>)'); STOPPED_EARLY for an
        empty log; CHART_NOT_STARTED without a log.
    """
    missing = {}
    for chart in charts:
        if all(Path(path).exists() for path in chart_files([chart])):
            continue
        log = Path(rule_log("plot", chart))
        if not log.is_file():
            missing[chart] = CHART_NOT_STARTED
            continue
        why = error_line(log.read_text(errors="replace").splitlines()) or STOPPED_EARLY
        missing[chart] = f"{why} (its log: {log})"
    return missing


def report_missing_charts(missing: dict[str, str], charts: int,
                          say: Callable[[str], None]) -> list[str]:
    """Say which charts a report is built without, and why, for the terminal and the report.

    A chart whose job failed is no reason to refuse the report: the tables and FINDINGS
    need none. The report leaves such charts out (Snakemake refuses a report whose files do
    not all exist) and names them in its description (workflow/report/workflow.rst).

    Args:
        missing: missing_charts' {chart: why}.
        charts: how many charts the grid has.
        say: where each line goes (the workflow: standard error).

    Returns:
        One reStructuredText line per missing chart ('<chart>: <why>', its markup characters
        escaped), for the report's description; [] where none is missing.
    """
    if not missing:
        return []
    say(f"report: built without {len(missing)} of the {charts} charts, which are missing "
        "(the tables and FINDINGS need none); its description names them:")
    for chart, why in missing.items():
        say(f"  {chart}: {why}")
    return [RST_MARKUP.sub(r"\\\1", f"{chart}: {why}") for chart, why in missing.items()]
