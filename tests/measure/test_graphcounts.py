"""The graph counts (rnnbench.measure.graphcounts, ``rnnbench counts``): the walk counts a
cond's chosen branch and a loop's body per iteration; the committed table is what TensorFlow
builds today; the counts do not depend on the shape."""

from types import SimpleNamespace

import pandas as pd
import pytest

from rnnbench.costmodel.machine import COUNTS, read_counts
from rnnbench.measure.graphcounts import COLUMNS, executed, step_counts


def node(op, **functions):
    return SimpleNamespace(op=op, attr={key: SimpleNamespace(func=SimpleNamespace(name=name))
                                        for key, name in functions.items()})


def function(*nodes):
    return SimpleNamespace(node_def=list(nodes))


FUNCTIONS = {"big": function(node("MatMul"), node("Add"), node("Tanh")),
             "small": function(node("Identity")),
             "cond": function(node("Less")),
             "body": function(node("MatMul"), node("If", then_branch="small",
                                                    else_branch="big"))}


def test_a_cond_runs_the_branch_picked_and_a_loop_counts_its_body_per_iteration():
    graph = [node("Placeholder"), node("If", then_branch="small", else_branch="big"),
             node("While", cond="cond", body="body")]
    computed = executed(graph, FUNCTIONS, max)
    assert computed["nodes"] == 3 + 3  # three nodes, and the big branch
    assert computed["conds"] == 1 and computed["loops"] == 1
    assert computed["loop_nodes"] == 1 + 2 + 3  # cond; body's MatMul and If, its big branch
    skipped = executed(graph, FUNCTIONS, min)
    assert skipped["nodes"] == 3 + 1 and skipped["loop_nodes"] == 1 + 2 + 1


def unrolled(max_len):
    """A GraphDef-like static graph: 5 fixed nodes, one cond per time step."""
    nodes = [node("Const") for _ in range(5)]
    nodes += [node("If", then_branch="small", else_branch="big") for _ in range(max_len)]
    return SimpleNamespace(node=nodes, library=SimpleNamespace(function=[
        SimpleNamespace(signature=SimpleNamespace(name=name), node_def=f.node_def)
        for name, f in FUNCTIONS.items()]))


def test_counts_per_time_step_are_slopes_between_two_max_len():
    counts = step_counts({4: unrolled(4), 8: unrolled(8)})
    assert counts["fixed_nodes"] == 5
    assert (counts["computed_nodes"], counts["computed_conds"]) == (4, 1)
    assert (counts["skipped_nodes"], counts["skipped_conds"]) == (2, 1)
    assert counts["loops"] == 0 and counts["graph_nodes_per_time_step"] == 1
    assert counts["graph_nodes_fixed"] == 5 + sum(len(f.node_def) for f in FUNCTIONS.values())


def test_the_committed_table_covers_every_cell_type_in_both_modes():
    table = read_counts()
    assert list(table.columns) == [*COLUMNS, "tf_version"]
    assert len(table) == len(table.drop_duplicates(["cell", "impl", "mode"])) == 12
    static = table[table["impl"] == "static"]
    assert (static["loops"] == 0).all() and (static["computed_nodes"] > static["skipped_nodes"]).all()
    dynamic = table[table["impl"] == "dynamic"]
    assert (dynamic["loops"] == dynamic["mode"].map({"train": 2, "inference": 1})).all()


@pytest.mark.slow
def test_the_committed_table_is_what_tensorflow_builds():
    from rnnbench.measure.graphcounts import count_table, graph_def_of
    from rnnbench.measure.model import import_tf

    tf = import_tf()
    committed = read_counts()
    if not (committed["tf_version"] == tf.__version__).all():
        pytest.skip(f"the table counts TensorFlow {committed['tf_version'].iloc[0]}, this is "
                    f"{tf.__version__}")
    built = pd.DataFrame(count_table(tf, cells=("basic_lstm", "gru"), modes=("train",)))
    mine = committed.merge(built[["cell", "impl", "mode"]])
    pd.testing.assert_frame_equal(built[list(COLUMNS)].reset_index(drop=True),
                                  mine[list(COLUMNS)].reset_index(drop=True), check_dtype=False)
    # other lengths: the same counts; another shape: within 5 % (TensorFlow's gradient code
    # chooses some ops by shape)
    row = committed.query("cell == 'gru' and impl == 'static' and mode == 'train'").iloc[0]
    keys = ("computed_nodes", "skipped_nodes", "fixed_nodes")
    lengths = step_counts({n: graph_def_of(tf, "gru", "static", "train", n) for n in (3, 9)})
    assert {k: lengths[k] for k in keys} == {k: row[k] for k in keys}
    shape = step_counts({n: graph_def_of(tf, "gru", "static", "train", n, batch=64, inputs=5,
                                         units=128) for n in (4, 8)})
    assert all(abs(shape[k] / row[k] - 1) < 0.05 for k in keys), (shape, row)
    assert COUNTS.is_file()
