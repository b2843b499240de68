"""Time one training run of static_rnn or dynamic_rnn: graph construction, setup, every step.

One call of ``run`` is one measurement, meant to be the only one in its process. It hands
the cell to its api's runner (rnnbench.measure.runners), which times graph_construction_s,
init_s, first_step_s, warmup_step_s, step_s and optimisation_s with ``time.perf_counter``.
record.result_record assembles the result (result.schema.yaml). What each phase holds, per
api: docs/experiment.md, A run's phases, in every api.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rnnbench.measure.runners import runner_for


def run(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
        workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """Build, set up and train one model; return the result record (result.schema.yaml).

    Args:
        impl: "static" or "dynamic".
        cell: the cell's axes: cell, batch_size, max_len, num_units, input_dim, api, mode,
            unroll (the JAX apis), tf_version (major.minor: the TensorFlow the job must run),
            and the ablation axes of axes.ABLATION_DEFAULTS. sequence_length and dataset are
            recorded as given. The api picks the model and runner: compat_v1,
            rnnbench.measure.model in a TF1 Session (runners.compat_v1); keras / keras_xla,
            rnnbench.measure.keras_model (runners.keras); keras_jax / jax_scan, runners.jax.
        arrays: ``inputs`` float32 [num_samples, max_len, input_dim], ``sequence_length``
            int32 [num_samples], ``labels`` int32 [num_samples] (data.make_dataset).
        protocol: steps, min_measure_s (seconds), warmup_steps, max_warmup_steps, hook_every,
            device ("cpu"/"gpu"), seed, log_every, grappler_alone (compat_v1: time Grappler
            alone after the steps; else None).
        workflow_meta: what the job cannot see itself, merged into the metadata: ``git`` (the
            workflow's commit, metadata.git_commit) and ``image_sha256`` (the Apptainer
            image's; None in a bare run). The workflow computes both before any job.

    Raises:
        ValueError: when the arrays' shapes do not match the cell, or no runner measures its
            api.
        RuntimeError: when device is "gpu" and the framework sees no GPU; when TensorFlow is
            not at the cell's tf_version; or when, inside an Apptainer image, a package of the
            job came from outside the image's Python (frameworks.check_tensorflow,
            frameworks.check_image_imports).
    """
    expected = (cell["max_len"], cell["input_dim"])
    if arrays["inputs"].shape[1:] != expected:
        raise ValueError(f"inputs: shape {arrays['inputs'].shape} does not match [*, {expected}]")
    return runner_for(cell["api"]).run(impl, cell, arrays, protocol, workflow_meta)
