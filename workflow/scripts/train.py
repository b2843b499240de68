"""Rules train_static / train_dynamic: one timed training run in this fresh process, alone on
the machine (rnnbench.jobs.exclusive).

    python workflow/scripts/train.py --rule ... --workflow-meta JSON 2> LOG

Snakemake runs it as the rules' shell command (rnnbench.jobs.command.TRAIN_COMMAND, which
names every argument); its standard error is the job's log."""

import json
import logging
import sys

from rnnbench.jobs.command import parse_train_arguments

job = parse_train_arguments()
sys.stderr.reconfigure(line_buffering=True)
logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                    format="%(asctime)s %(levelname)s %(message)s")

from rnnbench.jobs import interrupt  # noqa: E402
from rnnbench.jobs.jobstart import (  # noqa: E402
    check_still_bounded, end_measuring_job, start_measuring_job)

# before the framework's import: Ctrl-C or a dead Snakemake ends this job at once, no other
# measuring job runs beside it (whatever --cores), and it stays within mem_mb and runtime
alone = start_measuring_job(logging.getLogger("rnnbench").warning, job.log, job.mem_mb,
                            job.runtime_min, job.rule)

from rnnbench.measure import bench  # noqa: E402
from rnnbench.grid.axes import JAX_APIS  # noqa: E402
from rnnbench.measure.frameworks import keep_jax_out  # noqa: E402
from rnnbench.measure.data import load_dataset  # noqa: E402
from rnnbench.measure.schema import validate_result  # noqa: E402

if job.cell["api"] not in JAX_APIS:
    keep_jax_out()  # TensorFlow would import it, unused (see its docstring)
arrays, sidecar = load_dataset(job.npz, job.sidecar)
protocol = {**job.protocol, "log_every": job.log_every}
result = bench.run(job.impl, job.cell, arrays, protocol, job.workflow_meta)
result.update(
    cell_id=job.cell_id,
    repeat=job.repeat,
    job_threads=job.threads,
    data={"path": job.npz, "sha256": sidecar["sha256"]},
    exclusive=end_measuring_job(alone, logging.getLogger("rnnbench").warning),
)
validate_result(result)
check_still_bounded()
interrupt.write_result_whole(job.result, json.dumps(result, indent=1))
logging.getLogger("rnnbench").info("wrote %s", job.result)
