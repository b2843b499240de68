# static_rnn against dynamic_rnn: graph construction, setup and step time over a grid.
# This file is a table of contents; the rules live in workflow/rules/, their logic in
# workflow/scripts/rnnbench/ (an importable, tested package).
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/config.smk"


configfile: CONFIG_YAML


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/hooks.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/plot.smk"
include: "workflow/rules/findings.smk"
include: "workflow/rules/check.smk"


rule all:
    default_target: True
    input:
        targets(),


# Every rule is defined now: refuse an override of a rule the workflow lacks (Snakemake
# would ignore it without a word).
try:
    hardware.check_rule_names(INVOCATION, {rule.name for rule in workflow.rules})
except ValueError as error:
    refuse(f"{error}")
