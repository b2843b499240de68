# Read before the Snakefile's configfile: directive: the package on the path, and the default
# config file's YAML checked, so that a syntax error names its file, line and column (Snakemake
# says only "Config file is not valid JSON or YAML"). Files given with --configfile are loaded
# by Snakemake's command line before any workflow code runs: see common.smk for what is
# checked of them, and README for what cannot be.
import sys
from pathlib import Path


def refuse(message):
    """Stop the run while the Snakefile is read, before any job: ``message`` on standard error
    and exit status 1. A WorkflowError raised here would be printed with the frames of the
    Snakefile lines that raised it, which tell a user nothing."""
    print(message, file=sys.stderr)
    raise SystemExit(1)


# the rnnbench package and the rules' scripts
SCRIPTS = Path(workflow.basedir) / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from rnnbench.grid.configfiles import base_config, check_config_file  # noqa: E402

# The grid's base is the working directory's config.yaml; where there is none (Snakemake's
# --directory elsewhere, with --configfile), the workflow's own, never the schema's defaults
# alone: a preset given with --configfile changes config.yaml's values, not the defaults'.
CONFIG_YAML = base_config(workflow.basedir)
if Path(CONFIG_YAML).exists():
    try:
        check_config_file(CONFIG_YAML)
    except ValueError as error:
        refuse(f"config: {error}")
