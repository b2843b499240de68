"""Rules train_static / train_dynamic: one timed training run in this fresh process, alone on
the machine (rnnbench.exclusive)."""

import json
import logging
import sys
import time

sys.stderr = open(snakemake.log[0], "w", buffering=1)
logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                    format="%(asctime)s %(levelname)s %(message)s")

from rnnbench.exclusive import measure_alone  # noqa: E402
from rnnbench.interrupt import exit_with_snakemake  # noqa: E402

# a Snakemake that is killed takes this job with it: no result written after the workflow died
exit_with_snakemake(logging.getLogger("rnnbench").error)
# before the framework's import: no other measuring job runs beside this one, whatever --cores
alone = measure_alone(logging.getLogger("rnnbench").info)

from rnnbench import bench  # noqa: E402
from rnnbench.axes import JAX_APIS  # noqa: E402
from rnnbench.frameworks import keep_jax_out  # noqa: E402
from rnnbench.data import load_dataset  # noqa: E402
from rnnbench.schema import validate_result  # noqa: E402

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
    exclusive={**alone, "end_s": time.time()},
)
validate_result(result)
with open(snakemake.output.result, "w") as handle:
    json.dump(result, handle, indent=1)
logging.getLogger("rnnbench").info("wrote %s", snakemake.output.result)
