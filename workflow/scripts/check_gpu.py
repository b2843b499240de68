"""Rule check_gpu: print (and log) what TensorFlow sees where the rules run (bare, or in the image).

Fails when the config's device is "gpu" and TensorFlow sees no GPU, naming what it found.
"""

import json
import sys

from rnnbench.measure import metadata
from rnnbench.measure.model import import_tf

tf = import_tf()
device = snakemake.config["device"]
seen = metadata.collect(metadata.tensorflow_info(tf, device))
report = {key: seen[key] for key in (
    "tf_version", "is_cuda_build", "cuda_version", "cudnn_version", "gpus_visible",
    "cuda_visible_devices", "python_prefix", "tensorflow_path", "apptainer_container")}
report["gpu_driver"] = metadata.gpu_driver()  # asked even when TensorFlow sees no GPU
report["image_sha256"] = snakemake.params.workflow_meta["image_sha256"]
text = json.dumps(report, indent=1)
print(text)
with open(snakemake.log[0], "w") as log:
    log.write(text + "\n")
if device == "gpu" and not seen["gpus_visible"]:
    if not seen["is_cuda_build"]:
        why = ("this TensorFlow is a CPU build: run with --use-singularity, which uses the "
               "cuda image for device: gpu")
    elif report["gpu_driver"] is None:
        why = ("no NVIDIA driver is visible (nvidia-smi finds none): check that nvidia-smi works "
               "on this host, and, in an image, that Apptainer gets --nv (profiles/default "
               "passes it)")
    else:
        why = (f"the driver ({report['gpu_driver']}) may be too old for CUDA "
               f"{seen['cuda_version']}, or CUDA_VISIBLE_DEVICES "
               f"({seen['cuda_visible_devices']!r}) hides the GPUs")
    sys.exit(f"check_gpu: device is 'gpu' but TensorFlow sees no GPU: {why}")
