"""Where a run's files live: the one home of the results tree's layout.

The workflow (workflow/rules/*.smk), `rnnbench jax` (rnnbench.commands.jax),
aggregation (which checks that a result records what its path says) and ``rnnbench compare``
(which searches a folder for results) all spell a path through these names and functions:

    <runs>/<protocol>/<cell_id>/<static|dynamic>/repeat<N>.json      a training result
    <runs>/<protocol>/peak_intra<N>_tf<version>.json                  rule peak's matmul rate
    <runs>/<protocol>/first_look.json                 checkpoint first_look's more repeats

A run's tree, below the working directory the workflow runs in (results/README.md explains
each file):

    results/runs|logs|benchmarks/<protocol>/...     the training jobs' results, logs, benchmarks
    results/data/<dataset>.npz|.json                 a dataset and its sidecar
    results/measurements.csv, summary.csv, cumulative_time.csv, FINDINGS.md     the tables
    results/plots/<chart>.html|.svg                  the charts
    results/logs/<rule>.log, results/logs/<rule>/<name>.log     the other rules' logs
    results/findings_settings.json                   the settings FINDINGS.md depends on
    results/partial/, results/stale/                 after a failure; tables set aside

This module imports nothing but the standard library: the GPU machine runs it with JAX alone.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
"""The repository's root (the workflow's folder: Snakefile, config.yaml, docs/)."""
CONFIG_SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
"""The config's JSON-Schema, where every key's default lives."""

IMPLEMENTATIONS = ("static", "dynamic")
"""The two implementations every cell runs: static_rnn (unrolled) and dynamic_rnn (a loop),
or each api's counterpart (rnnbench.grid.vocabulary names them)."""
RESULT_PATTERN = "{runs}/{cell}/{impl}/repeat{repeat}.json"
"""A training result's path under a runs folder (``runs``: results/runs/<protocol>); the
fields are Snakemake wildcards in the rules' outputs."""
RESULT_GLOB = "repeat*.json"
"""What a search for training results matches (rule peak's files do not)."""
_RESULT_NAME = re.compile(r"repeat(\d+)\.json")


def result_path(runs: str | Path, cell_id: str, impl: str, repeat: int | str) -> str:
    """Return the path of a training result under a runs folder.

    Args:
        runs: a protocol's runs folder.
        cell_id: the cell's id.
        impl: 'static' or 'dynamic'.
        repeat: the repeat number, or a wildcard (``{repeat}``).

    Returns:
        ``<runs>/<cell_id>/<impl>/repeat<repeat>.json`` (RESULT_PATTERN).
    """
    return RESULT_PATTERN.format(runs=runs, cell=cell_id, impl=impl, repeat=repeat)


def result_pattern(runs: str | Path, suffix: str = ".json") -> str:
    """Return the Snakemake pattern of a runs folder's results.

    Args:
        runs: a protocol's runs folder (or the logs' or benchmarks' one).
        suffix: replaces ``.json``: ``.log`` for the logs, ``.tsv`` for the benchmarks.

    Returns:
        result_path with ``{cell}``, ``{impl}`` and ``{repeat}`` left as wildcards.
    """
    return result_path(runs, "{cell}", "{impl}", "{repeat}").removesuffix(".json") + suffix


def parse_result_path(path: str | Path) -> tuple[str, str, int] | None:
    """Read the cell, implementation and repeat that a result's path names.

    Args:
        path: a result file's path, laid out as the module docstring says.

    Returns:
        (cell_id, impl, repeat); None for a file laid out otherwise (a hand-made table's rows).
    """
    path = Path(path)
    match = _RESULT_NAME.fullmatch(path.name)
    if not match or path.parent.name not in IMPLEMENTATIONS:
        return None
    return path.parent.parent.name, path.parent.name, int(match[1])


def protocol_folder(path: str | Path) -> Path | None:
    """Return the protocol's folder a training result lies in.

    Args:
        path: a result file's path, ``<protocol>/<cell>/<impl>/repeat<N>.json``.

    Returns:
        ``<protocol>`` (with what lies above it); None for a path laid out otherwise.
    """
    path = Path(path)
    return path.parents[2] if parse_result_path(path) and len(path.parents) > 3 else None


def peak_path(runs: str | Path, threads: int | str, tf_version: str,
              suffix: str = ".json") -> str:
    """Return the path of rule peak's matmul rate.

    Args:
        runs: a protocol's runs folder (or the logs' one, with ``suffix`` ``.log``).
        threads: intra-op threads (a wildcard allowed).
        tf_version: the TensorFlow version (a wildcard allowed).
        suffix: replaces ``.json``.

    Returns:
        ``<runs>/peak_intra<threads>_tf<tf_version><suffix>``.
    """
    return f"{runs}/peak_intra{threads}_tf{tf_version}{suffix}"


def first_look_path(runs: str | Path) -> str:
    """Return the path of checkpoint first_look's decision under ``runs`` (one protocol's runs).

    The file says which cells the first look left undecided and the jobs it adds.
    """
    return f"{runs}/first_look.json"


RESULTS = "results"
"""The results tree's root, relative to the working directory the workflow runs in."""
MEASUREMENTS = f"{RESULTS}/measurements.csv"
"""The measurements table: one row per run (rule aggregate)."""
SUMMARY = f"{RESULTS}/summary.csv"
"""Per-cell statistics (rule aggregate)."""
CUMULATIVE = f"{RESULTS}/cumulative_time.csv"
"""Cumulative training time per cell and implementation (rule aggregate)."""
COSTMODEL = f"{RESULTS}/costmodel.json"
"""The cost model fitted to the run's runs, once (rule aggregate; costmodel.fit.write_fits)."""
FINDINGS = f"{RESULTS}/FINDINGS.md"
"""The verdicts and their numbers (rule findings)."""
TABLES = {"measurements": MEASUREMENTS, "summary": SUMMARY, "cumulative": CUMULATIVE,
          "costmodel": COSTMODEL, "findings": FINDINGS}
"""Every table a run writes, by name: what is set aside when they no longer describe the
results on disk."""
FINDINGS_SETTINGS = f"{RESULTS}/findings_settings.json"
"""The settings FINDINGS.md depends on that change no measurement (the claims, extrapolate,
margin)."""
PLOTS = f"{RESULTS}/plots"
"""The charts' folder."""
CHART_FORMATS = ("html", "svg")
"""The files of each chart, by extension."""
PARTIAL = f"{RESULTS}/partial"
"""After a failed run: missing.csv and the tables of the runs that exist."""
STALE = f"{RESULTS}/stale"
"""Where results that are not valid and tables that no longer describe them are set aside."""
LOGS = f"{RESULTS}/logs"
"""The logs' root."""
DRY_RUN_STEP = f"{RESULTS}/.dry-run/{{step}}"
"""The placeholder of a step a run does before any job, in a dry run's plan (rule plan_only)."""


def runs_folder(protocol: str) -> str:
    """The folder of a protocol's training results and matmul peaks."""
    return f"{RESULTS}/runs/{protocol}"


def logs_folder(protocol: str) -> str:
    """The folder of a protocol's training and peak logs."""
    return f"{LOGS}/{protocol}"


def benchmarks_folder(protocol: str) -> str:
    """The folder of a protocol's training benchmarks (Snakemake's ``benchmark:`` files)."""
    return f"{RESULTS}/benchmarks/{protocol}"


def dataset_path(name: str, ext: str = "npz") -> str:
    """The path of dataset ``name`` (a wildcard allowed); ``ext`` ``json`` for its sidecar."""
    return f"{RESULTS}/data/{name}.{ext}"


def chart_path(chart: str, ext: str = "svg") -> str:
    """The path of ``chart`` (a wildcard allowed) as ``ext`` (one of CHART_FORMATS)."""
    return f"{PLOTS}/{chart}.{ext}"


def chart_files(charts) -> list[str]:
    """Every file of each of ``charts`` (chart names), in CHART_FORMATS, chart by chart."""
    return [chart_path(chart, ext) for chart in charts for ext in CHART_FORMATS]


def rule_log(rule: str, name: str | None = None) -> str:
    """Return the log of rule ``rule``.

    Args:
        rule: the rule's name.
        name: for a rule with a job per name, the job's name (a wildcard allowed); else None.

    Returns:
        results/logs/<rule>.log, or results/logs/<rule>/<name>.log.
    """
    return f"{LOGS}/{rule}.log" if name is None else f"{LOGS}/{rule}/{name}.log"
