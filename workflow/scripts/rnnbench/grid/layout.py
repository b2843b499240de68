"""Where a run's files live: the one home of the results tree's layout.

The workflow (workflow/rules/common.smk), `rnnbench jax` (rnnbench.commands.jax),
aggregation (which checks that a result records what its path says) and ``rnnbench compare``
(which searches a folder for results) all spell a path through these functions:

    <runs>/<protocol>/<cell_id>/<static|dynamic>/repeat<N>.json      a training result
    <runs>/<protocol>/peak_intra<N>_tf<version>.json                  rule peak's matmul rate

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
    """The path of the result of ``cell_id``'s ``impl`` run in ``repeat`` under ``runs``
    (a protocol's runs folder). ``repeat`` may be a wildcard (``{repeat}``)."""
    return RESULT_PATTERN.format(runs=runs, cell=cell_id, impl=impl, repeat=repeat)


def result_pattern(runs: str | Path, suffix: str = ".json") -> str:
    """The Snakemake pattern of a runs folder's results, ``{cell}``, ``{impl}`` and
    ``{repeat}`` left as wildcards; ``suffix`` replaces ``.json`` (``.log`` for the logs,
    ``.tsv`` for the benchmarks, under their own roots)."""
    return result_path(runs, "{cell}", "{impl}", "{repeat}").removesuffix(".json") + suffix


def parse_result_path(path: str | Path) -> tuple[str, str, int] | None:
    """(cell_id, impl, repeat) that a result's path names, for the layout above; None for a
    file laid out otherwise (a hand-made table's rows)."""
    path = Path(path)
    match = _RESULT_NAME.fullmatch(path.name)
    if not match or path.parent.name not in IMPLEMENTATIONS:
        return None
    return path.parent.parent.name, path.parent.name, int(match[1])


def peak_path(runs: str | Path, threads: int | str, tf_version: str,
              suffix: str = ".json") -> str:
    """The path of rule peak's matmul rate at ``threads`` intra-op threads and
    ``tf_version`` under ``runs`` (wildcards allowed); ``suffix`` replaces ``.json`` (``.log``
    for its log, under the logs' root)."""
    return f"{runs}/peak_intra{threads}_tf{tf_version}{suffix}"
