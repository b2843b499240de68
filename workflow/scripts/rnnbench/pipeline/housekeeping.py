"""What the workflow does to the results tree before any job, and when a run succeeds.

workflow/rules/hooks.smk calls each. Before any job, while the Snakefile is read:

- outputs that a file in the way blocks (blocked_results);
- a damaged dataset remade from its seed (remake_damaged_datasets);
- invalid results and stale tables set aside (set_aside_damaged_results,
  set_aside_stale_tables);
- FINDINGS' settings written (write_findings_settings);
- a report's grid checked (check_report_grid);
- how long the run will take here (estimate_line).

A command that runs no job (-n, --summary, --report) changes nothing on disk. Given
``dry_run``, each step only says what a run would do. It returns whether a run would do
something the dry run did not, so the dry run's plan shows the rules after it (planned).
Paths are relative to the working directory, as Snakemake's are. Messages go to ``say``, one
line each (the workflow prints them on standard error).

No pandas, as in rnnbench.pipeline.files: the terminal reports after a failure, which read the
results, are rnnbench.pipeline.failures'.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Callable, Iterable

from rnnbench.grid.layout import (
    DRY_RUN_STEP,
    FINDINGS_SETTINGS,
    MEASUREMENTS,
    PARTIAL,
    PLOTS,
    STALE,
    TABLES,
    chart_files,
)
from rnnbench.jobs import exclusive
from rnnbench.pipeline import estimate
from rnnbench.pipeline.files import (
    damaged_results,
    damaged_tables,
    listed_results,
    missing_columns,
    move_aside,
    obstacles,
    stale_records,
    write_if_changed,
)

Say = Callable[[str], None]
"""Where a function sends each line it has to say (the workflow: standard error)."""

FINDINGS_KEYS = ("claims", "extrapolate", "margin")
"""The config keys FINDINGS.md depends on that change no measurement."""

NOTHING_MOVED = "(this command runs no job: nothing moved)"


class Refused(Exception):
    """A step that stops the run before any job; its message names the cause and the fix."""


def free_folder(target: str | Path) -> None:
    """Refuse where a file stands in the way of the folder ``target`` goes into.

    Args:
        target: a file to be written or moved there (its folders are made).

    Raises:
        Refused: naming the first such file (e.g. results/stale made a file), and the fix.
    """
    for folder in reversed(Path(target).parents):
        if folder.exists() and not folder.is_dir():
            raise Refused(f"results: {folder} is a file where a folder must be ({target} goes "
                          "below it): move it away")


def blocked_results(jobs: list[tuple[str, str, str]], others: list[str],
                    say: Say, partial: str = PARTIAL) -> dict[str, str]:
    """The training jobs that a file in the way stops from writing (obstacles).

    Snakemake itself stops with a traceback on such a path, even with --keep-going. A training
    job whose result, log or benchmark is blocked is left out and named: the rest of the grid
    is measured, and the run ends with a partial report. Any other blocked output stops the run.

    Args:
        jobs: (result, log, benchmark) of each training job.
        others: every other output of the run (tables, charts, peaks, datasets, logs).
        say: where the line naming the blocked jobs goes.
        partial: the folder that lists what is missing after the run.

    Returns:
        {result: why} of the blocked training jobs, in the order of ``jobs``.

    Raises:
        Refused: an output of ``others`` is blocked.
    """
    found = obstacles([path for job in jobs for path in job] + list(others))
    stopped = [f"{path}: {found[path]}" for path in others if path in found]
    if stopped:
        raise Refused(
            f"results: {len(stopped)} output(s) cannot be written, e.g. {stopped[0]}; "
            "move it away (or mend the link) and run again")
    blocked = {result: next(found[path] for path in (result, log, bench) if path in found)
               for result, log, bench in jobs if {result, log, bench} & set(found)}
    if blocked:
        first, why = next(iter(blocked.items()))
        say(f"results: {len(blocked)} training job(s) cannot write their result, log or "
            f"benchmark and are left out, e.g. {first} ({why}); the rest of the grid is "
            f"measured, then {partial}/ lists what is missing. Move that file away and run "
            "again.")
    return blocked


def stale_tables(changed: dict[str, str], columns: Iterable[str],
                 tables: dict[str, str] = TABLES, unlooked: bool = False) -> list[str]:
    """Say why the tables no longer describe the results on disk.

    Reasons: a listed result file is gone or changed since it was aggregated (stale_records);
    a table is cut short or overwritten (damaged_tables); measurements.csv lacks a column (an
    older workflow's); it is missing beside other tables (a failed aggregation); or the
    tables were made before the first look more_repeats asks for. Snakemake alone may then
    say "Nothing to be done" or leave them in place. Tables of another grid are not stale: a
    run of this grid rewrites them.

    Args:
        changed: {path: ``gone`` or ``changed``} (rnnbench.pipeline.files.changed_results).
        columns: the columns measurements.csv must have (the axes' and load.LATE_COLUMNS).
        tables: the tables by name (layout.TABLES), ``measurements`` among them.
        unlooked: more_repeats is set and checkpoint first_look has not looked yet.

    Returns:
        One line per reason; [] while the tables describe the results.
    """
    measurements = tables["measurements"]
    why = stale_records(changed) + damaged_tables(tables.values())
    older = missing_columns(measurements, list(columns))
    if older:
        why = [f"{measurements} has no column {', '.join(older)} (an older workflow's)"]
    if not Path(measurements).exists() and any(Path(table).exists() for table in tables.values()):
        why = [f"{measurements} is missing (a failed aggregation?)"]
    elif unlooked and Path(measurements).exists():
        why = [f"{measurements} was made before the first look that more_repeats asks for"]
    return why


def set_aside_damaged_results(results: list[str], listed: dict[str, str | None],
                              changed: dict[str, str], dry_run: bool, say: Say,
                              folder: str = STALE, peaks: list[str] = ()
                              ) -> tuple[dict[str, str], list[str]]:
    """Move aside each result file that holds no result record, so the run measures it again.

    A damaged file (files.damaged_results: cut short, overwritten) is handled as a missing
    one. It is moved below ``folder`` (same path below it), never deleted.

    Args:
        results: the grid's training results (relative paths).
        listed: the results measurements.csv lists (rnnbench.pipeline.files.listed_results).
        changed: {path: ``gone`` or ``changed``} of the listed ones (changed_results).
        dry_run: True for a command that runs no job: it moves nothing and says so.
        say: where each line goes.
        folder: where damaged results go.
        peaks: rule peak's files, checked too (files.damaged_results); one moved makes the
            tables stale (``gone``), as they were built with it.

    Returns:
        (``changed``, with each listed result moved away now ``gone`` (a new dict); the
        damaged results, moved or, with ``dry_run``, to be moved by a run).

    Raises:
        Refused: a file stands where ``folder`` or a folder below it must be (free_folder;
            a dry run refuses too).
    """
    changed = dict(changed)
    damaged = damaged_results(results, listed, changed, peaks)
    for path, why in damaged.items():
        target = Path(folder) / path
        free_folder(target)
        if dry_run:
            say(f"results: {path} is not a valid result ({why}): a run moves it to {target} "
                f"and measures it again {NOTHING_MOVED}")
            continue
        target = move_aside(path, target)
        if path in listed or path in peaks:
            changed[path] = "gone"
        say(f"results: {path} was not a valid result ({why}): moved to {target}; it is "
            "measured again")
    return changed, list(damaged)


def remake_damaged_datasets(datasets: dict[str, tuple[dict, str, str]], dry_run: bool,
                            say: Say, folder: str = STALE) -> list[str]:
    """Remake in place each dataset whose .npz no longer has the sha256 its sidecar records.

    A dataset is made from its seed (rule make_data), so remaking it gives the very bytes its
    results were measured on. Snakemake alone would measure again every result that reads a
    damaged file (it is newer than them: rerun-triggers mtime), deleting each before its job
    fails on the sha256 check. Here the damaged file is moved below ``folder``, and the remade
    one gets its sidecar's modification time: those results stay, as measured.

    Args:
        datasets: {name: (make_data's params, the .npz, the sidecar)}.
        dry_run: True for a command that runs no job: it remakes nothing and says so.
        say: where each line goes.
        folder: where a damaged .npz goes.

    Returns:
        The damaged .npz files (remade, or with ``dry_run``, to be remade by a run).

    Raises:
        Refused: where the sidecar is not readable, or the remade file's sha256 is not the
            sidecar's (the sidecar or the generator changed): naming both files and the fix;
            a file stands in the way of ``folder`` (free_folder).
    """
    from rnnbench.measure.data import make_dataset, sha256_file, write_dataset

    damaged = []
    for name, (params, npz, sidecar) in datasets.items():
        if not (Path(npz).is_file() and Path(sidecar).is_file()):
            continue  # rule make_data makes it
        fix = (f"move {npz} and {sidecar} away: the run makes them anew and measures again "
               "every result that reads them")
        try:
            recorded = json.loads(Path(sidecar).read_text())["sha256"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise Refused(f"results: {sidecar} is not a dataset's sidecar (no sha256): {fix}")
        if sha256_file(npz) == recorded:
            continue
        damaged.append(npz)
        free_folder(Path(folder) / npz)
        if dry_run:
            say(f"results: {npz} no longer has the sha256 {sidecar} records (changed since it "
                "was made): a run remakes it from its seed and keeps the results measured on "
                f"it, though the plan below lists their jobs {NOTHING_MOVED}")
            continue
        remade = Path(npz).with_name(f".remade.{Path(npz).name}")
        made = write_dataset(make_dataset(**params), params, remade, f"{remade}.json")
        Path(f"{remade}.json").unlink()
        if made["sha256"] != recorded:
            remade.unlink()
            raise Refused(f"results: {npz} no longer has the sha256 {sidecar} records, and "
                          f"remade from its seed it has another ({made['sha256'][:12]}): {fix}")
        target = move_aside(npz, Path(folder) / npz)
        os.replace(remade, npz)
        when = Path(sidecar).stat().st_mtime_ns  # made with it: no result is older than it
        os.utime(npz, ns=(when, when))
        say(f"results: {npz} was changed since it was made (sha256): moved to {target} and "
            "remade from its seed, the bytes its results were measured on; they are kept")
    return damaged


def set_aside_stale_tables(changed: dict[str, str], columns: Iterable[str], dry_run: bool,
                           say: Say, tables: dict[str, str] = TABLES, plots: str = PLOTS,
                           folder: str = STALE, unlooked: bool = False,
                           narrowed: tuple = ()) -> bool:
    """Move the tables and charts aside where stale_tables says why.

    The run then measures what is missing and aggregates again. So the tables never report a
    run not on disk as it was read.

    Args:
        changed: {path: ``gone`` or ``changed``} (set_aside_damaged_results' return).
        columns: the columns measurements.csv must have (stale_tables).
        dry_run: True for a command that runs no job: it moves nothing and says what a run
            would.
        say: where the line goes.
        tables: the tables by name (layout.TABLES).
        plots: the charts' folder.
        folder: where they go (the charts to its plots/).
        unlooked: more_repeats is set and checkpoint first_look has not looked yet
            (stale_tables).
        narrowed: the command line's options that run other jobs than the whole workflow's
            (hardware.Invocation.narrowed): its run may not rebuild the tables.

    Returns:
        True where a run would move them and this dry run did not.

    Raises:
        Refused: ``folder``, or a folder it holds, is a file (a dry run refuses too).
    """
    why = stale_tables(changed, columns, tables, unlooked)
    if not why:
        return False
    what = f"results: the tables no longer describe the results on disk ({len(why)}: {why[0]})"
    if Path(folder).exists() and not Path(folder).is_dir():
        raise Refused(f"results: {folder} is a file where the stale tables must go: move it away")
    free_folder(Path(folder, "plots", "chart"))
    if dry_run:
        say(f"{what}: a run moves them and the charts to {folder}/, measures what is missing "
            f"and rebuilds them {NOTHING_MOVED}")
        return True
    moved = {table: move_aside(table, Path(folder) / Path(table).name)
             for table in tables.values() if Path(table).exists()}
    for chart in Path(plots).glob("*.*"):
        move_aside(chart, Path(folder, "plots", chart.name))
    renamed = [str(to) for table, to in moved.items() if to.name != Path(table).name]
    kept = f" (as {renamed[0]}, ...: an earlier set-aside's are kept)" if renamed else ""
    rebuilt = (f"a run without {' or '.join(narrowed)} measures what is missing and rebuilds "
               "them" if narrowed else "the tables are rebuilt, after anything missing is measured")
    say(f"{what}: they and the charts are moved to {folder}/{kept}; {rebuilt}")
    return False


def write_findings_settings(config: dict, dry_run: bool, say: Say,
                            path: str = FINDINGS_SETTINGS, report: bool = False) -> bool:
    """Write the settings FINDINGS.md depends on that change no measurement (FINDINGS_KEYS).

    The profile re-runs a rule on changed inputs only (not params, which would re-measure), so
    they are rule findings' input file, rewritten only when they change.

    Args:
        config: the validated config.
        dry_run: True for a command that runs no job: it writes nothing and names a changed
            file.
        say: where the line goes.
        path: the settings file.
        report: True for --report, which would embed FINDINGS.md as written under the
            earlier settings.

    Returns:
        True where a run would rewrite the file and this dry run did not.

    Raises:
        Refused: for --report, where the settings changed, naming the keys.
    """
    settings = {key: config.get(key) for key in FINDINGS_KEYS}
    text = f"{json.dumps(settings, indent=1)}\n"
    if not dry_run:
        write_if_changed(path, text)
        return False
    if Path(path).exists() and Path(path).read_text() != text:
        if report:
            raise Refused(f"results: FINDINGS.md was written under other settings than this "
                          f"config's ({_changed_keys(path, settings)}): a report would hold it "
                          "as it is; run the same command without --report first")
        say("results: the claims, extrapolate or margin changed since FINDINGS.md was written: a run "
            f"rewrites {path} and FINDINGS.md (this command runs no job: nothing written)")
        return True
    return False


def _changed_keys(path: str, settings: dict) -> str:
    """Name the keys of ``settings`` whose value differs in the JSON file at ``path``."""
    try:
        written = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return f"{path} is not readable JSON"
    written = written if isinstance(written, dict) else {}
    return ", ".join(f"{key}: {written.get(key)!r} -> {value!r}" if key != "claims" else
                     "claims changed" for key, value in settings.items()
                     if written.get(key) != value) or "the same values, written otherwise"


def findings_settings(dry_run: bool, path: str = FINDINGS_SETTINGS) -> str | list[str]:
    """Give rule findings' settings input.

    Args:
        dry_run: True for a command that runs no job (write_findings_settings wrote nothing).
        path: the settings file.

    Returns:
        ``path``; [] in a dry run of a folder without it.
    """
    return [] if dry_run and not Path(path).exists() else path


def planned(step: str, steps: list[str]) -> list[str]:
    """Give the placeholder input of a rule that a run redoes after a step done before any job.

    Rule plan_only stands for it in a dry run's plan: Snakemake has no --forcerun to set while
    the Snakefile is read.

    Args:
        step: the step (a function's name: set_aside_stale_tables, write_findings_settings).
        steps: the steps a run would do that this dry run did not.

    Returns:
        [layout.DRY_RUN_STEP of ``step``] if it is among ``steps``, else [].
    """
    return [DRY_RUN_STEP.format(step=step)] if step in steps else []


def check_report_grid(results: list[str], measurements: str = MEASUREMENTS,
                      partial: str = PARTIAL, tables: dict[str, str] = TABLES) -> None:
    """Refuse a report of tables that are not this config's or that do not exist.

    A run with --configfile F and a report without it would put F's results beside this
    grid's job graph; a run that did not finish has no tables to embed.

    Args:
        results: the grid's training results.
        measurements: the measurements table.
        partial: the folder a failed run writes.
        tables: every table the report embeds (layout.TABLES): each must exist.

    Raises:
        Refused: naming the table, a run it lacks or holds, and the fix.
    """
    expected = set(results)
    missing = sorted(result for result in expected if not Path(result).exists())
    listed = set(listed_results(measurements))
    if missing and (len(missing) < len(expected) or not listed):
        raise Refused(
            f"report: the run of this config did not finish: {len(missing)} of "
            f"{len(expected)} training results are missing (e.g. {missing[0]})"
            + (f"; {partial}/ says why, and summarises what was measured"
               if Path(partial).is_dir() else "")
            + ". Run the same command again to finish it, then build the report. A cell "
            "that fails every time (out of memory, say) is left out by removing one of its "
            "axis values from the config (in a file F given with --configfile F; --config "
            "passes a list's items as text, which the schema refuses): the "
            "run then finishes without it, and the report describes the rest")
    for table in (measurements, *(t for t in tables.values() if t != measurements)):
        if not Path(table).exists():  # a run stopped before it, or --until, or a target
            raise Refused(
                f"report: the run of this config did not finish: {table} does not exist; "
                "run the same command without --report to finish it, then build the report")
    if listed != expected:
        extra, lacking = sorted(listed - expected), sorted(expected - listed)
        raise Refused(
            f"report: {measurements} holds the results of another grid than this config's: "
            + "; ".join(
                [f"{len(extra)} of its {len(listed)} runs are not this config's (e.g. "
                 f"{extra[0]})"] * bool(extra)
                + [f"{len(lacking)} of this config's {len(expected)} runs are not in it (e.g. "
                   f"{lacking[0]})"] * bool(lacking))
            + ". Build the report with the options of the run it describes, e.g. snakemake "
            "--report results/report.html --configfile F")


def estimate_line(cells: dict[str, dict], jobs: list[tuple[str, str, str]], config: dict,
                  others: dict[str, list[str]], charts: int,
                  tables: dict[str, str] = TABLES,
                  more: list[tuple[str, str, str]] = (),
                  plan: str | None = None, damaged: Iterable[str] = (),
                  narrowed: tuple = (), forced: tuple = ()) -> str | None:
    """Say how long the run will take here, before any job (a dry run says it too).

    Where another run holds the measuring lock now (exclusive.lock_holder), say who.

    Args:
        cells: the grid's cells by id.
        jobs: (cell_id, impl, result) of each training job.
        more: (cell_id, impl, result) of each job a second look may add (config
            ``more_repeats``): those missing are stated as a cap.
        config: the validated config.
        others: the outputs of the dataset and peak jobs, by kind (``dataset``, ``peak``).
        charts: how many charts the grid has.
        tables: the tables by name (layout.TABLES).
        plan: the Snakemake folder (``.snakemake``) to write the run's plan into
            (estimate.write_plan), which another run's estimate reads while this one
            measures; None writes none (a command that runs no job).
        damaged: results set_aside_damaged_results found (a dry run leaves them in place):
            measured again, so counted as missing.
        narrowed: the command line's options that run fewer jobs (hardware.Invocation):
            the line says it counts the whole workflow's.
        forced: the command line's options that run jobs whose output exists
            (hardware.Invocation): likewise, and where nothing is missing, that those run.

    Returns:
        rnnbench.pipeline.estimate.run_line's line; None when every result and FINDINGS exist
        and nothing is forced.
    """
    line = _whole_estimate(cells, jobs, config, others, charts, tables, more, plan, damaged)
    if line and (narrowed or forced):
        runs = ([f"with {' or '.join(narrowed)} this command runs only some of them"]
                * bool(narrowed)
                + [f"with {' or '.join(forced)} also jobs whose output exists"] * bool(forced))
        return (f"{line} (counted for all of the workflow's missing jobs: "
                f"{'; '.join(runs)}, which -n lists)")
    if not line and forced:
        return (f"time: not estimated: nothing of the whole workflow is missing, and with "
                f"{' or '.join(forced)} this command runs jobs again, which -n lists")
    return line


def _whole_estimate(cells, jobs, config, others, charts, tables, more, plan, damaged):
    """estimate_line's line for the whole workflow's missing jobs (its arguments)."""
    damaged = set(damaged)
    todo = [(cell, impl, result) for cell, impl, result in jobs
            if result in damaged or not Path(result).exists()]
    pending = [(cell, impl) for cell, impl, _ in todo]
    more = [(cell, impl) for cell, impl, result in more if not Path(result).exists()]
    if not pending and not more and Path(tables["findings"]).exists():
        return None
    counts = {kind: sum(not Path(path).exists() for path in paths)
              for kind, paths in others.items()}
    # each job's modelled seconds, scaled by this machine's measurements: read once, for the
    # plan another run reads and for the line
    scaled = estimate.scaled_job_seconds(cells, {*pending, *more}, config,
                                         tables["measurements"], socket.gethostname(),
                                         estimate.local_probes(others.get("peak", ())))
    if plan is not None:
        seconds = scaled[0]
        estimate.write_plan(plan, {result: seconds[(cell, impl)] for cell, impl, result in todo},
                            (sum(seconds[job] for job in more), len(more)), os.getpid(),
                            time.time())
    return estimate.run_line(cells, pending, config,
                             {**counts, "aggregate": 1, "findings": 1, "chart": charts},
                             tables["measurements"], socket.gethostname(), more,
                             exclusive.lock_holder(), scaled)


def overlap_line(measurements: str = MEASUREMENTS) -> str | None:
    """The end-of-run line on the runs another measuring job measured beside.

    Args:
        measurements: the measurements table (load_results: ``others_measuring``, the other
            measuring jobs of this workflow each run saw under another lock, and
            ``others_measuring_in``, their folders).

    Returns:
        The line, where one run or more saw one; None otherwise, or without the table or the
        column (results written before).
    """
    try:
        with open(measurements, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError:
        return None
    own = [row for row in rows if row.get("measured_in", row.get("cell_id")) == row.get("cell_id")]
    looked = [row for row in own if row.get("others_measuring") not in (None, "")]
    hit = [row for row in looked if float(row["others_measuring"]) > 0]
    if not hit:
        return None
    folders = sorted({folder for row in hit
                      for folder in (row.get("others_measuring_in") or "?").split("; ")})
    return (f"overlap: {len(hit)} of {len(looked)} runs in {measurements} were measured while "
            "another measuring job of this workflow measured on this machine under another "
            f"measuring lock (in {', '.join(folders)}); their times may be slowed: FINDINGS.md "
            "says so; give every run on this machine one lock (RNNBENCH_MEASURING_LOCK) and "
            "measure them again")


def after_success(results: list[str], dropped_charts: Iterable[str],
                  partial: str = PARTIAL) -> list[Path]:
    """Clean up after a run that succeeded.

    ``partial`` goes once every result exists, and results/plots/ keeps the current config's
    charts only.

    Args:
        results: the grid's training results.
        dropped_charts: the charts an earlier config may have drawn and this one does not.
        partial: the folder a failed run wrote.

    Returns:
        The charts' files removed.
    """
    if all(Path(result).exists() for result in results):
        shutil.rmtree(partial, ignore_errors=True)
    removed = []
    for path in map(Path, chart_files(dropped_charts)):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed
