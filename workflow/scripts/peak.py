"""Rule peak: the device's float32 matmul rate with TensorFlow (rnnbench.measure.roofline),
and on a CPU the machine's unit costs (rnnbench.measure.probe) in the same run."""

import json
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)

from rnnbench.jobs import interrupt  # noqa: E402
from rnnbench.jobs.jobstart import check_still_bounded, start_measuring_job  # noqa: E402

# a timing too: bounded and alone, as train.py
start_measuring_job(lambda line: print(line, file=sys.stderr), snakemake.log[0],
                    snakemake.resources.mem_mb, snakemake.resources.runtime, snakemake.rule)

from rnnbench.measure import metadata, roofline  # noqa: E402
from rnnbench.measure.frameworks import check_tensorflow, keep_jax_out  # noqa: E402
from rnnbench.measure.model import import_tf  # noqa: E402
from rnnbench.measure.probe import probe  # noqa: E402

device = snakemake.params.device
intra, inter = int(snakemake.wildcards.threads), 1
tf_version = snakemake.wildcards.tf_version
keep_jax_out()  # as train.py's TensorFlow jobs
tf = import_tf()
check_tensorflow(tf, tf_version)
peak = roofline.measure_matmul_peak(tf, roofline.PEAK_SIZE[device], roofline.PEAK_REPEATS,
                                    intra, inter, device)
# the unit costs the cost model is written in, at the training jobs' threads (TF1 graph mode
# on the CPU: none on a GPU)
unit_costs = probe(tf, intra, inter) if device == "cpu" else None
meta = {**metadata.collect(metadata.tensorflow_info(tf, device)), **dict(snakemake.params.workflow_meta),
        "intra_op_parallelism_threads": intra, "inter_op_parallelism_threads": inter}
check_still_bounded()
interrupt.write_result_whole(snakemake.output[0], json.dumps(
    {"peak": peak, "probe": unit_costs, "tf_version": tf_version, "metadata": meta}, indent=1))
print(f"{peak['size']}x{peak['size']} float32 matmul: {peak['flop_per_s'] / 1e9:.1f} GFLOP/s "
      f"(median of {peak['repeats']}, IQR / median {peak['iqr_over_median']:.2f})",
      file=sys.stderr)
