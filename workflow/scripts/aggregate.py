"""Rule aggregate: result JSONs -> measurements.csv (one row per run), summary.csv (one row
per cell, with each implementation's fraction of rule peak's matmul rate) and
cumulative_time.csv (total time against steps, for the break-even chart)."""

import json
import sys

sys.stderr = open(snakemake.log[0], "w")

from rnnbench.costmodel.fit import fit_groups, write_fits  # noqa: E402
from rnnbench.results.load import load_results, read_table, share_runs  # noqa: E402
from rnnbench.stats.summary import summarize, write_cumulative_time  # noqa: E402

# a cell away from its reference only in axes that leave static_rnn unchanged takes the
# reference's static runs (cells.shared_runs): they were measured once
# each run's recorded settings against its planned cell's and protocol (load_results' cells,
# protocol)
runs = share_runs(load_results(snakemake.input.results, snakemake.params.benchmarks,
                               dict(snakemake.params.cells), dict(snakemake.params.protocol)),
                  dict(snakemake.params.shared))
runs.to_csv(snakemake.output.measurements, index=False)
peaks = {}  # float32 matmul FLOP/s by intra-op threads and tf_version (rule peak)
for path in snakemake.input.peaks:
    with open(path) as handle:
        record = json.load(handle)
    key = (record["metadata"]["intra_op_parallelism_threads"], record["tf_version"])
    peaks[key] = record["peak"]["flop_per_s"]
summary = summarize(runs, peak_flop_per_s=peaks, confidence=snakemake.params.confidence)
summary.to_csv(snakemake.output.summary, index=False)
write_cumulative_time(summary, snakemake.output.cumulative)
# the cost model, fitted once to the table as every reader reads it (FINDINGS, the charts)
write_fits(fit_groups(read_table(snakemake.output.measurements)), snakemake.output.costmodel)
print(f"{len(runs)} runs, {len(summary)} cells", file=sys.stderr)
