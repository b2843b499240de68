"""Measure the device's float32 matmul rate, for a roofline view beside each step's work.

rnnbench.grid.flop counts the work.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np

from rnnbench.measure.model import session_config

PEAK_SIZE = {"cpu": 1024, "gpu": 4096}
"""Matmul size of rule peak per device: large enough to be compute-bound."""
PEAK_REPEATS = 20

def measure_matmul_peak(tf: ModuleType, size: int, repeats: int, intra_op: int, inter_op: int,
                        device: str, warmup: int = 3) -> dict[str, Any]:
    """Measure the device's float32 matmul rate with TensorFlow: the practical peak, in FLOP/s.

    Each of ``repeats`` session runs (after ``warmup``) is a [size, size] x [size, size] float32
    matmul on variables, timed with ``time.perf_counter``. Only the product's sum is fetched (a
    scalar), so no copy of the result is timed. The TF1 session has the training jobs' threads
    and device. flop_per_s = 2 size^3 / median; the reduction's size^2 adds are ignored.

    Args:
        tf: TensorFlow, imported for TF1 graph mode.
        size: the square matrices' side.
        repeats: timed runs.
        intra_op, inter_op: the Session's threads.
        device: "cpu" or "gpu".
        warmup: untimed runs first.

    Returns:
        size, repeats, the median and IQR of the seconds, and flop_per_s.

    Raises:
        RuntimeError: when device is "gpu" and TensorFlow sees no GPU.
    """
    tf1 = tf.compat.v1
    config = session_config(tf, device, intra_op, inter_op)
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        a = tf1.Variable(rng.standard_normal((size, size), dtype=np.float32))
        b = tf1.Variable(rng.standard_normal((size, size), dtype=np.float32))
        total = tf.reduce_sum(tf.matmul(a, b))
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph, config=config) as session:
        session.run(init)
        for _ in range(warmup):
            session.run(total)
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            session.run(total)
            seconds.append(time.perf_counter() - start)
    median = float(np.median(seconds))
    q1, q3 = np.percentile(seconds, [25, 75])
    return {"size": size, "repeats": repeats, "warmup": warmup, "seconds": seconds,
            "median_s": median, "iqr_over_median": float((q3 - q1) / median),
            "flop_per_s": 2.0 * size**3 / median}
