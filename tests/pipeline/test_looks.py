"""The second look (rnnbench.pipeline.looks, grid.plan.more_jobs, stats.tables.undecided_cells):
which cells the planned repeats leave undecided, and the jobs that add repeats to them and to
the cells that share their runs; and the estimate's cap for them."""

import json

from conftest import make_result
from rnnbench.grid import plan
from rnnbench.pipeline import estimate
from rnnbench.pipeline.looks import first_look

REPEATS, MORE = 3, 2


def write_runs(folder, cell_id, static_steps, dynamic_steps):
    """Result files of ``cell_id``, one pair per repeat, with these median steps (seconds)."""
    paths = []
    for repeat, (s, d) in enumerate(zip(static_steps, dynamic_steps), start=1):
        for impl, step in (("static", s), ("dynamic", d)):
            record = make_result(impl, cell_id, repeat, step_s=(step,) * 3)
            path = folder / cell_id / impl / f"repeat{repeat}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record))
            paths.append(str(path))
    return paths, record["cell"]


def test_the_first_look_adds_repeats_where_the_step_ratio_is_undecided(tmp_path):
    clear, clear_cell = write_runs(tmp_path, "clear", [0.005, 0.0051, 0.0049], [0.01] * 3)
    open_, open_cell = write_runs(tmp_path, "open", [0.009, 0.012, 0.0105], [0.01] * 3)
    cells = {"clear": clear_cell, "open": open_cell}
    jobs = list(plan.job_priorities(cells, REPEATS + MORE, {}))
    look = first_look(clear + open_, [], cells, None, {}, jobs, REPEATS, 0.1, 0.975)
    assert look["undecided"] == ["open"]
    assert sorted(look["jobs"]) == [["open", impl, repeat] for impl in ("dynamic", "static")
                                    for repeat in (4, 5)]
    ratio, low, high = look["cells"]["clear"]
    assert low < ratio < high < 1 / 1.1
    assert json.loads(json.dumps(look)) == look  # the checkpoint's file


def test_more_jobs_keep_a_shared_reference_paired():
    """An ablation that takes its reference's static runs: when it is undecided, its
    reference and every cell sharing those runs get the repeats too, both implementations
    of each where it measures them."""
    cells = {"ref": {}, "abl": {}, "other": {}}
    shared = {("abl", "static"): "ref"}
    jobs = list(plan.job_priorities(cells, REPEATS + MORE, shared))
    added = plan.more_jobs(jobs, cells, shared, ["abl"], REPEATS)
    assert sorted(added) == sorted((cell, impl, repeat) for repeat in (4, 5)
                                   for cell, impl in (("ref", "static"), ("ref", "dynamic"),
                                                      ("abl", "dynamic")))
    assert plan.more_jobs(jobs, cells, shared, [], REPEATS) == []


def test_the_estimate_states_the_cap_of_more_repeats(tmp_path):
    cell = make_result()["cell"]
    config = {"steps": 500, "warmup_steps": 40, "max_warmup_steps": 500, "min_measure_s": 1.0}
    jobs = [("c", "static"), ("c", "dynamic")]
    line = estimate.run_line({"c": cell}, jobs, config, {}, str(tmp_path / "none.csv"), "host",
                             more=jobs)
    assert "then at most 2 more training jobs" in line and "more_repeats" in line
    assert "more training jobs" not in estimate.run_line({"c": cell}, jobs, config, {},
                                                         str(tmp_path / "none.csv"), "host")
