"""Measure the machine's unit costs that decide static_rnn against dynamic_rnn, in a minute.

It runs in TF1 graph mode (a Session with the training jobs' threads). The unit costs: a
while_loop iteration, a small op pair inside the loop and unrolled, a skipped cond, graph
construction and Session setup per node, the memory a node holds, and matmul rates at the
cell's shapes.

Each unit cost is a slope: one graph at two sizes (n1 < n2 repetitions of the unit), each
session.run timed REPEATS times after WARMUP, cost = (median(n2) - median(n1)) / (n2 - n1).
So the run's fixed overhead cancels. Method: docs/cost-model.md, The probe.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any, Callable

import numpy as np

from rnnbench.measure.model import session_config

REPEATS = 15
"""Timed session.run calls per graph (their median is the graph's time)."""
WARMUP = 3
"""Untimed session.run calls first (the first pays Grappler and allocation)."""
MATMUL_SHAPES = tuple((batch, units) for batch in (8, 32, 128) for units in (32, 128, 256))
"""(batch_size, num_units) of the matmul probes: an LSTM step's [batch, 16 + units] x
[16 + units, 4 units] matmul, the map's 16 inputs."""


def rss_mb() -> float:
    """This process's resident memory now, in MiB (/proc/self/statm; NaN elsewhere)."""
    import os

    try:
        pages = int(open("/proc/self/statm").read().split()[1])
    except (OSError, IndexError, ValueError):
        return float("nan")
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _median_run(session: Any, fetch: Any, feed: dict | None = None) -> float:
    """Median seconds of one session.run of ``fetch`` over REPEATS, after WARMUP."""
    for _ in range(WARMUP):
        session.run(fetch, feed)
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        session.run(fetch, feed)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def _slope(times: dict[int, float]) -> float:
    """Seconds per unit between the two sizes of ``times`` ({size: seconds})."""
    (n1, t1), (n2, t2) = sorted(times.items())
    return (t2 - t1) / (n2 - n1)


def _loop_graph(tf: ModuleType, pairs: int) -> tuple[Any, Any, Any]:
    """A tf.while_loop whose body does ``pairs`` multiply-add pairs on a [1] variable;
    returns (graph, the loop's output, the iterations placeholder)."""
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        a = tf1.Variable([1.0001]).read_value()  # read once: the pairs are a multiply and an add
        n = tf1.placeholder(tf.int32, [])

        def body(i, x):
            for _ in range(pairs):
                x = x * a + a
            return i + 1, x

        _, out = tf1.while_loop(lambda i, x: i < n, body, [tf.constant(0), a])
        init = tf1.global_variables_initializer()
    graph.init = init
    return graph, out, n


def loop_costs(tf: ModuleType, config: Any) -> dict[str, float]:
    """Seconds per while_loop iteration (an empty body) and per multiply-add pair inside it."""
    per_iteration = {}
    for pairs in (0, 8):
        graph, out, n = _loop_graph(tf, pairs)
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            session.run(graph.init)
            per_iteration[pairs] = _slope({k: _median_run(session, out, {n: k})
                                           for k in (100, 1000)})
    return {"while_iteration_s": per_iteration[0],
            "loop_op_pair_s": (per_iteration[8] - per_iteration[0]) / 8}


def _chain(tf: ModuleType, size: int, unit: Callable) -> tuple[Any, Any, float, int]:
    """A graph of ``size`` units in a chain (``unit(x, a, skip)`` -> x) on a [1] variable;
    returns (graph, its output, seconds to build it, its node count)."""
    tf1 = tf.compat.v1
    start = time.perf_counter()
    graph = tf.Graph()
    with graph.as_default():
        a = tf1.Variable([1.0001]).read_value()  # read once: a unit is its own ops alone
        skip = tf1.placeholder_with_default(True, [])  # a cond takes its copy-through branch
        x = a
        for _ in range(size):
            x = unit(x, a, skip)
        graph.init = tf1.global_variables_initializer()
    built = time.perf_counter() - start
    return graph, x, built, len(graph.as_graph_def().node)


def chain_costs(tf: ModuleType, config: Any, name: str, unit: Callable,
                sizes: tuple[int, int]) -> dict[str, float]:
    """Measure the costs per unit of a chain of units, from graphs at two ``sizes``.

    Args:
        tf: TensorFlow, imported for TF1 graph mode.
        config: the Session's ConfigProto (model.session_config).
        name: the unit's name, for the keys.
        unit: ``unit(x, a, skip)`` -> x, adding one unit to the chain.
        sizes: (n1, n2), the units in the two graphs.

    Returns:
        ``<name>_s``: run seconds per unit; ``<name>_nodes``: graph nodes per unit. Per node:
        graph_construction_s_per_node, session_setup_s_per_node (the first run: Grappler,
        allocation) and bytes_per_node (the peak RSS it adds; 0 at least).
    """
    run, build, setup, rss, nodes = {}, {}, {}, {}, {}
    for size in sizes:
        before = rss_mb()
        graph, out, build[size], nodes[size] = _chain(tf, size, unit)
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            session.run(graph.init)
            start = time.perf_counter()
            session.run(out)
            setup[size] = time.perf_counter() - start
            run[size] = _median_run(session, out)
            rss[size] = rss_mb() - before
    node_slope = _slope(nodes)
    return {f"{name}_s": _slope(run),
            f"{name}_nodes": node_slope,
            "graph_construction_s_per_node": _slope(build) / node_slope,
            "session_setup_s_per_node": _slope(setup) / node_slope,
            "bytes_per_node": max(_slope(rss), 0.0) * 2 ** 20 / node_slope}


TRIES = 3
"""Times each group of unit costs, and each matmul, is measured; each cost is the median of
its positive measurements (probes of one VM minutes apart once differed 2x in a cond's cost)."""


MATMUL_COPIES = (2, 10)
"""The matmul probes' two sizes: independent copies of the matmul in one graph (a slope, as
every unit cost: a small matmul takes less than one session.run's jitter)."""


def _matmul_graph(tf: ModuleType, rng: Any, batch: int, k: int, n: int,
                  copies: int) -> tuple[Any, Any, Any]:
    """A graph of ``copies`` [batch, k] x [k, n] matmuls, each of its own variable input
    (no two alike, so Grappler merges none) and one shared weight [k, n]: (graph, the
    forward sum, the gradient sum over every input and the weight)."""
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf1.Variable(rng.standard_normal((batch, k), dtype=np.float32))
              for _ in range(copies)]
        w = tf1.Variable(rng.standard_normal((k, n), dtype=np.float32))
        forward = tf.add_n([tf.reduce_sum(tf.matmul(x, w)) for x in xs])
        backward = tf.add_n([tf.reduce_sum(g) for g in tf1.gradients(forward, [*xs, w])])
        graph.init = tf1.global_variables_initializer()
    return graph, forward, backward


def _matmul_slopes(tf: ModuleType, config: Any, rng: Any, batch: int, k: int,
                   n: int) -> tuple[float, float]:
    """Seconds of one [batch, k] x [k, n] matmul and of its gradient: slopes over
    MATMUL_COPIES, measured once (either at or below zero under a busy moment's jitter)."""
    ahead, back = {}, {}
    for copies in MATMUL_COPIES:
        graph, forward, backward = _matmul_graph(tf, rng, batch, k, n, copies)
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            session.run(graph.init)
            ahead[copies] = _median_run(session, forward)
            back[copies] = _median_run(session, backward)
    return _slope(ahead), _slope(back)


def matmul_rates(tf: ModuleType, config: Any) -> list[dict[str, Any]]:
    """Measure an LSTM step's matmul and its gradient at each of MATMUL_SHAPES.

    The gradient is two matmuls of the same size. Each time is a slope over MATMUL_COPIES, so
    that the run's overhead and its jitter cancel, resolved as the unit costs are (_resolved:
    the median of TRIES slopes above 0; one busy moment's slope near 0 once gave a rate over
    5 TFLOP/s).

    Args:
        tf: TensorFlow, imported for TF1 graph mode.
        config: the Session's ConfigProto (model.session_config).

    Returns:
        One dict per shape: batch_size, num_units, k, n (the matmul [batch, k] x [k, n]),
        forward_s, backward_s (seconds; NaN when no slope was above zero, below the timer's
        reach), forward_flop_per_s and backward_flop_per_s.
    """
    rows = []
    rng = np.random.default_rng(0)
    for batch, units in MATMUL_SHAPES:
        k, n = 16 + units, 4 * units
        slopes = _resolved(lambda: dict(zip(("forward_s", "backward_s"),
                                            _matmul_slopes(tf, config, rng, batch, k, n))))
        forward_s, backward_s = (slope if (slope := slopes[key]) > 0 else float("nan")
                                 for key in ("forward_s", "backward_s"))
        flop = 2.0 * batch * k * n
        rows.append({"batch_size": batch, "num_units": units, "k": k, "n": n,
                     "forward_s": forward_s, "backward_s": backward_s,
                     "forward_flop_per_s": flop / forward_s,
                     "backward_flop_per_s": 2 * flop / backward_s})
    return rows


def _resolved(measure: Callable[[], dict[str, float]]) -> dict[str, float]:
    """``measure()`` TRIES times; each cost the median of its measurements above 0 (the
    larger graph slower: not a busy moment's artefact), and ``<cost>_spread``, their max over
    min. A cost never above 0 keeps its last measurement (not resolved)."""
    tries = [measure() for _ in range(TRIES)]
    costs: dict[str, float] = {}
    for key in tries[0]:
        values = [t[key] for t in tries]
        positive = [v for v in values if v > 0]
        costs[key] = float(np.median(positive)) if positive else values[-1]
        if key != "bytes_per_node" and not key.endswith("_nodes") and len(positive) > 1:
            costs[f"{key}_spread"] = max(positive) / min(positive)
    return costs


def probe(tf: ModuleType, intra_op: int = 1, inter_op: int = 1) -> dict[str, Any]:
    """Measure every unit cost of this machine, with the matmul rates.

    Args:
        tf: TensorFlow, imported for TF1 graph mode (model.import_tf).
        intra_op: the Session's intra-op threads (the training jobs' default: 1).
        inter_op: the Session's inter-op threads (the training jobs' default: 1).

    Returns:
        ``unit_costs`` (seconds, bytes: loop_costs and chain_costs of an op pair and of a
        skipped cond; each group measured TRIES times, each cost the median of those above 0,
        with ``<cost>_spread``, the largest over the smallest), ``matmul`` (matmul_rates),
        ``threads``, and ``probe_s``, the probe's own wall seconds.
    """
    start = time.perf_counter()
    config = session_config(tf, "cpu", intra_op, inter_op)
    costs = _resolved(lambda: loop_costs(tf, config))
    costs.update(_resolved(lambda: chain_costs(tf, config, "op_pair",
                                               lambda x, a, skip: x * a + a, (200, 2000))))
    cond = _resolved(lambda: chain_costs(tf, config, "cond_skipped", lambda x, a, skip: tf.cond(
        skip, lambda: x, lambda: x * a + a), (50, 400)))
    costs.update({key: value for key, value in cond.items() if key.startswith("cond_")})
    return {"unit_costs": costs, "matmul": matmul_rates(tf, config),
            "threads": {"intra_op": intra_op, "inter_op": inter_op},
            "probe_s": time.perf_counter() - start}
