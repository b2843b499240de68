"""Assemble the result record of one run (result.schema.yaml), and the sizes of its graph.

The record is what every runner (rnnbench.measure.runners) returns. Schema 6 names the
setup phases for every api (``init_s``, ``optimisation_s``). Schema 5, written before, named
them after compat_v1 (``session_setup_s``, ``graph_optimisation_s``) and still validates.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from types import ModuleType
from typing import Any

from rnnbench.measure import metadata, steady
from rnnbench.grid import flop
from rnnbench.measure.timing import step_stats

SCHEMA_VERSION = 6
"""The result.schema.yaml version a run writes (result.schema.yaml accepts 5 and 6)."""
log = logging.getLogger("rnnbench")


def graph_sizes(graph_def: Any) -> dict[str, int]:
    """Count a GraphDef's nodes and bytes.

    Args:
        graph_def: the GraphDef.

    Returns:
        ``node_count``: its nodes, those of its function library included (a TF2 while loop or
        tf.function keeps its body there; in compat_v1 graphs it holds tf.data's functions).
        ``function_node_count``: the library's share. ``graphdef_bytes``: its size.
    """
    functions = sum(len(f.node_def) for f in graph_def.library.function)
    return {"node_count": len(graph_def.node) + functions, "function_node_count": functions,
            "graphdef_bytes": graph_def.ByteSize()}


def result_record(tf: ModuleType | None, impl: str, cell: dict, protocol: dict,
                  workflow_meta: dict, timings: dict, graph: dict, time_steps: float,
                  losses: tuple, weights: dict, rss_mb: tuple, noise: dict) -> dict[str, Any]:
    """Return the result record (result.schema.yaml) of a finished run; log its median step.

    Args:
        tf: the TensorFlow module the run used; None for a JAX run.
        impl: "static" or "dynamic".
        cell: the cell's settings.
        protocol: the run's protocol (its ``device`` too).
        workflow_meta: the workflow's ``git`` and ``image_sha256``.
        timings: seconds: graph_construction_s, init_s, first_step_s, optimisation_s,
            warmup_step_s, warmup_settled, step_s, hook_steps. They get step_stats of their
            ``step_s`` and steady.block_spread.
        graph: graph_sizes and optimised_node_count.
        time_steps: time steps per step; ``work`` is flop.step_flop over them, in the cell's
            mode.
        losses: (first, last).
        weights: name -> initial array; the record holds their sha256.
        rss_mb: MiB, (before, after) importing the framework.
        noise: metadata.noise of the run.

    Returns:
        The record. Its metadata is what metadata.collect sees (of TensorFlow, or with ``tf``
        None of JAX), plus ``workflow_meta``, the Keras version of a keras api run, and the
        cell's threads.
    """
    peak_rss_mb = metadata.peak_rss_mb()  # before metadata.collect, which allocates too
    stats = step_stats(timings["step_s"])
    log.info("done: median step %.2f ms (%.1f steps/s), step IQR / median %.2f",
             1000 * stats["median_step_s"], stats["steps_per_s"], stats["step_iqr_over_median"])
    meta = metadata.collect(metadata.tensorflow_info(tf, protocol["device"]) if tf is not None
                            else metadata.jax_info(protocol["device"]))
    meta.update(
        # the Keras that trained a keras api model (TF 2.12 imports its Keras 2 for compat_v1
        # too, and keras_jax's is Keras on JAX); None for compat_v1 and jax_scan
        keras_version=(sys.modules["keras"].__version__ if cell["api"].startswith("keras")
                       else None),
        git=workflow_meta["git"],
        image_sha256=workflow_meta["image_sha256"],
        snakemake_run=workflow_meta.get("snakemake_run"),  # none from a job run by hand
        intra_op_parallelism_threads=cell["intra_op_parallelism_threads"],
        inter_op_parallelism_threads=cell["inter_op_parallelism_threads"],
    )
    weights_hash = hashlib.sha256(b"".join(weights[k].tobytes() for k in sorted(weights)))
    return {
        "schema_version": SCHEMA_VERSION,
        "impl": impl,
        "cell": cell,
        "protocol": protocol,
        "timings": {**timings, **stats,
                    "block_spread": steady.block_spread(timings["step_s"])},
        "noise": noise,
        "graph": graph,
        "work": {
            "time_steps_per_step": time_steps,
            "train_step_flop": flop.step_flop(
                cell["cell"], cell["batch_size"], cell["input_dim"], cell["num_units"],
                time_steps, cell["mode"]),
        },
        "memory": {
            "rss_before_import_mb": rss_mb[0],
            "peak_rss_after_import_mb": rss_mb[1],
            "peak_rss_mb": peak_rss_mb,
        },
        "loss": {"first": losses[0], "last": losses[1]},
        "initial_weights_sha256": weights_hash.hexdigest(),
        "metadata": meta,
    }
