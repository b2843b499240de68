"""Time one training run of static_rnn or dynamic_rnn: graph construction, setup, every step.

One call of ``run`` is one measurement, meant to be the only one in its process (the
workflow starts a fresh process per (cell, implementation, repeat), as pyperf does).

Phases, each timed with ``time.perf_counter``:

- ``graph_construction_s``: Python builds the tf.Graph (input pipeline, RNN, loss, Adam,
  initialiser); no TensorFlow runtime work.
- ``session_setup_s``: Session creation, variable initialisation, loading the initial weights,
  and the input iterator's initialisation (which copies the dataset in).
- ``first_step_s``: the first ``session.run`` of the timed fetch set. It includes Grappler's
  graph optimisation and executor creation for that fetch set, which dominate for static_rnn.
- ``warmup_step_s``: the warm-up steps that follow: at least ``warmup_steps``, then on until
  the step times have settled (steady.warm_up), at most ``max_warmup_steps``; the result
  records whether they settled (``warmup_settled``).
- ``step_s``: the measured steps, the steady state: at least ``steps``, and for at least
  ``min_measure_s`` seconds. ``block_spread`` says how much
  the medians of its 50-step blocks differ (steady.block_spread: a disturbed run).
- ``graph_optimisation_s``: after all of the above, Grappler run alone
  (``tf_optimizer.OptimizeGraph``, bench.grappler) on the same graph, fetches and ConfigProto: an estimate of
  the part of ``first_step_s`` the session spent optimising the graph (the rest is executor
  creation and the step itself). Run last so that it cannot warm anything the timed phases use.
  It overestimates: the call also imports the graph and models the devices (1.5-2.2 s for a
  static graph of max_len 60 with the meta-optimizer off, seen here); the meta_optimizer
  ablation (first step with Grappler on and off) is the cleaner split. Skipped (None) when
  the protocol's ``grappler_alone`` is false.

What each step fetches is the cell's ``fetches`` ablation (grid.fetch_plan). TensorFlow optimises
and builds an executor for each distinct fetch set on its first run, so every fetch set the
measured steps use is run before them, except in ``hooks_cold``, which shows the pitfall of
warming up with one fetch set and timing another: its first measured step pays a fresh
graph optimisation. The median step time is robust to that one step; the mean (what "N
steps in T seconds" reports) is not, so both are recorded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import time
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np

from rnnbench import metadata, roofline, steady
from rnnbench.grid import JAX_APIS, hook_step
from rnnbench.model import build_loss, import_tf, load_initial_weights, session_config

SCHEMA_VERSION = 5
log = logging.getLogger("rnnbench")


@contextmanager
def heartbeat(phase: str, every_s: float = 10.0) -> Iterator[None]:
    """Log '<phase>: still running after N s' every ``every_s`` seconds until the block ends.

    Lets a user watching a slow static graph build or first step see that the job is alive.
    """
    done = threading.Event()
    start = time.perf_counter()

    def beat() -> None:
        while not done.wait(every_s):
            log.info("%s: still running after %.0f s", phase, time.perf_counter() - start)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def step_stats(step_s: list[float]) -> dict[str, float]:
    """Median step seconds, median steps/s (1 / median step), IQR / median of step seconds,
    and the mean step seconds (total / count: what a loop timed as a whole reports).

    Raises:
        ValueError: for fewer than two step times.
    """
    if len(step_s) < 2:
        raise ValueError(f"step_s: need at least 2 step times, got {len(step_s)}")
    arr = np.asarray(step_s, dtype=float)
    median = float(np.median(arr))
    q1, q3 = np.percentile(arr, [25, 75])
    return {
        "median_step_s": median,
        "steps_per_s": 1.0 / median,
        "step_iqr_over_median": float((q3 - q1) / median),
        "mean_step_s": float(arr.mean()),
    }


def timed_steps(step: Callable[[bool], Any], is_hook: Callable[[int], bool], steps: int,
                min_s: float, log_every: int) -> tuple[list[float], Any]:
    """The measured steps: run ``step(is_hook(j))``, one training step (j from 0), each timed
    on its own with ``time.perf_counter``, until at least ``steps`` steps have run and they
    have taken at least ``min_s`` seconds in all (a cell of short steps measures more of
    them, so its median spans the machine's slow spells of tens of milliseconds).

    Returns their seconds and the last step's return value (None when there is no step).
    Logs 'measured step i, running N steps/s' every ``log_every`` steps and at the end.
    """
    seconds, out = [], None
    loop_start = time.perf_counter()
    while len(seconds) < steps or time.perf_counter() - loop_start < min_s:
        start = time.perf_counter()
        out = step(is_hook(len(seconds)))
        seconds.append(time.perf_counter() - start)
        if len(seconds) % log_every == 0:
            log.info("measured step %d, running %.1f steps/s", len(seconds),
                     len(seconds) / (time.perf_counter() - loop_start))
    log.info("measured %d steps in %.2f s", len(seconds), time.perf_counter() - loop_start)
    return seconds, out


def warm_and_measure(step: Callable[[bool], Any], hook_at: Callable[[int | None, int], bool],
                     protocol: dict) -> dict[str, Any]:
    """The warm-up (steady.warm_up: at least ``warmup_steps``, until settled, at most
    ``max_warmup_steps``) and then the measured steps (timed_steps: at least ``steps``, for at
    least ``min_measure_s`` seconds), each step timed on its own.

    ``step(is_hook)`` runs one training step (fetching the hook set when ``is_hook``);
    ``hook_at(warmup_steps, k)`` says whether step k does (hook_step of the cell's fetches:
    warmup_steps None during the warm-up).

    Returns ``warmup_step_s``, ``warmup_settled``, ``step_s`` (seconds), ``hook_steps`` (the
    steps, 0 the first, that fetched the hook set) and ``last`` (the last step's return value).
    """
    loop_start = time.perf_counter()

    def warm_step(k: int) -> float:
        start = time.perf_counter()
        step(hook_at(None, 1 + k))
        seconds = time.perf_counter() - start
        if (k + 1) % protocol["log_every"] == 0:
            log.info("warm-up step %d, running %.1f steps/s", k + 1,
                     (k + 1) / (time.perf_counter() - loop_start))
        return seconds

    warmup_step_s, settled = steady.warm_up(warm_step, protocol["warmup_steps"],
                                            protocol["max_warmup_steps"])
    warmup = len(warmup_step_s)
    log.info("warm-up: %d steps, %s", warmup,
             {True: "settled", False: "still warming at max_warmup_steps",
              None: "fixed (no settle test)"}[settled])
    step_s, last = timed_steps(step, lambda j: hook_at(warmup, 1 + warmup + j),
                               protocol["steps"], protocol["min_measure_s"],
                               protocol["log_every"])
    total = 1 + warmup + len(step_s)
    return {"warmup_step_s": warmup_step_s, "warmup_settled": settled, "step_s": step_s,
            "hook_steps": [k for k in range(total) if hook_at(warmup if k > warmup else None, k)],
            "last": last}


def grappler(tf: ModuleType, graph: Any, fetches: list, config: Any) -> tuple[float, int]:
    """Seconds Grappler's meta-optimizer takes on ``graph`` for ``fetches`` under ``config``
    (its rewrite options and threads), run alone through ``tf_optimizer.OptimizeGraph`` as
    the session runs it before a fetch set's first step, timed with ``time.perf_counter``;
    and the node count of the graph it returns."""
    from tensorflow.python.grappler import tf_optimizer

    meta_graph = tf.compat.v1.train.export_meta_graph(graph=graph)
    meta_graph.collection_def["train_op"].node_list.value.extend(f.name for f in fetches)
    start = time.perf_counter()
    optimised = tf_optimizer.OptimizeGraph(config, meta_graph, verbose=False)
    return time.perf_counter() - start, len(optimised.node)


def run(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
        workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """Build, set up and train one model; return the result record (see result.schema.yaml).

    Args:
        impl: "static" or "dynamic".
        cell: cell, batch_size, max_len, num_units, input_dim, api (compat_v1: rnnbench.model
            in a TF1 Session; keras / keras_xla: rnnbench.keras_model, see _run_keras;
            keras_jax / jax_scan: see _run_jax),
            tf_version (major.minor: the TensorFlow the job must be running), and
            the ablation axes of
            grid.ABLATION_DEFAULTS (loop_bound, pass_sequence_length, meta_optimizer,
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
        ValueError: if the arrays' shapes do not match the cell.
        RuntimeError: if device is "gpu" and TensorFlow sees no GPU, TensorFlow is not at the
            cell's tf_version, or, inside an Apptainer image, TensorFlow or a package of the
            job was imported from outside the image's Python (check_tensorflow).
    """
    expected = (cell["max_len"], cell["input_dim"])
    if arrays["inputs"].shape[1:] != expected:
        raise ValueError(f"inputs: shape {arrays['inputs'].shape} does not match [*, {expected}]")
    if cell["api"] == "compat_v1":
        return _run_compat_v1(impl, cell, arrays, protocol, workflow_meta)
    if cell["api"] in JAX_APIS:
        return _run_jax(impl, cell, arrays, protocol, workflow_meta)
    return _run_keras(impl, cell, arrays, protocol, workflow_meta)


def scan_unroll(impl: str, cell: dict) -> int:
    """The unroll factor of the cell's jax.lax.scan: 1 for dynamic; for static the cell's
    ``unroll`` (max_len, the default: fully unrolled; a factor above max_len is max_len)."""
    if impl == "dynamic":
        return 1
    unroll = cell.get("unroll", "max_len")
    return cell["max_len"] if unroll == "max_len" else min(int(unroll), cell["max_len"])


def import_jax(device: str, intra_op: int) -> ModuleType:
    """Import JAX for ``device`` ("cpu" or "gpu") with ``intra_op`` CPU threads for XLA's
    CPU backend (XLA_FLAGS, set before the import: 1 thread as TensorFlow's
    intra_op_parallelism_threads 1). Returns the ``jax`` module.

    Raises:
        RuntimeError: if JAX was imported already (its flags would not apply), or device is
            "gpu" and JAX sees no GPU.
    """
    if "jax" in sys.modules:
        raise RuntimeError("jax was imported before its flags were set (bench.import_jax)")
    threads = (f"--xla_cpu_multi_thread_eigen={'true' if intra_op > 1 else 'false'} "
               f"intra_op_parallelism_threads={intra_op}")
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {threads}".strip()
    os.environ["JAX_PLATFORMS"] = "cpu" if device == "cpu" else "cuda,cpu"
    import jax

    if device == "gpu" and jax.default_backend() != "gpu":
        raise RuntimeError("device: 'gpu' was asked for, but JAX sees no GPU "
                           f"(backend {jax.default_backend()})")
    return jax


def keep_jax_out() -> None:
    """Make ``import jax`` raise ImportError in this process: what a TensorFlow job does
    before it imports TensorFlow.

    TensorFlow imports JAX whenever it is installed (tensorflow/lite/python/util.py tries
    ``from jax import jit`` for TFLite's JAX converter, and falls back to None on
    ImportError). With JAX in the venv for the JAX apis, that made TensorFlow's import 4.0 s
    instead of 3.3 s here (medians of 10 interleaved pairs of ``python -c "import
    tensorflow"`` with and without ``sys.modules["jax"] = None``: 0.8 s of every job), and
    loaded XLA's CPU runtime beside TensorFlow's in a process that times TensorFlow. The job
    scripts (train.py for every api but grid.JAX_APIS, peak.py) call it before importing
    TensorFlow; the tests, which import both frameworks in one process, do not. The Python
    convention used: a ``None`` in ``sys.modules`` makes the import of that name raise
    ImportError (the import system's reference, "sys.modules").

    Raises:
        RuntimeError: if JAX was imported already (a TensorFlow job that did so would time
            another process than the workflow's).
    """
    if sys.modules.get("jax") is not None:
        raise RuntimeError("jax was imported before bench.keep_jax_out: the TensorFlow job "
                           "would carry JAX")
    sys.modules["jax"] = None


def _run_jax(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
             workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """run() for the apis on JAX, jit-compiled ahead of time (jax_model.compile_step);
    TensorFlow is never imported. jax_scan: rnnbench.jax_model's train step; keras_jax: the
    keras api's layer, loss and Adam on Keras's JAX backend (keras_model.jax_train_step),
    unroll=True for static, False for dynamic. In mode inference, the forward pass and loss
    alone. Phases, with ``time.perf_counter``:

    - ``session_setup_s``: the initial weights (compat_v1's: jax_model.initial_params, or
      keras_model.initial_layer_weights in the Keras layer, built here), the optimizer's
      slots, and the dataset moved to the device in num_samples // batch_size batches (each
      step takes the next one: no input pipeline inside the timed steps).
    - ``graph_construction_s``: tracing and lowering to StableHLO (``jit(...).lower``): the
      scan body written unroll times for static (keras_jax: max_len times).
    - ``graph_optimisation_s``: XLA's compilation (``.compile()``), timed alone and part of
      the first step, as Grappler's is for compat_v1.
    - ``first_step_s``: the compilation plus the first call, so that graph construction,
      setup and first step sum to everything before the second step.
    - warm-up and measured steps as for compat_v1; each step fetches the loss (``float``,
      which waits for the step).

    The scan runs the padded max_len, masked by sequence_length (no loop-bound saving);
    ``node_count`` counts the StableHLO module's lines, ``optimised_node_count`` those of the
    compiled HLO.

    Raises:
        RuntimeError: as import_jax.
    """
    rss_before_import_mb = metadata.peak_rss_mb()
    noise_before = metadata.noise_probe()
    jax = import_jax(protocol["device"], cell["intra_op_parallelism_threads"])
    from rnnbench import jax_model, keras_model

    keras = keras_model.import_keras_jax() if cell["api"] == "keras_jax" else None
    check_image_imports()
    rss_after_import_mb = metadata.peak_rss_mb()
    batch_size, max_len = cell["batch_size"], cell["max_len"]
    unroll = scan_unroll(impl, cell)
    train = cell["mode"] == "train"
    log.info("%s %s (%s, unroll %d): building the step (max_len %d)", impl, cell["cell"],
             cell["api"], unroll, max_len)

    start = time.perf_counter()
    if keras is None:
        initial = jax_model.initial_params(cell["cell"], cell["input_dim"], cell["num_units"],
                                           protocol["seed"])
        params = jax.device_put(initial)
        opt_state = jax_model.adam_init(params)
        train_step = jax_model.step_function(cell["cell"], unroll, train)
    else:
        layer = keras_model.make_layer(keras, cell["cell"], cell["num_units"],
                                       impl == "static")
        layer.build((batch_size, max_len, cell["input_dim"]))
        weights = keras_model.initial_layer_weights(layer, cell["cell"], cell["input_dim"],
                                                    cell["num_units"], protocol["seed"])
        layer.set_weights(weights)
        initial = {f"{i}:0": w for i, w in enumerate(weights)}
        train_step, params, opt_state = keras_model.jax_train_step(
            keras, layer, max_len, cell["pass_sequence_length"], train)
    lengths = (arrays["sequence_length"] if cell["pass_sequence_length"]
               else np.full_like(arrays["sequence_length"], max_len))
    batches = [jax.device_put((arrays["inputs"][k:k + batch_size], lengths[k:k + batch_size],
                               arrays["labels"][k:k + batch_size]))
               for k in range(0, len(lengths) - batch_size + 1, batch_size)]
    jax.block_until_ready((params, opt_state, batches))
    session_setup_s = time.perf_counter() - start
    log.info("weights, optimizer and batches on the device: %.2f s", session_setup_s)

    with heartbeat("tracing and compilation"):
        start = time.perf_counter()
        built = jax_model.compile_step(train_step, params, opt_state, *batches[0])
        params, opt_state, loss = built.step(params, opt_state, *batches[0])
        first_loss = float(loss)
        first_step_s = time.perf_counter() - start - built.trace_s
    log.info("tracing: %.2f s; compilation %.2f s, first step %.2f s in all", built.trace_s,
             built.compile_s, first_step_s)
    state = {"params": params, "opt": opt_state, "k": 1}

    def step(_: Any) -> float:  # the next batch, as compat_v1's get_next
        batch = batches[state["k"] % len(batches)]
        state["params"], state["opt"], value = built.step(state["params"], state["opt"], *batch)
        state["k"] += 1
        return float(value)

    steps = warm_and_measure(step, lambda warmup, k: False, protocol)
    noise_after = metadata.noise_probe()
    stablehlo, hlo = built.lowered_text, built.compiled_text
    return _record(
        None, impl, cell, {**protocol, "parallel_iterations": None,
                           "fetches": ["train_step", "loss"] if train else ["loss"],
                           "hook_fetches": []},
        workflow_meta,
        {"graph_construction_s": built.trace_s, "session_setup_s": session_setup_s,
         "first_step_s": first_step_s, "graph_optimisation_s": built.compile_s,
         "warmup_step_s": steps["warmup_step_s"], "warmup_settled": steps["warmup_settled"],
         "step_s": steps["step_s"], "hook_steps": []},
        {"node_count": max(1, stablehlo.count("\n")), "function_node_count": 0,
         "graphdef_bytes": max(1, len(stablehlo.encode())),
         "optimised_node_count": max(1, hlo.count("\n")) if hlo else None},
        roofline.computed_time_steps(cell, impl, max_len), (first_loss, steps["last"]),
        initial, (rss_before_import_mb, rss_after_import_mb),
        metadata.noise(noise_before, noise_after))


def check_tensorflow(tf: ModuleType, tf_version: str) -> None:
    """Refuse a TensorFlow other than the cell's tf_version (major.minor), and, inside an
    Apptainer image, TensorFlow or another package of a training job imported from outside
    the image's Python (a host PYTHONPATH; or a package the image lacks, which Snakemake's
    search path would load from the host's folders).

    Raises:
        RuntimeError: naming the version, or the module and the folder it came from.
    """
    if not tf.__version__.startswith(f"{tf_version}."):
        raise RuntimeError(f"tf_version {tf_version!r} was asked for, but TensorFlow "
                           f"{tf.__version__} ({os.path.dirname(tf.__file__)}) runs")
    check_image_imports()


def check_image_imports() -> None:
    """Inside an Apptainer image, refuse a package of the job (TensorFlow, JAX, Keras, numpy,
    ...: those imported so far) that came from outside the image's Python: a host PYTHONPATH,
    or a package the image lacks, which Snakemake's search path would load from the host's
    folders. Outside an image, nothing. Called by check_tensorflow and by the JAX apis' run.

    Raises:
        RuntimeError: naming the module and the folder it came from.
    """
    if not os.environ.get("APPTAINER_CONTAINER"):
        return
    for name in ("tensorflow", "jax", "jaxlib", "numpy", "keras", "tf_keras", "jsonschema",
                 "yaml"):
        path = getattr(sys.modules.get(name), "__file__", None)  # None: not imported
        where = os.path.dirname(path or "")
        if path and not where.startswith(os.path.join(sys.prefix, "")):
            raise RuntimeError(
                f"{name} was imported from {where}, outside the image's Python ({sys.prefix}): "
                f"PYTHONPATH={os.environ.get('PYTHONPATH')!r}; a host PYTHONPATH reached the "
                "image (unset it), or the image lacks the package")


def _run_compat_v1(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
                   workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """run() for api compat_v1: rnnbench.model in a TF1 Session, phases as in the module
    docstring."""
    rss_before_import_mb = metadata.peak_rss_mb()
    noise_before = metadata.noise_probe()
    tf = import_tf()
    tf1 = tf.compat.v1
    check_tensorflow(tf, cell["tf_version"])
    intra, inter = cell["intra_op_parallelism_threads"], cell["inter_op_parallelism_threads"]
    config = session_config(tf, protocol["device"], intra, inter)
    rss_after_import_mb = metadata.peak_rss_mb()
    batch_size = cell["batch_size"]
    parallel_iterations = (batch_size if cell["parallel_iterations"] == "batch_size"
                           else int(cell["parallel_iterations"]))
    with_hooks = cell["fetches"] in ("hooks", "hooks_cold")
    log.info("%s %s: building the graph (max_len %d)", impl, cell.get("cell"), cell["max_len"])

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
            ).repeat().batch(batch_size, drop_remainder=True)
            iterator = tf1.data.make_initializable_iterator(dataset)
            inputs, lengths, labels = iterator.get_next()
            loss = build_loss(tf, inputs, lengths, labels, impl, cell["cell"], cell["num_units"],
                              parallel_iterations, cell["loop_bound"],
                              cell["pass_sequence_length"], cell["swap_memory"])
            if cell["mode"] == "inference":  # the forward pass and the loss
                every_step = hook = {"loss": loss}
            elif with_hooks:  # as the seed's Estimator: a global step and a loss summary
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
        graph_construction_s = time.perf_counter() - start
    graph_def = graph.as_graph_def()
    log.info("graph construction: %.2f s, %d nodes", graph_construction_s,
             graph_sizes(graph_def)["node_count"])

    if cell["meta_optimizer"] == "off":  # ablation: no Grappler in the first step
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    start = time.perf_counter()
    session = tf1.Session(graph=graph, config=config)
    with graph.as_default():
        session.run(init_op)
        weights = load_initial_weights(tf, session, protocol["seed"])
    session.run(iterator.initializer, {feeds[k]: v for k, v in arrays.items()})
    session_setup_s = time.perf_counter() - start
    log.info("session setup: %.2f s; first step (graph optimisation) ...", session_setup_s)

    with heartbeat("first step"):
        start = time.perf_counter()
        out = session.run(hook if hook_step(cell["fetches"], protocol["hook_every"], None, 0)
                          else every_step)
        first_step_s = time.perf_counter() - start
    first_loss = float(out["loss"]) if "loss" in out else None
    log.info("first step: %.2f s", first_step_s)

    steps = warm_and_measure(
        lambda is_hook: session.run(hook if is_hook else every_step),
        lambda warmup, k: hook_step(cell["fetches"], protocol["hook_every"], warmup, k),
        protocol)
    noise_after = metadata.noise_probe()
    out = steps["last"]
    last_loss = float(out["loss"]) if "loss" in out else None
    graph_optimisation_s = optimised_nodes = None
    if protocol["grappler_alone"]:
        with heartbeat("graph optimisation alone"):
            graph_optimisation_s, optimised_nodes = grappler(
                tf, graph, list(every_step.values()), config)
        log.info("graph optimisation alone (Grappler, after the measurement): %.2f s",
                 graph_optimisation_s)
    # the measured steps are steps 1 + the warm-up's ... (step 0 is the first step); without
    # the batch bound (dynamic's max_len loop, or no sequence_length) every step computes all
    # max_len time steps
    time_steps = roofline.computed_time_steps(cell, impl, roofline.time_steps_per_step(
        arrays["sequence_length"], batch_size, 1 + len(steps["warmup_step_s"]),
        len(steps["step_s"])))
    record = _record(
        tf, impl, cell, {**protocol, "parallel_iterations": parallel_iterations,
                         "fetches": list(every_step), "hook_fetches": list(hook)},
        workflow_meta,
        {"graph_construction_s": graph_construction_s, "session_setup_s": session_setup_s,
         "first_step_s": first_step_s, "graph_optimisation_s": graph_optimisation_s,
         "warmup_step_s": steps["warmup_step_s"], "warmup_settled": steps["warmup_settled"],
         "step_s": steps["step_s"],
         # the steps (0: the first step) that fetched the hook set (hook_step)
         "hook_steps": steps["hook_steps"]},
        graph_sizes(graph_def) | {"optimised_node_count": optimised_nodes},
        time_steps, (first_loss, last_loss), weights,
        (rss_before_import_mb, rss_after_import_mb), metadata.noise(noise_before, noise_after))
    session.close()
    return record


def _run_keras(impl: str, cell: dict, arrays: dict[str, np.ndarray], protocol: dict,
               workflow_meta: dict[str, Any]) -> dict[str, Any]:
    """run() for the keras apis: a Keras layer (unroll=True for static, False for dynamic)
    trained by keras_model.build_train_step (in mode inference, its forward pass and loss
    alone), eager TensorFlow. Phases, with ``time.perf_counter``:

    - ``session_setup_s``: the layer, its weights (keras_model.initial_layer_weights), the
      optimizer and the input pipeline (``tf.data``; each step takes its batch outside the
      train step, XLA cannot compile the iterator, inside the timed region).
    - ``graph_construction_s``: tracing the train step (``get_concrete_function``): Python
      builds its graph, the unrolled one for static.
    - ``first_step_s``: its first call: graph optimisation (Grappler; for keras_xla also
      the XLA compilation) and one step.
    - warm-up and measured steps as for compat_v1; every step fetches the loss (``.numpy()``,
      which also waits for the step to finish).

    ``graph_optimisation_s`` and ``optimised_node_count`` are None (Grappler is not run alone
    on a function graph); meta_optimizer "off" disables Grappler through
    ``tf.config.optimizer.set_experimental_options``. Every step computes all max_len time
    steps (Keras's loop and its unrolled graph both run the padded length, masked).

    Raises:
        RuntimeError: as run().
    """
    from rnnbench import keras_model

    rss_before_import_mb = metadata.peak_rss_mb()
    noise_before = metadata.noise_probe()
    tf, keras = keras_model.import_tf_keras()
    check_tensorflow(tf, cell["tf_version"])
    keras_model.configure(tf, protocol["device"], cell["intra_op_parallelism_threads"],
                          cell["inter_op_parallelism_threads"], cell["meta_optimizer"] == "on")
    rss_after_import_mb = metadata.peak_rss_mb()
    batch_size, max_len = cell["batch_size"], cell["max_len"]
    train = cell["mode"] == "train"
    log.info("%s %s (%s): building the model (max_len %d)", impl, cell["cell"], cell["api"],
             max_len)

    start = time.perf_counter()
    layer = keras_model.make_layer(keras, cell["cell"], cell["num_units"], impl == "static")
    layer.build((batch_size, max_len, cell["input_dim"]))
    initial = keras_model.initial_layer_weights(layer, cell["cell"], cell["input_dim"],
                                                cell["num_units"], protocol["seed"])
    layer.set_weights(initial)
    train_step, _ = keras_model.build_train_step(tf, keras, layer, max_len,
                                                 cell["api"] == "keras_xla",
                                                 cell["pass_sequence_length"], train)
    batches = iter(tf.data.Dataset.from_tensor_slices(
        (arrays["inputs"], arrays["sequence_length"], arrays["labels"])
    ).repeat().batch(batch_size, drop_remainder=True))
    session_setup_s = time.perf_counter() - start
    log.info("model, weights, optimizer and input pipeline: %.2f s", session_setup_s)

    first_batch = next(batches)
    with heartbeat("tracing"):
        start = time.perf_counter()
        concrete = train_step.get_concrete_function(*first_batch)
        graph_construction_s = time.perf_counter() - start
    graph_def = concrete.graph.as_graph_def()
    log.info("tracing: %.2f s, %d nodes", graph_construction_s,
             graph_sizes(graph_def)["node_count"])

    with heartbeat("first step"):
        start = time.perf_counter()
        first_loss = float(train_step(*first_batch).numpy())
        first_step_s = time.perf_counter() - start
    log.info("first step: %.2f s", first_step_s)

    def step(_: Any) -> float:  # the batch included, as compat_v1's get_next
        return float(train_step(*next(batches)).numpy())

    steps = warm_and_measure(step, lambda warmup, k: False, protocol)
    noise_after = metadata.noise_probe()
    weights = {f"{i}:0": w for i, w in enumerate(initial)}
    return _record(
        tf, impl, cell, {**protocol, "parallel_iterations": None,
                         "fetches": ["train_step", "loss"] if train else ["loss"],
                         "hook_fetches": []},
        workflow_meta,
        {"graph_construction_s": graph_construction_s, "session_setup_s": session_setup_s,
         "first_step_s": first_step_s, "graph_optimisation_s": None,
         "warmup_step_s": steps["warmup_step_s"], "warmup_settled": steps["warmup_settled"],
         "step_s": steps["step_s"], "hook_steps": []},
        graph_sizes(graph_def) | {"optimised_node_count": None},
        roofline.computed_time_steps(cell, impl, max_len), (first_loss, steps["last"]), weights,
        (rss_before_import_mb, rss_after_import_mb), metadata.noise(noise_before, noise_after))


def graph_sizes(graph_def: Any) -> dict[str, int]:
    """``node_count``: the GraphDef's nodes, those of its function library included (a TF2
    while loop or tf.function keeps its body there; in compat_v1 graphs it holds tf.data's
    functions); ``function_node_count``: the library's share; ``graphdef_bytes``."""
    functions = sum(len(f.node_def) for f in graph_def.library.function)
    return {"node_count": len(graph_def.node) + functions, "function_node_count": functions,
            "graphdef_bytes": graph_def.ByteSize()}


def _record(tf: ModuleType | None, impl: str, cell: dict, protocol: dict, workflow_meta: dict,
            timings: dict, graph: dict, time_steps: float, losses: tuple, weights: dict,
            rss_mb: tuple, noise: dict) -> dict[str, Any]:
    """The result record (result.schema.yaml) of a finished run: ``timings`` (seconds) get
    step_stats of their ``step_s``, the metadata what metadata.collect sees (of TensorFlow,
    ``tf``, or with ``tf`` None of JAX) plus the
    workflow's ``workflow_meta`` and the cell's threads, ``work`` the FLOP of
    roofline.step_flop over ``time_steps`` in the cell's mode, ``weights`` (name -> initial array) their
    sha256. ``losses``: (first, last) or None; ``rss_mb``: (before, after) importing TF;
    ``noise``: metadata.noise of the run."""
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
            "train_step_flop": roofline.step_flop(
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
