"""Count what one step of a compat_v1 graph executes: nodes, conds and loop iterations.

The cost model in the probe's units (costmodel/machine.py) is these counts times the probe's
unit costs. A count comes from the graph itself: the training jobs' graph (runners.compat_v1.
build_graph) is built at two max_len, every sequence full, and its executed nodes are counted
by walking the GraphDef and its function library (TensorFlow 2's control flow keeps a cond's
branches and a loop's body there):

- an ``If`` (a cond) executes one branch: the larger one on a computed time step (static_rnn
  computes the cell there), the smaller one on a time step past the batch's longest sequence
  (it copies the state through);
- a ``While`` (a loop) executes its cond and body functions once per iteration.

A count per time step is the slope between the two max_len; the fixed count is what is left.
Method: docs/cost-model.md, The model in the probe's units.
"""

from __future__ import annotations

from collections import Counter
from types import ModuleType
from typing import Any, Callable

import numpy as np

from rnnbench.grid.axes import ABLATION_DEFAULTS

COND_OPS = ("If", "StatelessIf")
LOOP_OPS = ("While", "StatelessWhile")
MAX_LENS = (4, 8)
"""The two max_len the graphs are built at (a count per time step is the same between any two:
tested)."""
COLUMNS = ("cell", "impl", "mode", "fixed_nodes", "computed_nodes", "computed_conds",
           "skipped_nodes", "skipped_conds", "loops", "loop_nodes", "graph_nodes_fixed",
           "graph_nodes_per_time_step")
"""The counts table's columns: the cell type, static or dynamic, train or inference; executed
per step: nodes outside loops and past the time steps (fixed_nodes); per computed time step,
nodes and conds (static_rnn: its unrolled steps; dynamic_rnn: none, its loops do the work);
per time step past the batch's longest sequence, nodes and conds (static_rnn only); loops run
per step and their nodes per iteration (dynamic_rnn: cond and body, all loops together); and
the GraphDef's nodes (its library's included), fixed and per unit of max_len."""


def executed(nodes: Any, functions: dict, pick: Callable[[int, int], int]) -> Counter:
    """Count what running ``nodes`` executes once, descending into conds' branches.

    Args:
        nodes: NodeDefs (a GraphDef's node, or a FunctionDef's node_def).
        functions: the library's FunctionDefs, by name.
        pick: which branch of a cond runs, of the two branches' node counts (max or min).

    Returns:
        A Counter: ``nodes`` (a cond's and its branch's included), ``conds`` (conds run),
        ``loops`` (loops started) and ``loop_nodes`` (nodes per iteration of those loops,
        their cond and body functions).
    """
    counts = Counter()
    for node in nodes:
        counts["nodes"] += 1
        if node.op in COND_OPS:
            branches = [executed(functions[node.attr[key].func.name].node_def, functions, pick)
                        for key in ("then_branch", "else_branch")]
            chosen = branches[[b["nodes"] for b in branches].index(
                pick(*(b["nodes"] for b in branches)))]
            counts.update(chosen)
            counts["conds"] += 1
        elif node.op in LOOP_OPS:
            counts["loops"] += 1
            for key in ("cond", "body"):
                inner = executed(functions[node.attr[key].func.name].node_def, functions, pick)
                counts["loop_nodes"] += inner["nodes"]
    return counts


def graph_def_of(tf: ModuleType, cell: str, impl: str, mode: str, max_len: int,
                 batch: int = 32, inputs: int = 16, units: int = 64) -> Any:
    """Build the training job's graph of a small cell and return its GraphDef.

    Args:
        tf: TensorFlow, imported for TF1 graph mode (model.import_tf).
        cell: basic_lstm, lstm or gru.
        impl: 'static' or 'dynamic'.
        mode: 'train' or 'inference'.
        max_len: the padded length; every sequence fills it.
        batch: batch_size; inputs: input_dim; units: num_units. The counts move a little
            with them (TensorFlow's gradient code chooses ops by shape): at batch 64 and 128
            units, up to 6 more nodes per time step than at the default, batch 32 and 64 units
            (under 5 %; tests/measure/test_graphcounts.py).

    Returns:
        The GraphDef, function library included.
    """
    from rnnbench.measure.runners.compat_v1 import build_graph

    arrays = {"inputs": np.zeros((batch, max_len, inputs), np.float32),
              "sequence_length": np.full(batch, max_len, np.int32),
              "labels": np.zeros(batch, np.int32)}
    settings = {**ABLATION_DEFAULTS, "cell": cell, "batch_size": batch, "num_units": units,
                "input_dim": inputs, "max_len": max_len, "mode": mode}
    built, _ = build_graph(tf, impl, settings, arrays, 32)
    return built.graph.as_graph_def()


def step_counts(graph_defs: dict[int, Any]) -> dict[str, float]:
    """Return the counts per step and per time step of one implementation's graphs.

    Args:
        graph_defs: {max_len: GraphDef} at two max_len (graph_def_of).

    Returns:
        COLUMNS' counts (all but cell, impl and mode).
    """
    (short, small), (long, large) = sorted(graph_defs.items())
    per = {}
    for name, pick in (("computed", max), ("skipped", min)):
        counted = {}
        for length, graph_def in ((short, small), (long, large)):
            functions = {f.signature.name: f for f in graph_def.library.function}
            counted[length] = executed(graph_def.node, functions, pick)
        slope = {key: (counted[long][key] - counted[short][key]) / (long - short)
                 for key in ("nodes", "conds")}
        per[name] = (counted[short], slope)
    (computed_at_short, computed), (_, skipped) = per["computed"], per["skipped"]
    loops = computed_at_short["loops"]
    sizes = {length: len(g.node) + sum(len(f.node_def) for f in g.library.function)
             for length, g in graph_defs.items()}
    node_slope = (sizes[long] - sizes[short]) / (long - short)
    return {"fixed_nodes": computed_at_short["nodes"] - short * computed["nodes"],
            "computed_nodes": computed["nodes"], "computed_conds": computed["conds"],
            "skipped_nodes": skipped["nodes"], "skipped_conds": skipped["conds"],
            "loops": loops, "loop_nodes": computed_at_short["loop_nodes"],
            "graph_nodes_fixed": sizes[short] - short * node_slope,
            "graph_nodes_per_time_step": node_slope}


def count_table(tf: ModuleType, cells: tuple[str, ...] = ("basic_lstm", "lstm", "gru"),
                modes: tuple[str, ...] = ("train", "inference")) -> list[dict[str, Any]]:
    """Count every cell type, implementation and mode (COLUMNS), with the TensorFlow version.

    Args:
        tf: TensorFlow, imported for TF1 graph mode (model.import_tf).
        cells: the cell types.
        modes: the modes.

    Returns:
        One dict per (cell, impl, mode): COLUMNS and ``tf_version``.
    """
    rows = []
    for cell in cells:
        for impl in ("static", "dynamic"):
            for mode in modes:
                graphs = {n: graph_def_of(tf, cell, impl, mode, n) for n in MAX_LENS}
                rows.append({"cell": cell, "impl": impl, "mode": mode, **step_counts(graphs),
                             "tf_version": tf.__version__})
    return rows
