"""The files a run writes, looked at before any job (rnnbench.pipeline.housekeeping).

It says what stops a job from writing its outputs, and whether the tables still describe the
result files on disk. Kept apart from rnnbench.results.load, so that reading the Snakefile
does not import pandas and scipy.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator


def write_if_changed(path: str | Path, text: str) -> bool:
    """Write ``text`` to ``path`` only when the file does not already hold it.

    So its mtime says when the content last changed: a rule's input that changes only when a
    setting does. The write is atomic (a temporary file, then a rename).

    Args:
        path: the file; its folder is made.
        text: the content.

    Returns:
        Whether it wrote.
    """
    path = Path(path)
    try:
        if path.read_text() == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return True


def move_aside(path: str | Path, target: str | Path) -> Path:
    """Move ``path`` to ``target``, or beside it under a free name: never over an earlier one.

    A second set-aside of the same file (results/stale/ keeps what the workflow moved) would
    otherwise replace the first without a word.

    Args:
        path: the file to move.
        target: where it goes; its folder is made.

    Returns:
        Where it went: ``target``, or ``<stem>.<k><suffix>`` beside it for the first free
        k >= 2 (``measurements.2.csv``).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    free, k = target, 2
    while free.exists():
        free = target.with_name(f"{target.stem}.{k}{target.suffix}")
        k += 1
    shutil.move(path, free)
    return free


def obstacles(paths: list[str]) -> dict[str, str]:
    """Find what stops a job from writing each of ``paths``.

    Snakemake itself stops with a traceback on such a path, even with --keep-going.

    Args:
        paths: the outputs, relative or absolute.

    Returns:
        {path: why} for the blocked paths only: a plain file (or a broken link) where one of
        its folders must be ("X is a file where a folder must be"), or a folder (or a FIFO,
        socket or device, which a reader would wait on or misread) where the file must be.
        Each folder is looked at once.
    """
    blocked, seen = {}, {}

    def why(folder: str) -> str | None:  # once per folder
        if folder not in seen:
            seen[folder] = (
                f"{folder} is a link to {os.readlink(folder)}, which does not exist"
                if os.path.islink(folder) and not os.path.exists(folder)
                else f"{folder} is a file where a folder must be"
                if os.path.exists(folder) and not os.path.isdir(folder) else None)
        return seen[folder]

    for path in map(str, paths):
        parts = path.split(os.sep)
        for depth in range(1, len(parts)):  # from the top: results, results/runs, ...
            folder = os.sep.join(parts[:depth]) or os.sep
            if why(folder):
                blocked[path] = why(folder)
                break
        else:
            if os.path.isdir(path):
                blocked[path] = f"{path} is a folder where a file must be"
            elif os.path.exists(path) and not os.path.isfile(path):
                blocked[path] = f"{path} is not a regular file (a FIFO, socket or device)"
    return blocked


def listed_results(measurements: str | Path) -> dict[str, str | None]:
    """List the result files a measurements.csv was built from.

    Args:
        measurements: the table's path.

    Returns:
        {path: its bytes' sha256 when read}, from the ``path`` and ``sha256`` columns (None
        where absent); empty when the table does not exist.
    """
    import csv

    if not Path(measurements).exists():
        return {}
    with open(measurements, newline="") as handle:
        return {row["path"]: row.get("sha256") for row in csv.DictReader(handle)
                if row.get("path")}


def damaged_tables(tables: Iterable[str | Path]) -> list[str]:
    """Say which written tables are cut short or overwritten (a CSV empty, not ending in a
    newline, or whose rows do not all have its header's fields; a JSON that is not an
    object).

    Snakemake takes such a file as up to date, and every later run then fails in the rule
    that reads it; set aside with the other tables, it is rebuilt.

    Args:
        tables: the tables' paths (.csv, .json; others are not read).

    Returns:
        One line per damaged table; [] where every one that exists is whole.
    """
    import csv

    why = []
    for table in map(Path, tables):
        if not table.is_file() or table.suffix not in (".csv", ".json"):
            continue
        try:
            text = table.read_text()
            if table.suffix == ".json":
                whole = isinstance(json.loads(text), dict)
            else:
                rows = list(csv.reader(io.StringIO(text, newline="")))  # quoted newlines
                whole = (text.endswith("\n") and bool(rows)  # a row cut short: no newline
                         and all(len(row) == len(rows[0]) for row in rows))
        except (ValueError, UnicodeDecodeError, csv.Error):
            whole = False
        if not whole:
            why.append(f"{table} is cut short or not a table of this workflow")
    return why


def missing_columns(table: str | Path, columns: list[str]) -> list[str]:
    """List the ``columns`` a CSV table's header lacks.

    A table written by an older version of the workflow, before an axis existed, lacks some.

    Args:
        table: the CSV file.
        columns: the columns wanted.

    Returns:
        The lacking ones; empty when it has them all or does not exist.
    """
    import csv

    if not Path(table).exists():
        return []
    with open(table, newline="") as handle:
        header = next(csv.reader(handle), [])
    return [column for column in columns if column not in header]


def changed_results(listed: dict[str, str | None]) -> dict[str, str]:
    """Find the listed result files no longer on disk as the table read them.

    A changed file's edit may have kept its time, as ``cp -p`` or ``rsync -a`` do, which
    Snakemake's time check misses. Each listed file is read and hashed once per run:
    stale_records and damaged_results take this mapping.

    Args:
        listed: listed_results of a measurements.csv.

    Returns:
        {path: ``gone`` or ``changed``}; a file without a recorded sha256 is only checked to
        exist. A folder, FIFO or device in a file's place is ``gone`` (never read: a FIFO
        would wait for a writer).
    """
    out = {}
    for path, sha256 in listed.items():
        if not Path(path).is_file():
            out[path] = "gone"
        elif sha256 and hashlib.sha256(Path(path).read_bytes()).hexdigest() != sha256:
            out[path] = "changed"
    return out


def stale_records(changed: dict[str, str]) -> list[str]:
    """Say why a measurements.csv (and its tables) no longer describes the result files.

    Args:
        changed: changed_results.

    Returns:
        One line per file; empty when it still does, or when the table does not exist.
    """
    return [f"{path} is gone" if how == "gone" else f"{path} changed since it was aggregated"
            for path, how in changed.items()]


PEAK_KEYS = ("peak", "probe", "tf_version", "metadata")
"""The keys of rule peak's record (workflow/scripts/peak.py), each read by aggregation."""


def damaged_results(paths: Iterable[str | Path], listed: dict[str, str | None],
                    changed: dict[str, str], peaks: Iterable[str | Path] = ()
                    ) -> dict[str, str]:
    """Find result files that exist but hold no result record (cut short, overwritten).

    Only files a measurements.csv does not list as they are are read: a listed, unchanged
    file was read whole when aggregated. A damaged file is set aside and measured again, as
    a missing one is (housekeeping.set_aside_damaged_results). Rule peak's files (never
    listed: each is read) must hold its record's keys (PEAK_KEYS).

    Args:
        paths: the grid's result files.
        listed: listed_results.
        changed: changed_results.
        peaks: rule peak's files.

    Returns:
        {path: why}: not JSON or not UTF-8, or JSON without a ``schema_version`` (a peak
        file: without one of PEAK_KEYS).
    """
    import json

    out = {}
    peaks = set(map(str, peaks))
    for path in [*map(str, paths), *peaks]:
        if (path in listed and path not in changed) or not Path(path).is_file():
            continue
        try:
            record = json.loads(Path(path).read_bytes())
        except (ValueError, UnicodeDecodeError) as error:
            out[path] = f"not JSON ({str(error)[:80]})"
            continue
        keys = PEAK_KEYS if path in peaks else ("schema_version",)
        lacking = [key for key in keys if not isinstance(record, dict) or key not in record]
        if lacking:
            out[path] = f"JSON, but no {'peak' if keys == PEAK_KEYS else 'result'} record " \
                        f"(no {', '.join(lacking)})"
    return out


@contextmanager
def all_or_nothing(paths: Iterable[Path]) -> Iterator[None]:
    """Put ``paths`` back as they were if the block raises, then raise on.

    So what writes a committed run (rnnbench reference) never leaves it half replaced. The
    copies are kept in a temporary folder, removed at the end.

    Args:
        paths: files and folders; one missing before the block is removed again.
    """
    backup = Path(tempfile.mkdtemp(prefix="rnnbench-backup-"))
    saved = {}
    for number, path in enumerate(paths):
        saved[path] = backup / str(number) if path.exists() else None
        if saved[path]:
            (shutil.copytree if path.is_dir() else shutil.copy2)(path, saved[path])
    try:
        yield
    except BaseException:
        for path, copy in saved.items():
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            if copy:
                (shutil.copytree if copy.is_dir() else shutil.copy2)(copy, path)
        raise
    finally:
        shutil.rmtree(backup, ignore_errors=True)
