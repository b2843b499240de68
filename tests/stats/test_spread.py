"""What the spread between a cell's processes follows (rnnbench.stats.spread)."""

import numpy as np
import pandas as pd

from rnnbench.report.sections import spread_lines
from rnnbench.stats.spread import MIN_RUNS, process_spread, spread_candidates


def _runs(n_cells=4, repeats=6, seed=0):
    """Runs whose step follows the machine's Python speed and nothing else recorded."""
    rng = np.random.default_rng(seed)
    rows = []
    for cell in range(n_cells):
        for impl in ("static", "dynamic"):
            for repeat in range(1, repeats + 1):
                slow = rng.choice([1.0, 1.8])  # the machine's mode during this process
                rows.append({"cell_id": f"c{cell}", "measured_in": f"c{cell}", "impl": impl,
                             "repeat": repeat,
                             "median_step_s": 0.01 * (cell + 1) * slow * rng.lognormal(0, .03),
                             "speed_python_ns": 30 * slow * rng.lognormal(0, 0.03),
                             "migrations": rng.integers(0, 50),
                             "job_start_unix_s": 1e9 + 60 * len(rows)})
    return pd.DataFrame(rows)


def test_the_step_follows_the_candidate_that_drives_it_and_no_other():
    table = spread_candidates(_runs()).set_index("candidate")
    assert table.loc["speed_python_ns", "rho"] > 0.8
    assert table.loc["speed_python_ns", "p"] < 1e-6
    assert table.loc["migrations", "p"] > 0.01 and table.loc["job_start_unix_s", "p"] > 0.01
    assert "speed_matmul_gflop_s" not in table.index  # not recorded: not a candidate
    line, _, table = spread_lines(_runs())
    assert "Python loop time" in line and "moves between CPUs" not in line
    rows = {row.split("|")[1].strip().split("`")[1]: row.split("|")[-2].strip()
            for row in table.splitlines()[2:]}
    assert rows == {"speed_python_ns": "yes", "migrations": "no", "job_start_unix_s": "no"}


def test_a_run_measured_in_another_cell_counts_once_and_few_runs_say_nothing():
    runs = _runs()
    shared = runs[runs["cell_id"] == "c0"].assign(cell_id="c9")  # c0's runs, shared with c9
    table = spread_candidates(pd.concat([runs, shared]))
    assert table["runs"].max() == len(runs)
    few = _runs(n_cells=1, repeats=3)
    assert len(few) < MIN_RUNS and spread_candidates(few).empty and spread_lines(few) == []


def test_the_spread_of_processes_is_their_sd_on_the_log_scale():
    runs = pd.DataFrame({"cell_id": ["a"] * 3 + ["b"] * 2, "measured_in": ["a"] * 3 + ["b"] * 2,
                         "impl": ["static"] * 5,
                         "median_step_s": [0.001, 0.002, 0.004, 0.003, 0.003]})
    table = process_spread(runs).set_index("cell_id")
    assert table.loc["a", "runs"] == 3 and np.isclose(table.loc["a", "step_ms"], 2.0)
    assert np.isclose(table.loc["a", "sd_log"], np.log(2))
    assert np.isclose(table.loc["a", "max_over_min"], 4.0)
    assert table.loc["b", "sd_log"] == 0 and table.loc["b", "max_over_min"] == 1
