"""Run api compat_v1: rnnbench.measure.model's graph in a TF1 Session (bench.run's phases).

Phases, each timed with ``time.perf_counter``:

- ``graph_construction_s``: Python builds the tf.Graph (input pipeline, RNN, loss, Adam,
  initialiser); no TensorFlow runtime work.
- ``init_s``: Session creation, variable initialisation, loading the initial weights, and
  the input iterator's initialisation (which copies the dataset in).
- ``first_step_s``: the first ``session.run`` of the timed fetch set. It includes Grappler's
  graph optimisation and executor creation for that fetch set, which dominate for static_rnn.
- warm-up and measured steps: timing.warm_and_measure.
- ``optimisation_s``: after all of the above, Grappler run alone (``tf_optimizer.
  OptimizeGraph``, ``grappler``) on the same graph, fetches and ConfigProto: an estimate of
  the part of ``first_step_s`` the session spent optimising the graph (the rest is executor
  creation and the step itself). Run last so that it cannot warm anything the timed phases
  use. It overestimates: the call also imports the graph and models the devices (1.5-2.2 s
  for a static graph of max_len 60 with the meta-optimizer off, seen here); the
  meta_optimizer ablation (first step with Grappler on and off) is the cleaner split.
  Skipped (None) when the protocol's ``grappler_alone`` is false.

What each step fetches is the cell's ``fetches`` ablation (axes.hook_step). TensorFlow
optimises and builds an executor for each distinct fetch set on its first run, so every fetch
set the measured steps use is run before them, except in ``hooks_cold``, which shows the
pitfall of warming up with one fetch set and timing another: its first measured step pays a
fresh graph optimisation. The median step time is robust to that one step; the mean (what "N
steps in T seconds" reports) is not, so both are recorded.
"""

from __future__ import annotations

import logging
import time
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from rnnbench.measure import metadata
from rnnbench.grid import flop
from rnnbench.measure.frameworks import check_tensorflow
from rnnbench.grid.axes import hook_step
from rnnbench.measure.model import build_loss, import_tf, load_initial_weights, session_config
from rnnbench.measure.record import graph_sizes, result_record
from rnnbench.measure.timing import heartbeat, warm_and_measure

log = logging.getLogger("rnnbench")


class Graph(NamedTuple):
    """Hold what graph construction built.

    Attributes:
        graph: the tf.Graph.
        feeds: the dataset's placeholders, by array name.
        iterator: the dataset's initialisable iterator.
        every_step: the fetch dict of every step.
        hook: the fetch dict of the hook steps.
        init_op: the variables' initialiser.
    """
    graph: Any
    feeds: dict
    iterator: Any
    every_step: dict
    hook: dict
    init_op: Any


def run(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
        workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """Measure one run of api compat_v1 (bench.run's runner).

    The phases, in order: build the graph, set up its Session, the first step, the warm-up and
    measured steps, then Grappler alone (the module docstring says what each holds).

    Args:
        impl: "static" or "dynamic".
        cell: the cell's settings.
        arrays: the dataset (data.make_dataset's arrays).
        protocol: the run's protocol (device, seed, hook_every, grappler_alone, the timing's).
        workflow_meta: the workflow's git and image_sha256.

    Returns:
        The result record (record.result_record).

    Raises:
        RuntimeError: as bench.run (check_tensorflow, model.session_config).
    """
    rss_before_import_mb = metadata.peak_rss_mb()
    noise_before = metadata.noise_probe()
    tf = import_tf()
    check_tensorflow(tf, cell["tf_version"])
    config = session_config(tf, protocol["device"], cell["intra_op_parallelism_threads"],
                            cell["inter_op_parallelism_threads"])
    rss_after_import_mb = metadata.peak_rss_mb()
    parallel_iterations = (cell["batch_size"] if cell["parallel_iterations"] == "batch_size"
                           else int(cell["parallel_iterations"]))
    log.info("%s %s: building the graph (max_len %d)", impl, cell.get("cell"), cell["max_len"])
    built, graph_construction_s = build_graph(tf, impl, cell, arrays, parallel_iterations)
    graph_def = built.graph.as_graph_def()
    log.info("graph construction: %.2f s, %d nodes", graph_construction_s,
             graph_sizes(graph_def)["node_count"])

    if cell["meta_optimizer"] == "off":  # ablation: no Grappler in the first step
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    session, weights, init_s = set_up(tf, built, config, arrays, protocol["seed"])
    log.info("session setup: %.2f s; first step (graph optimisation) ...", init_s)
    first_step_s, first_loss = first_step(session, built, cell, protocol)

    steps = warm_and_measure(
        lambda is_hook: session.run(built.hook if is_hook else built.every_step),
        lambda warmup, k: hook_step(cell["fetches"], protocol["hook_every"], warmup, k),
        protocol)
    noise_after = metadata.noise_probe()
    last_loss = float(steps["last"]["loss"]) if "loss" in steps["last"] else None
    optimisation_s, optimised_nodes = optimise_alone(tf, built, config, protocol)
    # the measured steps are steps 1 + the warm-up's ... (step 0 is the first step); without
    # the batch bound (dynamic's max_len loop, or no sequence_length) every step computes all
    # max_len time steps
    time_steps = flop.computed_time_steps(cell, impl, flop.time_steps_per_step(
        arrays["sequence_length"], cell["batch_size"], 1 + len(steps["warmup_step_s"]),
        len(steps["step_s"])))
    record = result_record(
        tf, impl, cell, {**protocol, "parallel_iterations": parallel_iterations,
                         "fetches": list(built.every_step), "hook_fetches": list(built.hook)},
        workflow_meta,
        {"graph_construction_s": graph_construction_s, "init_s": init_s,
         "first_step_s": first_step_s, "optimisation_s": optimisation_s,
         "warmup_step_s": steps["warmup_step_s"], "warmup_settled": steps["warmup_settled"],
         "step_s": steps["step_s"],
         # the steps (0: the first step) that fetched the hook set (hook_step)
         "hook_steps": steps["hook_steps"]},
        graph_sizes(graph_def) | {"optimised_node_count": optimised_nodes},
        time_steps, (first_loss, last_loss), weights,
        (rss_before_import_mb, rss_after_import_mb), metadata.noise(noise_before, noise_after))
    session.close()
    return record


def build_graph(tf: ModuleType, impl: str, cell: dict, arrays: dict[str, np.ndarray],
                parallel_iterations: int) -> tuple[Graph, float]:
    """Run phase graph construction: the input pipeline, the model and the fetch sets.

    The input pipeline is placeholders fed with ``arrays`` and a repeating batched Dataset; the
    model is model.build_loss. The fetch sets follow the cell's mode and ``fetches``.
    Inference: the loss. Hooks: a global step and a loss summary, as the seed's Estimator. Else
    the train op, with the loss unless fetches is train_op.

    Args:
        tf: TensorFlow, imported for TF1 graph mode.
        impl: "static" or "dynamic".
        cell: the cell's settings.
        arrays: the dataset, by name.
        parallel_iterations: dynamic_rnn's parallel_iterations.

    Returns:
        (the Graph, its construction seconds; the tf.Graph's creation not included).
    """
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with heartbeat("graph construction"):
        start = time.perf_counter()
        with graph.as_default():
            feeds = {
                name: tf1.placeholder(arr.dtype, shape=arr.shape, name=f"{name}_data")
                for name, arr in arrays.items()
            }
            dataset = tf.data.Dataset.from_tensor_slices(
                (feeds["inputs"], feeds["sequence_length"], feeds["labels"])
            ).repeat().batch(cell["batch_size"], drop_remainder=True)
            iterator = tf1.data.make_initializable_iterator(dataset)
            inputs, lengths, labels = iterator.get_next()
            loss = build_loss(tf, inputs, lengths, labels, impl, cell["cell"], cell["num_units"],
                              parallel_iterations, cell["loop_bound"],
                              cell["pass_sequence_length"], cell["swap_memory"])
            if cell["mode"] == "inference":  # the forward pass and the loss
                every_step = hook = {"loss": loss}
            elif cell["fetches"] in ("hooks", "hooks_cold"):
                global_step = tf1.train.get_or_create_global_step()
                train_op = tf1.train.AdamOptimizer().minimize(loss, global_step=global_step)
                every_step = {"train_op": train_op, "loss": loss, "global_step": global_step}
                hook = {**every_step, "summary": tf1.summary.scalar("loss", loss)}
            else:
                train_op = tf1.train.AdamOptimizer().minimize(loss)
                every_step = {"train_op": train_op, **({} if cell["fetches"] == "train_op"
                                                       else {"loss": loss})}
                hook = every_step
            init_op = tf1.global_variables_initializer()
        seconds = time.perf_counter() - start
    return Graph(graph, feeds, iterator, every_step, hook, init_op), seconds


def set_up(tf: ModuleType, built: Graph, config: Any, arrays: dict[str, np.ndarray],
           seed: int) -> tuple[Any, dict[str, np.ndarray], float]:
    """Run phase init: the Session, the variables, the initial weights and the iterator.

    Args:
        tf: TensorFlow, imported for TF1 graph mode.
        built: build_graph's Graph.
        config: the Session's ConfigProto.
        arrays: the dataset, fed to the iterator's initialiser.
        seed: seeds model.load_initial_weights.

    Returns:
        (session, the initial weights by variable name, seconds).
    """
    start = time.perf_counter()
    session = tf.compat.v1.Session(graph=built.graph, config=config)
    with built.graph.as_default():
        session.run(built.init_op)
        weights = load_initial_weights(tf, session, seed)
    session.run(built.iterator.initializer, {built.feeds[k]: v for k, v in arrays.items()})
    return session, weights, time.perf_counter() - start


def first_step(session: Any, built: Graph, cell: dict,
               protocol: dict) -> tuple[float, float | None]:
    """Run phase first step: one ``session.run`` of step 0's fetch set.

    The hook set is run where hook_step says so. Grappler and executor creation are included.

    Args:
        session: set_up's Session.
        built: build_graph's Graph.
        cell: the cell's settings (its fetches).
        protocol: the run's protocol (its hook_every).

    Returns:
        (seconds, its loss; None when the step fetches no loss).
    """
    with heartbeat("first step"):
        start = time.perf_counter()
        out = session.run(built.hook if hook_step(cell["fetches"], protocol["hook_every"],
                                                  None, 0) else built.every_step)
        seconds = time.perf_counter() - start
    log.info("first step: %.2f s", seconds)
    return seconds, float(out["loss"]) if "loss" in out else None


def optimise_alone(tf: ModuleType, built: Graph, config: Any,
                   protocol: dict) -> tuple[float | None, int | None]:
    """Run phase optimisation, after the measured steps: Grappler alone (grappler).

    It runs on the every-step fetch set, when the protocol's ``grappler_alone`` asks for it.

    Args:
        tf: TensorFlow, imported for TF1 graph mode.
        built: build_graph's Graph.
        config: the Session's ConfigProto.
        protocol: the run's protocol.

    Returns:
        (seconds, the optimised graph's node count), or (None, None).
    """
    if not protocol["grappler_alone"]:
        return None, None
    with heartbeat("graph optimisation alone"):
        seconds, nodes = grappler(tf, built.graph, list(built.every_step.values()), config)
    log.info("graph optimisation alone (Grappler, after the measurement): %.2f s", seconds)
    return seconds, nodes


def grappler(tf: ModuleType, graph: Any, fetches: list, config: Any) -> tuple[float, int]:
    """Time Grappler's meta-optimizer alone on ``graph`` for ``fetches``.

    It runs through ``tf_optimizer.OptimizeGraph``, as the session runs it before a fetch set's
    first step, timed with ``time.perf_counter``.

    Args:
        tf: TensorFlow, imported for TF1 graph mode.
        graph: the tf.Graph.
        fetches: the fetched tensors and ops.
        config: the ConfigProto (its rewrite options and threads).

    Returns:
        (seconds, the node count of the graph it returns).
    """
    from tensorflow.python.grappler import tf_optimizer

    meta_graph = tf.compat.v1.train.export_meta_graph(graph=graph)
    meta_graph.collection_def["train_op"].node_list.value.extend(f.name for f in fetches)
    start = time.perf_counter()
    optimised = tf_optimizer.OptimizeGraph(config, meta_graph, verbose=False)
    return time.perf_counter() - start, len(optimised.node)
