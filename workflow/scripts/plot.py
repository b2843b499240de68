"""Rule plot: one Altair chart, saved as offline HTML and as SVG."""

import os
import sys

sys.stderr = open(snakemake.log[0], "w")
os.dup2(sys.stderr.fileno(), 2)  # a crash of the renderer itself (V8) is logged too

from rnnbench.costmodel.fit import read_fits  # noqa: E402
from rnnbench.report.charts import build_chart, save_chart  # noqa: E402
from rnnbench.results.load import read_table  # noqa: E402

chart = build_chart(snakemake.wildcards.chart, read_table(snakemake.input.summary),
                    read_table(snakemake.input.cumulative),
                    read_table(snakemake.input.measurements),
                    read_fits(snakemake.input.costmodel))
save_chart(chart, snakemake.output.html, snakemake.output.svg)
print(f"wrote {snakemake.output.html} and {snakemake.output.svg}", file=sys.stderr)
