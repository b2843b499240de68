"""Read one side of a comparison: the runs of a results folder or a measurements.csv.

``rnnbench compare``, ``predict`` and ``jax`` read it the same way.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rnnbench.grid.layout import PARTIAL, RESULT_GLOB, STALE, parse_result_path
from rnnbench.results.load import (LATE_COLUMNS, MAX_SECONDS, load_results, read_table,
                                   share_runs, shared_in)

SET_ASIDE = (Path(STALE).name, Path(PARTIAL).name)
"""The folders under a results folder whose files the workflow set aside (not read as runs)."""


def result_files(folder: Path) -> list[Path]:
    """List the training result files under ``folder``, without those set aside.

    Args:
        folder: a runs folder, or a results folder that holds one.

    Returns:
        The sorted paths of ``<cell>/<impl>/repeat<N>.json`` under ``folder`` (rule peak's files
        left out), but none under a ``stale/`` or ``partial/`` folder below ``folder``: there
        the workflow sets aside results it measures again.
    """
    return sorted(path for path in folder.rglob(RESULT_GLOB) if parse_result_path(path)
                  and not set(path.relative_to(folder).parts[:-1]) & set(SET_ASIDE))


TIMES = ("setup_s", "median_step_s")
"""The times every run of a measurements.csv holds (s): what compare and predict read."""
RUN_KEY = ("environment", "protocol", "cell_id", "impl", "repeat")
"""What names one run in a measurements.csv (load.load_results' rows)."""


def check_rows(source: str | Path, table: pd.DataFrame) -> None:
    """Refuse a measurements.csv without runs, or with a run no result file could give.

    Args:
        source: the file, named in the message.
        table: its rows (read_table).

    Raises:
        ValueError: naming the file, and the column, row (the file's line) and value: no
            rows; an impl other than static or dynamic; a time (TIMES) that is not a number
            of seconds above 0 and below MAX_SECONDS; a run (RUN_KEY) listed twice.
    """
    if table.empty:
        raise ValueError(f"{source}: holds no runs (a header only)")
    impl = ~table["impl"].isin(["static", "dynamic"])
    checks = [("impl", impl, "static or dynamic")]
    for column in TIMES:
        values = pd.to_numeric(table[column], errors="coerce")
        checks.append((column, ~((values > 0) & (values < MAX_SECONDS)),
                       f"a number of seconds above 0 and below {MAX_SECONDS:.0e}"))
    twice = table.duplicated([c for c in RUN_KEY if c in table], keep="first")
    if twice.any():
        row = int(twice.to_numpy().nonzero()[0][0])
        run = " ".join(str(table[c].iloc[row]) for c in ("cell_id", "impl", "repeat"))
        raise ValueError(f"{source}, line {row + 2}: the run {run} is listed twice (pooled, it "
                         "would count twice): keep one line")
    for column, bad, what in checks:
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise ValueError(f"{source}, line {row + 2}: {column} is "
                             f"{str(table[column].iloc[row])!r}, not {what}")


def read_side(source: str | Path) -> pd.DataFrame:
    """Read the runs of one side (load_results' rows), with the runs a cell takes from another.

    Args:
        source: a measurements.csv, or a folder. From a folder, every training result JSON
            under it is read (``<cell>/<impl>/repeat<N>.json``; rule peak's files are left
            out; none under its stale/ or partial/ folders: result_files), with the runs a
            cell takes from another (load.shared_in).

    Returns:
        The runs, one row each.

    Raises:
        ValueError: naming ``source`` when it does not exist, holds no result, or is a file
            that is not a valid measurements.csv of this workflow (a summary.csv, an older
            workflow's: naming the missing columns); from load_results, for a result file
            that is not valid.
    """
    source = Path(source)
    if not source.exists():
        raise ValueError(f"{source}: no such file or folder (give a runs folder, e.g. "
                         "results/runs, or a measurements.csv)")
    if source.is_file():
        try:
            table = read_table(source)
        except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
            words = " ".join(str(error).split())  # pandas' parser errors end in a newline
            raise ValueError(f"{source}: not a measurements.csv ({words})") from None
        missing = [c for c in ("cell_id", "impl", "repeat", "environment", *LATE_COLUMNS,
                               *TIMES) if c not in table.columns]
        if missing:
            raise ValueError(f"{source}: not a measurements.csv of this workflow (no column "
                             f"{', '.join(missing)}): give the runs folder (results/runs), or "
                             "let the workflow rebuild the table (snakemake --cores 1)")
        check_rows(source, table)
        return table
    paths = result_files(source)
    if not paths:
        raise ValueError(f"{source}: no result files (<cell>/static|dynamic/repeat<N>.json)")
    runs = load_results(paths)
    return share_runs(runs, shared_in(runs))  # a cell's runs measured in another (grid)


SAME_RUN = ("environment", "protocol", "cell_id", "impl", "repeat", "setup_s", "median_step_s")
"""What two sides share when one holds a copy of the other's run: its environment, protocol,
cell, impl and repeat, and its times to the last digit (no two measured runs agree there)."""


def same_runs(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Return the runs that both sides hold (copied, not measured apart).

    Args:
        a, b: read_side's rows of each side.

    Returns:
        The rows of ``a`` whose SAME_RUN values a row of ``b`` has too; empty for two sides
        measured apart.
    """
    return a.merge(b[list(SAME_RUN)].drop_duplicates(), on=list(SAME_RUN))
