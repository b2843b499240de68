"""How long a grid will take, said before any job (rnnbench.pipeline.estimate): the model against the
committed calibration jobs, this machine's scaling, and the line a run prints."""

import pandas as pd
import pytest

from conftest import REPO
from rnnbench.pipeline import estimate

JOBS = pd.read_csv(REPO / "docs/figures/calibration/jobs.csv")


def _cell(row):
    return {"cell": "basic_lstm", "batch_size": row["batch_size"], "max_len": row["max_len"],
            "sequence_length": "max_len", "num_units": row["num_units"],
            "input_dim": row["input_dim"], "api": row["api"]}


def test_the_model_is_within_1_5x_of_most_calibration_jobs_and_never_negative():
    ratios = []
    for row in JOBS.to_dict("records"):
        modelled = estimate.job_seconds(_cell(row), row["impl"], {"grappler_alone": False}, 40)
        assert modelled > 0
        ratios.append(row["job_wall_s"] / modelled)
    ratios = pd.Series(ratios)
    # these jobs ran beside other work (several are flagged busy): most, not all, within 1.5x
    assert ((ratios > 1 / 1.5) & (ratios < 1.5)).mean() >= 0.8, ratios.describe()
    assert 0.8 < ratios.median() < 1.25


def test_machine_factor_scales_by_this_machines_earlier_jobs():
    rows = JOBS.assign(n_steps=20, warmup_steps_run=2, unroll="max_len",
                       sequence_length="full", cell="basic_lstm")
    as_read = rows.astype(str).to_dict("records")  # as csv.DictReader reads measurements.csv
    factor, n = estimate.machine_factor(as_read)
    assert n == len(JOBS) and 0.7 < factor < 1.4
    slower = rows.assign(job_wall_s=rows["job_wall_s"] * 3)  # a machine 3x slower
    assert estimate.machine_factor(slower.astype(str).to_dict("records"))[0] == (
        pytest.approx(3 * factor))
    assert estimate.machine_factor([]) == (1.0, 0)
    # per api: a machine 3x slower on keras jobs alone scales keras's, not compat_v1's
    keras_slow = rows.assign(job_wall_s=rows["job_wall_s"].where(rows["api"] != "keras",
                                                                 rows["job_wall_s"] * 3))
    read = keras_slow.astype(str).to_dict("records")
    alone = {api: estimate.machine_factor(as_read, api)[0] for api in ("keras", "compat_v1")}
    assert estimate.machine_factor(read, "keras")[0] == pytest.approx(3 * alone["keras"])
    assert estimate.machine_factor(read, "compat_v1")[0] == pytest.approx(alone["compat_v1"])
    assert estimate.machine_factor(read, "keras_tpu") == (1.0, 0)  # no such jobs


def test_the_run_line_says_minutes_and_warns_past_an_hour(tmp_path):
    cell = {"cell": "basic_lstm", "batch_size": 32, "max_len": 24, "sequence_length": 2,
            "num_units": 32, "input_dim": 16, "api": "compat_v1"}
    config = {"steps": 500, "min_measure_s": 1.0, "warmup_steps": 40, "max_warmup_steps": 500,
              "grappler_alone": False}
    line = estimate.run_line({"c": cell}, [("c", "static"), ("c", "dynamic")], config,
                             {"aggregate": 1}, str(tmp_path / "none.csv"), "host")
    assert line.startswith("time: about 1 min for the 2 training jobs") and "WARNING" not in line
    many = [("c", "static")] * 500
    assert "WARNING: over 1 hour" in estimate.run_line({"c": cell}, many, config, {},
                                                       str(tmp_path / "none.csv"), "host")
    assert estimate.run_line({"c": cell}, [], config, {}, "none.csv", "host") is None
    # tables to rebuild, no training job: said so (it said "for the 0 training jobs")
    assert estimate.run_line({"c": cell}, [], config, {"aggregate": 1}, "none.csv",
                             "host").startswith("time: about 1 min: no training job to run, the "
                                                "rest (")


def test_the_line_names_another_run_holding_the_lock_and_its_plans_rest(tmp_path):
    cell = {"cell": "basic_lstm", "batch_size": 32, "max_len": 24, "sequence_length": 2,
            "num_units": 32, "input_dim": 16, "api": "compat_v1"}
    config = {"steps": 500, "min_measure_s": 1.0, "warmup_steps": 40, "max_warmup_steps": 500,
              "grappler_alone": False}
    other = tmp_path / "other"
    (other / "results").mkdir(parents=True)
    (other / "results" / "done.json").write_text("{}")
    estimate.write_plan(other / ".snakemake", {"results/done.json": 60.0,
                                               "results/left.json": 150.0}, (0.0, 0), 42, 1.0)
    holder = {"lock": "/tmp/l.lock", "pid": 7, "folder": str(other), "snakemake_pid": 42,
              "host": __import__("socket").gethostname(), "since_s": 0.0, "run_since_s": 0.0}
    words, seconds = estimate.lock_words({**holder, "since_s": 940.0, "run_since_s": 600.0},
                                         1000.0)
    assert words.startswith(f"the measuring lock /tmp/l.lock is held now by another run (pid 7, "
                            f"in {other}), measuring for 7 min (its current job for 60 s)")
    assert "its plan has 1 of 2 training jobs left, about 3 min by its own estimate" in words
    assert seconds == 150.0
    line = estimate.run_line({"c": cell}, [("c", "static"), ("c", "dynamic")], config, {},
                             str(tmp_path / "none.csv"), "host", holder=holder)
    assert "held now by another run (pid 7" in line and "min in all for this run" in line
    # another Snakemake's plan in that folder, or none: only what is known
    for unknown in ({**holder, "snakemake_pid": 43}, {"lock": "/tmp/l.lock", "pid": 7,
                                                      "folder": None}):
        words, seconds = estimate.lock_words(unknown, 1000.0)
        assert seconds is None and "how long it will go on is not known here" in words
    # a holder that wrote no record (flock by another program, or an older workflow's job):
    # not called "another run"
    assert words.startswith("the measuring lock /tmp/l.lock is held now by a process that wrote "
                            "no record of its run (pid 7, in a folder hidden from this user; an "
                            "older workflow's job, or another program)")


def test_the_probe_model_estimates_compat_v1_jobs_and_leaves_the_rest_to_the_api_model(tmp_path):
    cell = {"cell": "gru", "batch_size": 32, "max_len": 24, "sequence_length": "max_len",
            "num_units": 32, "input_dim": 16, "api": "compat_v1"}
    cells = {"gru": cell, "keras": {**cell, "cell": "basic_lstm", "api": "keras"},
             "ablation": {**cell, "loop_bound": "max_len"}}
    modelled, source = estimate.probe_seconds(cells)
    assert set(modelled) == {("gru", "static"), ("gru", "dynamic")}, modelled
    assert source == "the map's VM's probe"
    static, dynamic = modelled[("gru", "static")], modelled[("gru", "dynamic")]
    assert static[1] > 3 * dynamic[1] > 0 and static[0] > 0 and dynamic[0] > 0  # unrolled setup
    # this machine's probe, where an earlier run left one: twice the unit costs, twice the time
    probe = __import__("json").loads((REPO / "docs/figures/probe-map/probe.json").read_text())
    costs = probe["probe"]["unit_costs"]
    slower = {**probe["probe"], "unit_costs": {key: value * 2 if key.endswith(("_s", "_node"))
                                               else value for key, value in costs.items()},
              "matmul": [{**m, "forward_flop_per_s": m["forward_flop_per_s"] / 2,
                          "backward_flop_per_s": m["backward_flop_per_s"] / 2}
                         for m in probe["probe"]["matmul"]]}
    peak = tmp_path / "peak.json"
    peak.write_text(__import__("json").dumps({**probe, "probe": slower}))
    again, source = estimate.probe_seconds({"gru": cell}, [tmp_path / "none.json", peak])
    assert source == f"this machine's probe ({peak})"
    assert again[("gru", "static")] == pytest.approx(tuple(2 * s for s in static), rel=1e-6)
    config = {"steps": 500, "min_measure_s": 1.0, "warmup_steps": 40, "max_warmup_steps": 500,
              "grappler_alone": False}
    line = estimate.run_line(cells, [(c, i) for c in cells for i in ("static", "dynamic")],
                             config, {}, str(tmp_path / "none.csv"), "host")
    assert "the model in the probe's units with the map's VM's probe for 2 of the jobs" in line
    only = estimate.run_line({"gru": cell}, [("gru", "static")], config, {},
                             str(tmp_path / "none.csv"), "host")
    assert "(the model in the probe's units with the map's VM's probe, calibrated" in only


def test_the_probe_models_setup_grows_with_max_len_as_the_calibration_jobs_did():
    """Static compat_v1 setups at max_len 10 to 60 (calibration, a VM of another day),
    against the model with the map's probe: within 1.5x, and growing as they did."""
    rows = JOBS[(JOBS["api"] == "compat_v1") & (JOBS["impl"] == "static")]
    cells = {str(row["max_len"]): _cell(row) for row in rows.to_dict("records")}
    modelled, _ = estimate.probe_seconds(cells)
    ratios = rows["setup_s"].to_numpy() / [modelled[(str(m), "static")][1]
                                           for m in rows["max_len"]]
    assert ((ratios > 1 / 1.5) & (ratios < 1.5)).all(), ratios
