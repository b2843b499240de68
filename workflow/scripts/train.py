"""Rules train_static / train_dynamic: one timed training run in this fresh process, alone on
the machine (rnnbench.jobs.exclusive)."""

import json
import logging
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)
logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                    format="%(asctime)s %(levelname)s %(message)s")

from rnnbench.jobs.jobstart import (  # noqa: E402
    check_still_bounded, end_measuring_job, start_measuring_job)

# before the framework's import: Ctrl-C or a dead Snakemake ends this job at once, no other
# measuring job runs beside it (whatever --cores), and it stays within mem_mb and runtime
alone = start_measuring_job(logging.getLogger("rnnbench").warning, snakemake.log[0],
                            snakemake.resources.mem_mb, snakemake.resources.runtime,
                            snakemake.rule)

from rnnbench.measure import bench  # noqa: E402
from rnnbench.grid.axes import JAX_APIS  # noqa: E402
from rnnbench.measure.frameworks import keep_jax_out  # noqa: E402
from rnnbench.measure.data import load_dataset  # noqa: E402
from rnnbench.measure.schema import validate_result  # noqa: E402

if snakemake.params.cell["api"] not in JAX_APIS:
    keep_jax_out()  # TensorFlow would import it, unused (see its docstring)
arrays, sidecar = load_dataset(snakemake.input.npz, snakemake.input.sidecar)
# log_every is read from the config, not params: changing it must not re-run a measurement.
protocol = {**snakemake.params.protocol, "log_every": snakemake.config["log_every"]}
result = bench.run(snakemake.params.impl, dict(snakemake.params.cell), arrays, protocol,
                   dict(snakemake.params.workflow_meta))
result.update(
    cell_id=snakemake.wildcards.cell,
    repeat=int(snakemake.wildcards.repeat),
    job_threads=snakemake.threads,
    data={"path": snakemake.input.npz, "sha256": sidecar["sha256"]},
    exclusive=end_measuring_job(alone, logging.getLogger("rnnbench").warning),
)
validate_result(result)
check_still_bounded()
with open(snakemake.output.result, "w") as handle:
    json.dump(result, handle, indent=1)
logging.getLogger("rnnbench").info("wrote %s", snakemake.output.result)
