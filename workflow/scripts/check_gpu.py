"""Rule check_gpu: print (and log) what TensorFlow sees where the rules run (bare, or in the image).

Fails when the config's device is "gpu" and TensorFlow sees no GPU, naming what it found.
"""

import json
import sys

from rnnbench import metadata
from rnnbench.model import import_tf

tf = import_tf()
device = snakemake.config["device"]
seen = metadata.collect(tf, device)
report = {key: seen[key] for key in (
    "tf_version", "is_cuda_build", "cuda_version", "cudnn_version", "gpus_visible",
    "cuda_visible_devices", "python_prefix", "tensorflow_path", "apptainer_container")}
report["gpu_driver"] = metadata.gpu_driver()  # asked even when TensorFlow sees no GPU
text = json.dumps(report, indent=1)
print(text)
with open(snakemake.log[0], "w") as log:
    log.write(text + "\n")
if device == "gpu" and not seen["gpus_visible"]:
    sys.exit("check_gpu: device is 'gpu' but TensorFlow sees no GPU "
             f"(CUDA build: {seen['is_cuda_build']}, driver: {report['gpu_driver']}); "
             "in an image, run with --use-singularity and apptainer-args --nv")
