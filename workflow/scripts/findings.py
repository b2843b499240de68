"""Rule findings: summary.csv + measurements.csv + the config's claims -> FINDINGS.md."""

import json
import sys

sys.stderr = open(snakemake.log[0], "w")

from rnnbench.costmodel.fit import read_fits  # noqa: E402
from rnnbench.report.findings import findings_markdown  # noqa: E402
from rnnbench.results.load import read_table  # noqa: E402

text = findings_markdown(read_table(snakemake.input.summary),
                         read_table(snakemake.input.measurements),
                         list(snakemake.params.claims), snakemake.config,
                         read_fits(snakemake.input.costmodel),
                         [json.loads(open(path).read()) for path in snakemake.input.peaks])
with open(snakemake.output[0], "w") as handle:
    handle.write(text)
print(f"wrote {snakemake.output[0]}", file=sys.stderr)
