"""Checkpoint first_look: the planned repeats' results -> first_look.json, the cells whose step
ratio is undecided and the training jobs that add more repeats to them (rnnbench.pipeline.looks)."""

import json
import sys

sys.stderr = open(snakemake.log[0], "w")

from rnnbench.pipeline.looks import first_look  # noqa: E402

look = first_look(list(snakemake.input.results), list(snakemake.params.benchmarks),
                  dict(snakemake.params.cells), dict(snakemake.params.protocol),
                  dict(snakemake.params.shared), [tuple(job) for job in snakemake.params.jobs],
                  snakemake.params.repeats, snakemake.params.margin, snakemake.params.confidence)
with open(snakemake.output[0], "w") as handle:
    json.dump(look, handle, indent=1)
print(f"{len(look['undecided'])} of {len(look['cells'])} cells undecided: "
      f"{len(look['jobs'])} more training jobs", file=sys.stderr)
