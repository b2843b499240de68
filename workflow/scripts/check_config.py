"""Check config files as the workflow does before any job, without Snakemake:

    .venv/bin/python workflow/scripts/check_config.py [config.yaml] [my-grid.yaml ...]

Later files override earlier ones' keys, as Snakemake's --configfile does over config.yaml.
Use it on a file meant for --configfile: Snakemake reads those before the workflow is read, and
itself reports a missing one with a traceback and a YAML syntax error without its line.
Exit status 0 and a line of what the grid holds, or 1 and the error."""

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from rnnbench import grid  # noqa: E402
from rnnbench.checks import check_config  # noqa: E402
from rnnbench.resources import machine_mem_mb  # noqa: E402

files = sys.argv[1:] or ["config.yaml"]
try:
    for path in files:
        grid.check_config_file(path)  # before yaml.safe_load: its errors name file and line
    config = {}
    for path in files:
        config.update(yaml.safe_load(Path(path).read_text()) or {})
    cells = check_config(files, config, machine_mem_mb())
except ValueError as error:
    sys.exit(f"config: {error}")
jobs = len(grid.job_priorities(cells, config["repeats"], grid.shared_runs(cells)))
print(f"config: {' + '.join(files)}: {len(cells)} cells, {jobs} training jobs")
