"""Every check of a config that runs before any job (common.smk), in one function, so that
the workflow and the tests (tests/test_config_fuzz.py) run the same ones."""

from __future__ import annotations

from pathlib import Path

from rnnbench import grid
from rnnbench.resources import check_fits


def check_config(files: list[str | Path], config: dict, available_mb: int | None) -> dict:
    """Check the config files and the merged ``config`` (filled in with the schema's defaults,
    in place), and that the grid's largest training job fits ``available_mb`` MiB (None: not
    checked, e.g. on a cluster, whose nodes are sized by each job's mem_mb request).

    Args:
        files: the config files as given (grid.check_config_file: YAML syntax, duplicate
            keys, YAML 1.1 readings).
        config: the config Snakemake loaded from them (and --config).
        available_mb: the memory a local job may use, in MiB.

    Returns:
        grid.cells(config): {cell_id: cell}.

    Raises:
        ValueError: one line naming the key (or file and line), the value and the fix.
    """
    for path in files:
        grid.check_config_file(path)
    grid.validate_config(config)
    cells = grid.cells(config)
    if available_mb is not None:
        check_fits(cells, config["num_samples"], available_mb)
    return cells
