"""Time one training run of static_rnn or dynamic_rnn: graph construction, setup, every step.

One call of ``run`` is one measurement, meant to be the only one in its process (the
workflow starts a fresh process per (cell, implementation, repeat), as pyperf does). ``run``
hands it to the runner of the cell's api (rnnbench.measure.runners: compat_v1, keras, jax), which
times the same phases in every framework, each with ``time.perf_counter``, in this order:

- ``graph_construction_s``: Python builds the step's graph (compat_v1: the tf.Graph; Keras
  and JAX: tracing the step), no framework runtime work. (Keras and JAX run it after init.)
- ``init_s``: what the run initialises before its first step: compat_v1's Session and
  variable initialisation, Keras's model setup, JAX's parameters, optimizer state and
  batches on the device; the initial weights and the input data included.
- ``first_step_s``: the first step, which pays the step's optimisation (Grappler, or XLA's
  compilation) and executor creation.
- ``warmup_step_s``: the warm-up steps that follow: at least ``warmup_steps``, then on until
  the step times have settled (steady.warm_up), at most ``max_warmup_steps``; the result
  records whether they settled (``warmup_settled``).
- ``step_s``: the measured steps, the steady state: at least ``steps``, and for at least
  ``min_measure_s`` seconds (timing.warm_and_measure). ``block_spread`` says how much the
  medians of its 50-step blocks differ (steady.block_spread: a disturbed run).
- ``optimisation_s``: the step's optimisation timed alone: Grappler run alone after the
  measured steps (compat_v1, with the protocol's ``grappler_alone``), XLA's compilation
  (the JAX apis); None where not timed (the keras apis).

Each runner's docstring says what its phases hold; record.result_record assembles the
result (result.schema.yaml, record.SCHEMA_VERSION).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rnnbench.measure.runners import runner_for


def run(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
        workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """Build, set up and train one model; return the result record (see result.schema.yaml).

    Args:
        impl: "static" or "dynamic".
        cell: cell, batch_size, max_len, num_units, input_dim, api (compat_v1: rnnbench.measure.model
            in a TF1 Session, runners.compat_v1; keras / keras_xla: rnnbench.measure.keras_model,
            runners.keras; keras_jax / jax_scan: runners.jax), mode, unroll (the JAX apis),
            tf_version (major.minor: the TensorFlow the job must be running), and
            the ablation axes of
            axes.ABLATION_DEFAULTS (loop_bound, pass_sequence_length, meta_optimizer,
            fetches, parallel_iterations, swap_memory, intra_op_parallelism_threads,
            inter_op_parallelism_threads); sequence_length and dataset are recorded as given.
        arrays: ``inputs`` float32 [num_samples, max_len, input_dim], ``sequence_length`` int32
            [num_samples], ``labels`` int32 [num_samples] (see data.make_dataset).
        protocol: steps, min_measure_s, warmup_steps, max_warmup_steps, hook_every, device
            ("cpu"/"gpu"), seed, log_every,
            grappler_alone (compat_v1: time Grappler alone after the steps, else None).
        workflow_meta: what the job cannot see itself, merged into the metadata: ``git``
            (the workflow's commit, metadata.git_commit) and ``image_sha256`` (the Apptainer
            image's, or None in a bare run); the workflow computes both before any job.

    Raises:
        ValueError: if the arrays' shapes do not match the cell, or no runner measures its
            api.
        RuntimeError: if device is "gpu" and the framework sees no GPU, TensorFlow is not at
            the cell's tf_version, or, inside an Apptainer image, TensorFlow or a package of
            the job was imported from outside the image's Python
            (frameworks.check_tensorflow, frameworks.check_image_imports).
    """
    expected = (cell["max_len"], cell["input_dim"])
    if arrays["inputs"].shape[1:] != expected:
        raise ValueError(f"inputs: shape {arrays['inputs'].shape} does not match [*, {expected}]")
    return runner_for(cell["api"]).run(impl, cell, arrays, protocol, workflow_meta)
