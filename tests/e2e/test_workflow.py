"""The whole workflow, end to end, on the tiny grid in tests/tiny.yaml (max_len <= 10), in a
temporary directory; plus lint, config rejections before any job, and no overwriting."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, TINY, reference_columns, snakemake
from rnnbench.grid import cells as grid_cells
from rnnbench.grid.configcheck import validate_config
from rnnbench.grid.layout import IMPLEMENTATIONS
from rnnbench.measure.schema import validate_result


def test_a_successful_run_removes_the_partial_report(finished_run):
    assert not (finished_run / "results" / "partial").exists()


def test_every_output_is_written(finished_run):
    config = dict(TINY)
    validate_config(config)
    cells = grid_cells.cells(config)
    protocol = grid_cells.protocol_id(config)
    for cell in cells:
        for impl in IMPLEMENTATIONS:
            for repeat in range(1, config["repeats"] + 1):
                result = json.loads((finished_run / f"results/runs/{protocol}/{cell}/{impl}"
                                     f"/repeat{repeat}.json").read_text())
                validate_result(result)
                assert result["cell_id"] == cell and result["impl"] == impl
                log = (finished_run / f"results/logs/{protocol}/{cell}/{impl}"
                       f"/repeat{repeat}.log").read_text()
                steps = config["steps"]
                assert f"measured {steps} steps in" in log
                assert "done: median step" in log
    for chart in ("setup_time", "steps_per_s", "cumulative_time", "ratio_heatmap", "roofline",
                  "api"):
        assert (finished_run / f"results/plots/{chart}.html").stat().st_size > 1000
        assert (finished_run / f"results/plots/{chart}.svg").read_text().lstrip().startswith("<svg")


def test_measurements_are_tidy_and_real(finished_run, tmp_path):
    runs = pd.read_csv(finished_run / "results/measurements.csv", dtype={"sequence_length": str})
    assert len(runs) == 2 * 2 * 2 * TINY["repeats"]  # max_len x api x impl x repeats
    assert set(runs["sequence_length"]) == {"u1-4"}
    assert (runs["intra_op_parallelism_threads"] == 1).all()  # the job's threads (tiny: 1)
    assert runs["image_sha256"].isna().all()  # a bare run
    # the columns any valid results give (test_container checks an image run's against them)
    summary = pd.read_csv(finished_run / "results/summary.csv")
    assert {"measurements.csv": list(runs.columns),
            "summary.csv": list(summary.columns)} == reference_columns(tmp_path)
    assert (runs[["graph_construction_s", "first_step_s", "median_step_s"]] > 0).all().all()
    # the whole job (Snakemake's benchmark: file) costs more than its setup and steps, and
    # more memory than the training's own peak RSS reading
    assert (runs["job_wall_s"] > runs["setup_s"]).all()
    assert (runs["job_max_rss_mb"] > 100).all()
    nodes = runs.groupby(["api", "impl", "max_len"])["node_count"].first()
    for api in ("compat_v1", "keras"):
        assert nodes[api, "static", 8] > nodes[api, "static", 4]  # max_len cell copies
        assert nodes[api, "dynamic", 8] == nodes[api, "dynamic", 4]  # one loop body
    # identical data and initial weights (Keras's mapped from TF1's): the first losses agree
    # across implementations and apis
    first = runs.pivot_table(index=["max_len", "repeat"], columns=["api", "impl"],
                             values="first_loss")
    assert ((first.sub(first["compat_v1", "dynamic"], axis=0)).abs().max().max()
            / first.abs().min().min()) < 1e-5
    # Keras computes every padded time step; dynamic_rnn the batch's longest sequence
    keras = runs[runs["api"] == "keras"]
    assert (keras["time_steps_per_step"] == keras["max_len"]).all()
    assert (keras["fetched"] == "train_step+loss").all()
    assert keras["optimisation_s"].isna().all()  # Grappler is not run alone on it


def test_training_jobs_never_overlap_whatever_cores_says(finished_run):
    """The tiny grid ran with --cores 4 on this machine: from the spans its results and
    rule peak recorded (rnnbench.jobs.exclusive's lock, held from before the framework's import to
    the result), no two measuring jobs ran at the same time, and the jobs that found the lock
    taken waited for it."""
    spans = []
    for path in (finished_run / "results/runs").rglob("*.json"):
        record = json.loads(path.read_text())
        if "exclusive" in record:
            spans.append((record["exclusive"]["start_s"], record["exclusive"]["end_s"], path))
    runs = pd.read_csv(finished_run / "results/measurements.csv")
    assert len(spans) == len(runs) and runs["job_start_unix_s"].notna().all()
    spans.sort()
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        assert start >= end, f"{second} started before {first} ended"
    # Snakemake's scheduler ran them one at a time (resource measuring=1), so no job found the
    # lock taken; test_exclusive checks a job that does; the benchmarks saw each job's run
    assert (runs["lock_waited_s"] < 1).all() and (runs["job_max_rss_mb"] > 100).all()


def test_summary_has_intervals_ratios_and_breakeven(finished_run):
    summary = pd.read_csv(finished_run / "results/summary.csv")
    assert len(summary) == 4
    for column in ("static_graph_construction_s", "dynamic_first_step_s", "static_median_step_s",
                   "ratio_setup_s", "ratio_median_step_s", "breakeven_steps"):
        assert column in summary
    assert (summary["static_setup_s_ci_low"] <= summary["static_setup_s"]).all()
    assert (summary["static_setup_s"] <= summary["static_setup_s_ci_high"]).all()
    expected = summary["static_setup_s"] / summary["dynamic_setup_s"]
    assert (summary["ratio_setup_s"] - expected).abs().max() < 1e-9
    for flag in ("unstable", "busy", "warmup_capped", "ratio_paired"):
        assert summary[flag].dtype == bool
    assert summary["ratio_paired"].all()  # every repeat ran both implementations
    # rule peak measured the matmul rate in the same run; fractions use it
    peak = json.loads(next((finished_run / "results/runs").rglob("peak_intra1_tf2.21.json")).read_text())
    assert (summary["peak_flop_per_s"] == peak["peak"]["flop_per_s"]).all()
    assert peak["peak"]["size"] == 1024 and peak["metadata"]["intra_op_parallelism_threads"] == 1
    expected = summary["static_achieved_flop_per_s"] / peak["peak"]["flop_per_s"]
    assert (summary["static_fraction_of_peak"] - expected).abs().max() < 1e-12
    assert (summary["static_fraction_of_peak"] > 0).all()


def test_findings_give_a_verdict_per_cell(finished_run):
    text = (finished_run / "results/FINDINGS.md").read_text()
    summary = pd.read_csv(finished_run / "results/summary.csv")
    assert "### tiny-steps: static_rnn steps are faster" in text
    # the claim, then a line per api: compat_v1's and keras's (unroll=True in static's part)
    verdict = r"(it (holds|does not hold|is inconclusive) in (both cells|either cell)|it .* of 2 cells)"
    assert re.search(r'## Bottom line\n\n- \*\*tiny-steps\*\*: .* says "static_rnn steps are '
                     r'faster"\.\n  - In compat_v1 \(static_rnn / dynamic_rnn\), ' + verdict, text)
    assert re.search(r"  - In keras \(unroll=True / unroll=False\), " + verdict, text)
    claims = text[text.index("### tiny-steps"):text.index("## For Keras users")]
    for _, cell in summary.iterrows():
        # cells named by what varies in the grid (api and max_len here), every api judged
        row = next(line for line in claims.splitlines()
                   if line.startswith(f"| {cell['api']}, max_len {cell['max_len']} "))
        assert f"| {cell['ratio_median_step_s']:.2f} [" in row  # our ratio, from the summary
        # the decision at the 10 % margin (the schema's default), then the verdict
        assert re.search(r"\| (static faster by more than 10 %|dynamic faster by more than 10 %|"
                         r"no practical difference \(within 10 %\)|undecided)  *"
                         r"\| (holds|does not hold|inconclusive( \(the interval [^)]*\))?)"
                         r"( \(one process decides it\))?  *\|$", row), row
    assert "- keras, max_len 8: unroll=True takes" in text
    assert "| compat_v1, max_len 8 | `basic_lstm_bs8_ml8_slu1-4_nu8_in4` " in text.replace(
        "  ", " ")


def test_report_builds(finished_run):
    snakemake(finished_run, "--report", "results/report.html")
    html = (finished_run / "results/report.html").read_text()
    assert "ratio_heatmap.svg" in html and "summary.csv" in html and "FINDINGS.md" in html
    assert "batch_size: 8; max_len: 4, 8; sequence_length:" in html  # the grid it describes


def test_a_report_is_built_without_a_chart_that_failed_and_names_it(finished_run, tmp_path):
    """A chart job that failed (here: the renderer under an address-space limit) leaves a
    report of the tables and the other charts, whose description names the chart and why."""
    import shutil

    shutil.copytree(finished_run, tmp_path, symlinks=True, dirs_exist_ok=True)
    for chart in tmp_path.glob("results/plots/setup_time.*"):
        chart.unlink()
    (tmp_path / "results/logs/plot/setup_time.log").write_text(
        "\n#\n# Fatal process out of memory: Oilpan: CagedHeap reservation.\n#\n")
    proc = snakemake(tmp_path, "--report", "results/report.html")
    assert "report: built without 1 of the " in proc.stderr
    html = (tmp_path / "results/report.html").read_text()
    assert "ratio_heatmap.svg" in html and "FINDINGS.md" in html and "setup_time.svg" not in html
    assert "Charts missing from this report" in html
    assert "<li>setup_time: the chart renderer (vl-convert's V8) could not reserve its address " \
           "space: an address-space limit (ulimit -v) was set where it ran" in html
    assert "(its log: results/logs/plot/setup_time.log)</li>" in html


def test_a_report_for_another_grid_or_an_unfinished_run_is_refused(finished_run, tmp_path):
    proc = snakemake(finished_run, "--report", "other.html", "--config", "steps=6",
                     check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and not (finished_run / "other.html").exists()
    assert 'File "' not in out  # the cause and the fix, no Snakefile frames
    assert "report: results/measurements.csv holds the results of another grid than this " \
           "config's: 16 of its 16 runs are not this config's (e.g. results/runs/" in out
    assert "16 of this config's 16 runs are not in it (e.g. results/runs/" in out
    partial = tmp_path / "partial"
    (partial / "results/partial").mkdir(parents=True)
    (partial / "config.yaml").write_text(yaml.safe_dump(TINY))
    (partial / "results/partial/missing.csv").write_text("cell_id,impl,repeat\nc,static,1\n")
    proc = snakemake(partial, "--report", "r.html", check=False)
    assert proc.returncode == 1  # nothing measured in this folder: every result is missing
    assert "report: the run of this config did not finish: 16 of 16 training results are " \
           "missing (e.g. results/runs/" in proc.stdout + proc.stderr
    assert "results/partial/ says why" in proc.stdout + proc.stderr
    assert "A cell that fails every time (out of memory, say) is left out by removing one of " \
           "its axis values from the config" in (proc.stdout + proc.stderr).replace("\n", " ")


def test_a_rerun_has_nothing_to_do_and_a_new_protocol_keeps_old_results(finished_run):
    # nothing to do again, even with another log_every, which changes no measurement
    proc = snakemake(finished_run, "-n", "--cores", "1", "--config", "log_every=3")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    assert "time: about" not in proc.stderr  # nothing to run: no estimate
    before = {p: p.stat().st_mtime for p in (finished_run / "results/runs").rglob("*.json")}
    proc = snakemake(finished_run, "-n", "--cores", "1", "--config", "steps=6")
    assert "train_static" in proc.stdout  # new measurements are planned ...
    # ... and how long they will take here: the model in the probe's units with the probe the
    # first run left, scaled by this folder's measured jobs
    assert re.search(r"time: about \d+ min for the 16 training jobs to run and the rest \(the "
                     r"model in the probe's units with this machine's probe \(results/runs/"
                     r"[^)]*peak_intra1_tf[\d.]+\.json\)( for \d+ of the jobs, rnnbench/pipeline/"
                     r"estimate.py's for the rest)?, scaled by [\d.]+, this machine's "
                     r"measured / modelled time over 16 earlier jobs \(per api where it has "
                     r"some\)\)", proc.stderr), proc.stderr
    new_protocol = grid_cells.protocol_id({**_validated(TINY), "steps": 6})
    assert new_protocol in proc.stdout  # ... in a folder of their own
    after = {p: p.stat().st_mtime for p in (finished_run / "results/runs").rglob("*.json")}
    assert after == before


def results_tree(workdir):
    """{path under results/: (sha256, mtime in ns)} of every file there: what a dry run must
    leave as it was."""
    import hashlib

    return {str(path.relative_to(workdir)): (hashlib.sha256(path.read_bytes()).hexdigest(),
                                             path.stat().st_mtime_ns)
            for path in sorted((workdir / "results").rglob("*")) if path.is_file()}


def test_a_deleted_result_is_measured_again_and_the_tables_rebuilt(finished_run, tmp_path):
    """Snakemake alone says "Nothing to be done" when a result is deleted after aggregation;
    the workflow sets the tables aside, so the run re-measures it and re-aggregates. A dry
    run moves nothing (the results tree is as it was) and plans what the run does."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(finished_run, copy, symlinks=True)
    result = next((copy / "results/runs").rglob("static/repeat2.json"))
    kept = result.read_bytes()
    result.unlink()
    before = results_tree(copy)
    proc = snakemake(copy, "-n", "--cores", "1")
    planned = proc.stdout + proc.stderr
    assert f"the tables no longer describe the results on disk (1: " \
           f"{result.relative_to(copy)} is gone): a run moves them and the charts to " \
           "results/stale/, measures what is missing and rebuilds them (this command runs no " \
           "job: nothing moved)" in planned.replace("\n", " ")
    assert results_tree(copy) == before
    assert re.search(r"train_static\s+1\n", planned) and re.search(r"aggregate\s+1\n", planned)
    for inspecting in (["--summary"], ["--report", "report.html"]):  # commands that run no job
        snakemake(copy, *inspecting, check=False)
        assert results_tree(copy) == before, inspecting
    # a dry run of another grid leaves the tables alone too (a run of that grid rewrites them)
    result.write_bytes(kept)
    before = results_tree(copy)
    snakemake(copy, "-n", "--cores", "1", "--config", "steps=6")
    assert results_tree(copy) == before
    # an edit that keeps the file's time (cp -p, rsync -a): Snakemake would not notice
    stamp = result.stat()
    record = json.loads(kept)
    record["timings"]["graph_construction_s"] = 999.0
    result.write_text(json.dumps(record))
    os.utime(result, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    before = results_tree(copy)
    proc = snakemake(copy, "-n", "--cores", "1")
    assert f"{result.relative_to(copy)} changed since it was aggregated" in proc.stderr
    assert re.search(r"aggregate\s+1\n", proc.stdout + proc.stderr)
    assert results_tree(copy) == before
    # the run itself sets the tables and charts aside and rebuilds them from what is on disk
    proc = snakemake(copy, "--cores", "1", "results/measurements.csv")
    assert "they and the charts are moved to results/stale/" in proc.stderr
    assert list((copy / "results/stale/plots").glob("*.svg"))
    assert "999.0" in (copy / "results/measurements.csv").read_text()  # the edited result's


def test_a_refused_aggregation_says_its_cause_on_the_terminal(finished_run, tmp_path):
    """Snakemake alone prints "Error in rule aggregate ... check log file(s)"; the cause and
    its fix were in results/logs/aggregate.log, under a traceback. Here two results are made
    to claim they were measured at the same time on this host (load.check_no_overlap)."""
    import shutil

    shutil.copytree(finished_run, tmp_path, symlinks=True, dirs_exist_ok=True)
    first, second = sorted((tmp_path / "results/runs").rglob("repeat1.json"))[:2]
    spans = [json.loads(path.read_text()) for path in (first, second)]
    spans[1]["exclusive"]["start_s"] = spans[0]["exclusive"]["start_s"]
    spans[1]["exclusive"]["end_s"] = spans[0]["exclusive"]["end_s"]
    second.write_text(json.dumps(spans[1]))
    proc = snakemake(tmp_path, "--cores", "1", "results/measurements.csv", check=False)
    assert proc.returncode == 1
    line = next(line for line in proc.stderr.splitlines() if line.startswith("aggregate failed"))
    assert "were measured at the same time on" in line and "run again" in line
    assert "(its log: results/logs/aggregate.log)" in line and "Traceback" not in line


def test_a_damaged_result_is_set_aside_and_measured_again(finished_run, tmp_path):
    """A result cut short was named by aggregation, which failed, and nothing was measured
    again until the user deleted it. Now it moves to results/stale/ (kept) and the same
    command measures it again; a dry run only says so."""
    import shutil

    shutil.copytree(finished_run, tmp_path, symlinks=True, dirs_exist_ok=True)
    result = next((tmp_path / "results/runs").rglob("dynamic/repeat1.json"))
    relative = result.relative_to(tmp_path)
    result.write_text(result.read_text()[:100])  # cut short
    before = results_tree(tmp_path)
    proc = snakemake(tmp_path, "-n", "--cores", "1", str(relative))
    assert f"results: {relative} is not a valid result (not JSON" in proc.stderr
    assert "a run moves it to results/stale/" in proc.stderr and results_tree(tmp_path) == before
    # the plan lists the job the run will do (rule plan_only stands for the moving)
    assert re.search(r"\ntrain_dynamic\s+1\n", proc.stdout), proc.stdout
    proc = snakemake(tmp_path, "--cores", "1", str(relative))
    assert re.search(r"\ntrain_dynamic\s+1\n", proc.stderr), proc.stderr
    assert f"results: {relative} was not a valid result (not JSON" in proc.stderr
    assert (tmp_path / "results/stale" / relative).stat().st_size == 100  # kept, as it was
    assert json.loads(result.read_text())["schema_version"] == 6  # measured again


def test_tables_of_an_older_workflow_are_set_aside_and_rebuilt(finished_run, tmp_path):
    """Tables written before an axis existed (no column for it) would break the charts of
    the new code; the profile re-runs on inputs only, so the workflow sets them aside."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(finished_run, copy, symlinks=True)
    table = pd.read_csv(copy / "results/measurements.csv")
    table.drop(columns=["unroll", "protocol"]).to_csv(copy / "results/measurements.csv",
                                                      index=False)
    before = results_tree(copy)
    proc = snakemake(copy, "-n", "--cores", "1")
    planned = proc.stdout + proc.stderr
    assert ("results/measurements.csv has no column unroll, protocol (an older workflow's)"
            in planned)
    assert results_tree(copy) == before  # a dry run: nothing set aside
    assert re.search(r"aggregate\s+1\n", planned) and "train_static" not in planned


def test_the_run_probes_the_machine_beside_rule_peak_and_findings_say_its_unit_costs(
        finished_run):
    """Rule peak's job measures the machine's unit costs (rnnbench probe's) in the run, and
    FINDINGS' Where this was measured gives them, each one the record's."""
    peak, = (finished_run / "results/runs").glob("*/peak_*.json")
    costs = json.loads(peak.read_text())["probe"]["unit_costs"]
    assert abs(costs["while_iteration_s"]) < 1e-3  # seconds (a busy machine: it may be < 0)
    text = (finished_run / "results/FINDINGS.md").read_text()
    where = text[text.index("## Where this was measured"):]
    said = (f"{1e6 * costs['while_iteration_s']:.3g} µs" if costs["while_iteration_s"] > 0
            else "not resolved (slope <= 0)")
    assert f"a while_loop iteration {said};" in where


def test_a_new_claim_rewrites_findings_without_measuring_again(finished_run, tmp_path):
    """The profile re-runs a rule on changed inputs only (never on changed params, which
    would re-measure): the claims reach rule findings as a file rewritten when they change."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(finished_run, copy, symlinks=True)
    claim = {"id": "tiny-setup", "seed": "test", "statement": "static_rnn starts slower",
             "quantity": "setup_s", "direction": "static > dynamic"}
    (copy / "claims.yaml").write_text(yaml.safe_dump({"claims": [claim]}))
    before = results_tree(copy)
    proc = snakemake(copy, "-n", "--cores", "1", "--configfile", str(copy / "config.yaml"),
                     str(copy / "claims.yaml"))
    assert "the claims, extrapolate or margin changed since FINDINGS.md was written" in proc.stderr
    assert re.search(r"findings\s+1\n", proc.stdout) and results_tree(copy) == before
    proc = snakemake(copy, "--cores", "1", "--configfile", str(copy / "config.yaml"),
                     str(copy / "claims.yaml"))
    log = proc.stdout + proc.stderr
    assert re.search(r"findings\s+1\n", log) and "train_static" not in log
    findings = (copy / "results/FINDINGS.md").read_text()
    assert "### tiny-setup: static_rnn starts slower" in findings and "tiny-steps" not in findings
    proc = snakemake(copy, "-n", "--cores", "1", "--configfile", str(copy / "config.yaml"),
                     str(copy / "claims.yaml"))
    assert "Nothing to be done" in proc.stdout + proc.stderr  # written once


def test_more_repeats_go_where_the_step_ratio_is_undecided(finished_run, tmp_path):
    """With more_repeats, checkpoint first_look reads the planned repeats and adds paired
    repeats to the cells it finds undecided (at 97.5 %: each of two looks); the dry run and
    the estimate state the cap; tables made before the look are set aside (Snakemake alone
    would keep them: a job that waits on a checkpoint is not re-run by its inputs);
    aggregation reads every repeat; a rerun has nothing to do."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(finished_run, copy, symlinks=True)
    (copy / "more.yaml").write_text("more_repeats: 1\napi: [compat_v1]\nmax_len: [4]\n")
    grid = ["--configfile", str(copy / "config.yaml"), str(copy / "more.yaml")]
    proc = snakemake(copy, "-n", "--cores", "1", *grid)
    planned = proc.stdout + proc.stderr
    assert "then at most 2 more training jobs" in planned
    assert "results/measurements.csv was made before the first look that more_repeats asks " \
           "for): a run moves them" in planned
    assert "train_static" not in planned  # Snakemake plans no further than the look
    proc = snakemake(copy, "results/FINDINGS.md", "--cores", "1", *grid)
    assert re.search(r"checkpoint first_look:", proc.stdout + proc.stderr)
    written = next((copy / "results/runs").rglob("first_look.json"))
    assert re.fullmatch(r"runs/[^/]+/first_look\.json",  # as results/README.md names it
                        str(written.relative_to(copy / "results")))
    look = json.loads(written.read_text())
    assert look["confidence"] == 0.975 and len(look["cells"]) == 1
    summary = pd.read_csv(copy / "results/summary.csv")
    repeats = 3 if look["undecided"] else 2
    assert list(summary["static_repeats"]) == [repeats] == list(summary["dynamic_repeats"])
    assert list(summary["ratio_confidence"]) == [0.975] and summary["ratio_paired"].all()
    assert "More repeats (config `more_repeats`: 1)" in (copy / "results/FINDINGS.md").read_text()
    proc = snakemake(copy, "results/FINDINGS.md", "-n", "--cores", "1", *grid)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def _validated(config):
    config = dict(config)
    validate_config(config)
    return config


def test_ablation_axes_plan_their_own_runs(tmp_path):
    config = {**TINY, "max_len": [4], "api": ["compat_v1"], "loop_bound": ["batch_max", "max_len"],
              "meta_optimizer": ["on", "off"], "intra_op_parallelism_threads": [1, 2]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "-n", "--cores", "2")
    planned = (proc.stdout + proc.stderr).replace("\t", " ")
    for suffix in ("_in4/", "_in4_nomo/", "_in4_nomo_intra2/"):
        assert f"basic_lstm_bs8_ml4_slu1-4_nu8{suffix}static/repeat1.json" in planned
    # loop_bound max_len changes dynamic_rnn only: those cells take their references' static runs
    for suffix in ("_in4_lbmaxlen/", "_in4_lbmaxlen_nomo/", "_in4_lbmaxlen_nomo_intra2/"):
        assert f"basic_lstm_bs8_ml4_slu1-4_nu8{suffix}dynamic/repeat1.json" in planned
        assert f"basic_lstm_bs8_ml4_slu1-4_nu8{suffix}static/repeat1.json" not in planned
    assert re.search(r"train_dynamic\s+16\n", planned)  # 8 cells x 2 repeats
    assert re.search(r"train_static\s+8\n", planned)  # 4 cells x 2 repeats
    # a matmul peak per intra-op thread count, a chart per ablation axis
    assert "peak_intra1_tf2.21.json" in planned and "peak_intra2_tf2.21.json" in planned
    for axis in ("loop_bound", "meta_optimizer", "intra_op_parallelism_threads"):
        assert f"results/plots/ablation_{axis}.svg" in planned
    assert "ablation_fetches" not in planned
    # the 2-thread cells' jobs ask Snakemake for 2 threads
    job = planned[planned.index("_in4_intra2/static/repeat1.json"):]
    assert job[:job.index("resources:")].count("threads: 2") == 1
    assert not (tmp_path / "results").exists()  # a dry run writes nothing, not even settings
    assert "results/findings_settings.json" not in planned  # findings' input, written by a run


# One schema error, one cross-field error and a TensorFlow version a bare run cannot run,
# through Snakemake; test_grid and test_container check the others.
@pytest.mark.parametrize("override, fragment", [
    ({"batch_size": [-8]}, "-8 is less than the minimum of 1"),
    ({"max_len": [4], "sequence_length": [6]}, "6 reaches 6 time steps, above max_len 4"),
    ({"tf_version": ["2.12", "2.21"]}, "tf_version ['2.12']: without containers, the "
                                       "installed TensorFlow 2.21"),
])
def test_bad_config_stops_before_any_job(tmp_path, override, fragment):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({**TINY, **override}))
    proc = snakemake(tmp_path, "--cores", "1", check=False)
    assert proc.returncode != 0
    assert fragment in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_a_file_where_an_output_folder_goes_is_named_and_the_rest_measured(finished_run,
                                                                           tmp_path):
    """Snakemake alone stops with a NotADirectoryError traceback, even with --keep-going. On a
    copy of the tiny grid's run: one compat_v1 cell's folder replaced by a file, one result of
    another cell deleted; the deleted one is measured again, the blocked cell's 4 jobs named."""
    import shutil

    shutil.copytree(finished_run, tmp_path, symlinks=True, dirs_exist_ok=True)
    runs = tmp_path / "results" / "runs"
    cell_dir = next(path for path in runs.glob("*/*_ml8_*") if path.name.endswith("_in4"))
    blocked = str(cell_dir.relative_to(tmp_path))
    shutil.rmtree(cell_dir)
    cell_dir.write_text("")
    deleted = next(runs.glob("*/*_ml4_*_in4/static/repeat1.json"))
    deleted.unlink()
    proc = snakemake(tmp_path, "--cores", "2", "--keep-going", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out
    assert 'File "' not in out and "WorkflowError" not in out  # no Snakefile frame
    assert "4 training job(s) were left out" in out
    assert f"4 training job(s) cannot write their result, log or benchmark and are left " \
           f"out, e.g. {blocked}/static/repeat1.json ({blocked} is a file where a folder " \
           "must be)" in out.replace("\n", " ")
    assert deleted.exists() and re.search(r"train_static\s+1\n", out)
    missing = pd.read_csv(tmp_path / "results/partial/missing.csv")
    assert len(missing) == 4 and set(missing["error_line"]) == {
        f"{blocked} is a file where a folder must be"}
    assert (tmp_path / "results/partial/summary.csv").exists()
    # every other result on disk: Snakemake has nothing to do and calls no hook, yet the run
    # fails as before, naming the blocked jobs (it said "Nothing to be done", status 0)
    shutil.rmtree(tmp_path / "results/partial")
    proc = snakemake(tmp_path, "--cores", "1", check=False)
    assert proc.returncode == 1 and "4 training job(s) were left out" in proc.stderr
    assert len(pd.read_csv(tmp_path / "results/partial/missing.csv")) == 4
    # a blocked table stops the run before any job, named
    (tmp_path / blocked).unlink()
    (tmp_path / "results/FINDINGS.md").mkdir()
    proc = snakemake(tmp_path, "-n", "--cores", "1", check=False)
    assert proc.returncode == 1
    assert "results/FINDINGS.md: results/FINDINGS.md is a folder where a file must be; " \
           "move it away" in proc.stdout + proc.stderr


def test_a_measuring_lock_no_job_can_open_stops_the_run_before_any_job(tmp_path):
    """RNNBENCH_MEASURING_LOCK in a folder that does not exist: named at the start, not by
    the first training job's failure (a dry run opens nothing)."""
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY))
    lock = {"RNNBENCH_MEASURING_LOCK": str(tmp_path / "nowhere" / "lock")}
    assert snakemake(tmp_path, "-n", "--cores", "1", env=lock).returncode == 0
    proc = snakemake(tmp_path, "--cores", "1", check=False, env=lock)
    assert proc.returncode == 1
    assert (f"{tmp_path}/nowhere/lock: cannot open the measuring lock (No such file or "
            "directory); set RNNBENCH_MEASURING_LOCK to a file every job") in proc.stderr
    assert not (tmp_path / "results").exists()  # refused before anything changed


def test_another_working_directory_reads_the_workflows_config_yaml(tmp_path):
    """--directory elsewhere, where there is no config.yaml, with a --configfile that sets the
    steps alone: the grid is the workflow's config.yaml under it (num_units 32, not the
    schema's 64), and the terminal names the files it was read from."""
    (tmp_path / "steps.yaml").write_text("steps: 7\n")
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(tmp_path / "steps.yaml"))
    out = proc.stdout + proc.stderr
    assert f"the grid is read from {REPO / 'config.yaml'}, then {tmp_path / 'steps.yaml'}" in out
    assert "_nu32_" in out and "_nu64" not in out and "steps7" in out
    assert not (tmp_path / "results").exists()


def test_a_yaml_syntax_error_in_config_yaml_names_its_line(tmp_path):
    """Snakemake alone says only "Config file is not valid JSON or YAML"."""
    (tmp_path / "config.yaml").write_text("max_len: [4, 8\nbatch_size: [8]\n")
    proc = snakemake(tmp_path, "-n", check=False)
    assert proc.returncode == 1
    assert "config: config.yaml, line 2, column 11: not valid YAML" in proc.stdout + proc.stderr


def test_a_clone_under_a_path_with_a_space_plans_a_bare_run(tmp_path):
    """Snakemake refuses an image path with whitespace even where no image is used: a bare run
    declares none. With --use-singularity such a path is named, with the fix, before any job."""
    clone = tmp_path / "with space" / "repo"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_bytes((REPO / name).read_bytes())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "snakemake", "-n", "--cores", "1"]
    bare = subprocess.run(cmd, cwd=clone, capture_output=True, text=True, env=env)
    assert bare.returncode == 0, bare.stderr
    image = subprocess.run(cmd + ["--use-singularity"], cwd=clone, capture_output=True,
                           text=True, env=env)
    assert image.returncode != 0
    assert "Apptainer cannot take an image path with whitespace" in image.stdout + image.stderr
    assert "clone the repository to a path without spaces" in image.stdout + image.stderr


def test_lint_is_clean(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY))
    proc = snakemake(tmp_path, "--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


def test_snakefmt_is_clean():
    snakefmt = Path(sys.executable).parent / "snakefmt"
    proc = subprocess.run([str(snakefmt), "--check", "Snakefile", "workflow/rules"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
