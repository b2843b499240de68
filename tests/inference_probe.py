"""Inference side of tests/measure/test_keras_model.py, run in a fresh Python (eager TensorFlow): one
timed run (bench.run) of a tiny cell per keras api, static and dynamic, in mode train and in
mode inference, from the same initial weights and batches. Prints one JSON line: per api,
impl and mode, the record's first and last loss, graph node count, FLOP per step and
fetches, and whether the record validates against the result schema.
"""

import json

from rnnbench.measure import bench, data
from rnnbench.grid.axes import ABLATION_DEFAULTS
from rnnbench.grid.axes import DEFAULT_TF_VERSION
from rnnbench.measure.schema import validate_result

CELL = {"cell": "lstm", "batch_size": 4, "max_len": 5, "sequence_length": {"uniform": [1, 5]},
        "num_units": 4, "input_dim": 3, "tf_version": DEFAULT_TF_VERSION,
        **ABLATION_DEFAULTS, "dataset": "tiny"}
PROTOCOL = {"steps": 3, "min_measure_s": 0, "warmup_steps": 1, "max_warmup_steps": 1,
            "hook_every": 3, "device": "cpu", "seed": 0, "log_every": 2,
            "grappler_alone": False}
META = {"git": None, "image_sha256": None}


def runs():
    arrays = data.make_dataset(max_len=5, sequence_length={"uniform": [1, 5]}, input_dim=3,
                               num_classes=4, num_samples=8, seed=1)
    out = {}
    for api in ("keras", "keras_xla"):
        for impl in ("static", "dynamic"):
            for mode in ("train", "inference"):
                result = bench.run(impl, {**CELL, "api": api, "mode": mode}, arrays, PROTOCOL,
                                   META)
                result.update(cell_id="tiny", repeat=1, job_threads=1,
                              data={"path": "x", "sha256": "y"})
                validate_result(result)
                out[f"{api} {impl} {mode}"] = {
                    "loss": [result["loss"]["first"], result["loss"]["last"]],
                    "nodes": result["graph"]["node_count"],
                    "flop": result["work"]["train_step_flop"],
                    "fetches": result["protocol"]["fetches"],
                    "steps": len(result["timings"]["step_s"]),
                    "phases": [result["timings"][k] for k in ("graph_construction_s",
                                                              "first_step_s")]}
    return out


if __name__ == "__main__":
    print(json.dumps(runs()))
