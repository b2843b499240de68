"""After a failed run: what each failed job's log says went wrong (error_line) and the tables
of the runs that exist (write_partial)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from rnnbench.load import load_results, share_runs
from rnnbench.summary import summarize

ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b")
"""The first line of a Python exception message in a log: ``ValueError: ...``,
``tensorflow.python.framework.errors_impl.ResourceExhaustedError: ...``."""


ROOT_CAUSE = re.compile(r"OOM when allocating tensor[^\n]*|\bMemoryError\b[^\n]*|std::bad_alloc")
"""A log line that names why a job failed more plainly than its exception: TensorFlow reports an
allocation that failed as ``InvalidArgumentError: Graph execution error:`` and names the out
of memory ('OOM when allocating tensor ...') only lines above."""


def error_line(lines: list[str]) -> str:
    """What a failed job's log says went wrong: its last exception message line (a
    TensorFlow error is followed by more stack frames, so the last line is no message), else
    its last line; '' for an empty log. Where that line does not name the ROOT_CAUSE another
    line names, 'out of memory: ' and that cause instead."""
    last = next((line.strip() for line in reversed(lines) if ERROR_LINE.match(line.strip())),
                lines[-1].strip() if lines else "")
    if ROOT_CAUSE.search(last):
        return last
    cause = next((found for found in map(ROOT_CAUSE.search, lines) if found), None)
    return f"out of memory: {cause.group().strip()[:300]}" if cause else last


def write_partial(expected: list[tuple[str, str, int, str, str]], outdir: str | Path,
                  shared: dict[tuple[str, str], str] | None = None,
                  blocked: dict[str, str] | None = None) -> pd.DataFrame:
    """After a failed run: list the missing results and summarise the runs that exist.

    Args:
        expected: every training job of the grid: (cell_id, impl, repeat, result path, log
            path), as planned (plan.job_priorities); nothing is read from the paths' names.
        outdir: where to write ``missing.csv`` (cell_id, impl, repeat, path, log, and the
            log's error_line) and, when some results exist,
            ``measurements.csv`` and ``summary.csv`` (cells with both implementations only).
        shared: cells.shared_runs of the grid (runs a cell takes from another).
        blocked: why a result could not be written, for results whose job did not run
            (obstacles); it is their error_line.

    Returns the missing rows.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows, present = [], []
    for cell_id, impl, repeat, path, log in expected:
        if Path(path).exists():
            present.append(path)
        else:
            lines = Path(log).read_text().strip().splitlines() if Path(log).is_file() else []
            why = (blocked or {}).get(str(path)) or error_line(lines)
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
