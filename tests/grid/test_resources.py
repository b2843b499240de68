"""Cluster resources sized from the cell (rnnbench.grid.resources), and the partial summary written
after failures (rnnbench.pipeline.failures.write_partial)."""

import hashlib
import json
import os
import re

from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, make_result
from rnnbench.pipeline import failures, files
from rnnbench.results import load
from rnnbench.grid import resources

SEED_CELL = {"cell": "basic_lstm", "batch_size": 200, "max_len": 300, "sequence_length": 20,
             "num_units": 200, "input_dim": 16}
TINY = {"cell": "basic_lstm", "batch_size": 8, "max_len": 4, "sequence_length": "max_len",
        "num_units": 8, "input_dim": 4}


def test_step_flop_hand_count():
    # 2 x batch 8 x (4 + 8) x 4 gates x 8 units = 6144 per time step, x 4 steps, x 3 (backward)
    assert resources.step_flop(TINY, "static") == 6144 * 4 * 3
    # the seed's cell counts its 20 valid steps, not the 300 padded ones
    assert resources.step_flop(SEED_CELL, "dynamic") == 3 * 20 * 2 * 200 * 216 * 4 * 200
    # ... except where the loop runs the padded length (bench records the same: roofline)
    for padded in ({"api": "keras"}, {"pass_sequence_length": False}, {"loop_bound": "max_len"}):
        assert resources.step_flop({**SEED_CELL, **padded}, "dynamic") == (
            3 * 300 * 2 * 200 * 216 * 4 * 200)
    assert resources.step_flop({**SEED_CELL, "loop_bound": "max_len"}, "static") == (
        3 * 20 * 2 * 200 * 216 * 4 * 200)


def test_memory_grows_with_the_unrolled_graph():
    # 1024 + 8 * 300 (static graph) + data 2 * 4 * 1000 * 300 * 16 B + 16 * 200 * 300 * 1616 B
    expected = 1024 + 2400 + (38_400_000 + 1_551_360_000) / 2**20
    assert resources.training_mem_mb(SEED_CELL, "static", 1000) == 256 * -(-expected // 256)
    assert resources.training_mem_mb(SEED_CELL, "static", 1000) == 5120
    assert resources.training_mem_mb(SEED_CELL, "dynamic", 1000) == 2560
    assert resources.training_mem_mb(TINY, "dynamic", 32) == 1280  # 1024 + a little, rounded up


def test_dataset_memory():
    params = {"num_samples": 1000, "max_len": 300, "input_dim": 16}
    # 512 + 2 x 19.2 MB (36.6 MiB) = 548.6 MiB, rounded up to 768
    assert resources.dataset_mem_mb(params) == 768


def test_runtime_in_minutes():
    # dynamic, tiny: 2 x (5 min + microseconds of compute), rounded up: 11 minutes
    assert resources.training_runtime_min(TINY, "dynamic", 8) == 11
    # static seed cell: 300 s setup + 3801 steps x 4.1472e9 FLOP / 1e10 FLOP/s = 1876.4 s,
    # 2 x (5 + 31.27) = 72.5 minutes, rounded up
    assert resources.step_flop(SEED_CELL, "static") == 4.1472e9
    # min_measure_s adds its seconds: 60 s more is 2 more minutes
    assert resources.training_runtime_min(SEED_CELL, "static", 3801, 60.0) == 75
    assert resources.training_runtime_min(SEED_CELL, "static", 3801) == 73


def test_write_partial_lists_missing_runs_and_summarises_the_rest(tmp_path):
    runs = tmp_path / "runs"
    expected = []
    for cell in ("c1", "c2"):
        for impl in ("static", "dynamic"):
            for repeat in (1, 2):
                path = runs / cell / impl / f"repeat{repeat}.json"
                expected.append((cell, impl, repeat, str(path),
                                 str(tmp_path / f"{cell}-{impl}-{repeat}.log")))
                # a TensorFlow error: the message, then more stack frames
                (tmp_path / f"{cell}-{impl}-{repeat}.log").write_text(
                    "start\nTraceback (most recent call last):\n  File \"x.py\", line 1\n"
                    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when "
                    "allocating tensor\n\n  File \".../ops.py\", line 1221, in from_node_def\n")
                if (cell, impl) != ("c2", "static"):  # c2's static runs failed
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(make_result(impl, cell, repeat)))
    missing = failures.write_partial(expected, tmp_path / "partial")
    assert missing[["cell_id", "impl", "repeat"]].values.tolist() == [["c2", "static", 1],
                                                                       ["c2", "static", 2]]
    assert missing["error_line"].tolist() == [
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor"] * 2
    assert pd.read_csv(tmp_path / "partial/missing.csv")["cell_id"].tolist() == ["c2", "c2"]
    assert len(pd.read_csv(tmp_path / "partial/measurements.csv")) == 6
    assert pd.read_csv(tmp_path / "partial/summary.csv")["cell_id"].tolist() == ["c1"]


def test_write_partial_with_nothing_measured(tmp_path):
    (tmp_path / "empty.log").write_text("")
    missing = failures.write_partial(
        [("c", "static", 1, str(tmp_path / "c/static/repeat1.json"), str(tmp_path / "no.log")),
         ("c", "dynamic", 1, str(tmp_path / "c/dynamic/repeat1.json"), str(tmp_path / "empty.log"))],
        tmp_path / "partial")
    assert missing["error_line"].tolist() == [failures.NOT_STARTED, failures.STOPPED_EARLY]
    # a log an earlier run wrote (its job finished then; the result is gone now): this run
    # never started the job, and the earlier run's last line is not quoted as this one's
    import os

    (tmp_path / "earlier.log").write_text("INFO wrote c/static/repeat1.json\n")
    os.utime(tmp_path / "earlier.log", (1e9, 1e9))
    job = [("c", "static", 1, str(tmp_path / "c/static/repeat1.json"),
            str(tmp_path / "earlier.log"))]
    assert failures.write_partial(job, tmp_path / "p2", since=2e9)["error_line"].tolist() == [
        failures.NOT_STARTED]
    assert failures.write_partial(job, tmp_path / "p3")["error_line"].tolist() != [
        failures.NOT_STARTED]  # without this run's start, every log is taken as this run's
    # a log that ends with no error: the job was ended from outside (Ctrl-C, a kill)
    assert failures.error_line(["starting", "first step ...", ""]) == (
        "stopped without an error of its own (Ctrl-C, or killed), after: first step ...")
    assert failures.error_line([]) == failures.error_line(["", " "]) == ""
    # Ctrl-C while a chart job ran Python code: stopped, not failed with "KeyboardInterrupt"
    assert failures.error_line(["drawing ratio_heatmap", "Traceback (most recent call last):",
                                '  File "plot.py", line 3', "KeyboardInterrupt"]) == (
        "stopped without an error of its own (Ctrl-C, or killed), after: drawing ratio_heatmap")
    # TensorFlow's out of memory: an InvalidArgumentError whose cause is lines above it
    oom = ["2026 W tensorflow/core/framework/op_kernel.cc:1828] OP_REQUIRES failed: OOM when "
           "allocating tensor with shape[64,4096] and type float on /job:localhost",
           "tensorflow.python.framework.errors_impl.InvalidArgumentError: Graph execution error:"]
    assert failures.error_line(oom) == ("out of memory: OOM when allocating tensor with shape"
                                        "[64,4096] and type float on /job:localhost")
    assert not (tmp_path / "partial/summary.csv").exists()


def test_obstacles_name_a_file_where_a_folder_must_be(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "cell").write_text("")  # a plain file named like a cell's folder
    (tmp_path / "summary.csv").mkdir()  # a folder where a table goes
    (tmp_path / "plots").symlink_to("/nonexistent/dir")  # a link to nowhere
    paths = [str(tmp_path / "runs/cell/static/repeat1.json"), str(tmp_path / "runs/ok/x.json"),
             str(tmp_path / "summary.csv"), str(tmp_path / "new/deeper/y.json"),
             str(tmp_path / "plots/a.svg")]
    assert files.obstacles(paths) == {
        paths[0]: f"{tmp_path / 'runs/cell'} is a file where a folder must be",
        paths[2]: f"{tmp_path / 'summary.csv'} is a folder where a file must be",
        paths[4]: f"{tmp_path / 'plots'} is a link to /nonexistent/dir, which does not exist"}
    # a FIFO where a result goes: any reader would wait for a writer (a dry run hung)
    os.mkfifo(tmp_path / "runs/ok.json")
    assert files.obstacles([str(tmp_path / "runs/ok.json")]) == {
        str(tmp_path / "runs/ok.json"):
            f"{tmp_path / 'runs/ok.json'} is not a regular file (a FIFO, socket or device)"}


def test_a_listed_result_that_is_no_longer_a_file_is_gone_and_never_read(tmp_path):
    """A folder or FIFO where a listed result was: a traceback (IsADirectoryError) and a hang
    (a FIFO's reader waits for a writer), before any job."""
    (tmp_path / "folder.json").mkdir()
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "kept.json").write_text("{}")
    listed = {str(tmp_path / name): "0" * 64 for name in ("folder.json", "fifo.json")}
    listed[str(tmp_path / "kept.json")] = hashlib.sha256(b"{}").hexdigest()
    assert files.changed_results(listed) == {str(tmp_path / "folder.json"): "gone",
                                             str(tmp_path / "fifo.json"): "gone"}


def test_write_partial_names_what_blocked_a_job(tmp_path):
    result = str(tmp_path / "c" / "static" / "repeat1.json")
    missing = failures.write_partial([("c", "static", 1, result, str(tmp_path / "c"))],
                                    tmp_path / "partial",
                                    blocked={result: "c is a file where a folder must be"})
    assert missing["error_line"].tolist() == ["c is a file where a folder must be"]
    # a FIFO where the result goes exists, but is never read as one (the run hung there)
    Path(result).parent.mkdir(parents=True)
    os.mkfifo(result)
    missing = failures.write_partial([("c", "static", 1, result, str(tmp_path / "c"))],
                                    tmp_path / "partial", blocked={result: "not a regular file"})
    assert missing["error_line"].tolist() == ["not a regular file"]


def test_job_cost_reads_snakemakes_benchmark_file(tmp_path):
    tsv = tmp_path / "repeat1.tsv"
    tsv.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load"
                   "\tcpu_time\n4.14\t0:00:04\t579.94\t2155.90\t261.20\t414.50\t11.04\t0.02"
                   "\t72.18\t3.45\n")
    assert load.job_cost(tsv) == {"job_wall_s": 4.14, "job_max_rss_mb": 579.94}
    missing = load.job_cost(tmp_path / "none.tsv")
    assert all(value != value for value in missing.values())  # NaN


CALIBRATION = REPO / "docs/figures/calibration/jobs.csv"


def _calibration_cells():
    jobs = pd.read_csv(CALIBRATION)
    for row in jobs.itertuples():
        cell = {"cell": "basic_lstm", "batch_size": row.batch_size, "max_len": row.max_len,
                "sequence_length": "max_len", "num_units": row.num_units,
                "input_dim": row.input_dim, "api": row.api}
        yield row, cell, jobs


def test_the_estimates_cover_every_calibration_job():
    """presets/calibrate-resources.yaml's jobs (every api, max_len 10 to 60): each job's bounds
    hold what it took, and what unrolling adds covers what static took beyond dynamic (the
    base alone would cover these short runs)."""
    for row, cell, jobs in _calibration_cells():
        took_mb = max(row.job_max_rss_mb, row.peak_rss_mb)
        assert resources.training_mem_mb(cell, row.impl, 1000) >= took_mb, row
        assert 60 * resources.training_runtime_min(cell, row.impl, 42, 0.1) >= row.job_wall_s
        if row.impl == "static":
            dynamic = jobs[(jobs.api == row.api) & (jobs.impl == "dynamic")
                           & (jobs.max_len == row.max_len)].iloc[0]
            added_mb, added_s = resources.unrolled_cost(cell, "static")
            assert added_mb >= took_mb - max(dynamic.job_max_rss_mb, dynamic.peak_rss_mb), row
            assert added_s >= row.job_wall_s - dynamic.job_wall_s, row
    # the compiled apis' estimates grow faster than linearly, as their jobs did
    xla = {"cell": "basic_lstm", "batch_size": 32, "max_len": 60, "num_units": 32,
           "input_dim": 16, "sequence_length": "max_len", "api": "keras_xla"}
    at = {max_len: resources.unrolled_cost({**xla, "max_len": max_len}, "static")[0]
          for max_len in (60, 120, 240)}
    assert at[240] / at[120] > at[120] / at[60] > 4


def test_a_keras_xla_grid_like_the_public_reports_is_refused_before_any_job():
    """Keras with XLA and unroll=True at max_len 240 was declared 3072 MiB and grew
    past 23 GB on a 24 GB machine. Now its estimate is above that, and the grid is refused."""
    cell = {"cell": "basic_lstm", "batch_size": 32, "max_len": 240, "num_units": 32,
            "input_dim": 16, "sequence_length": "max_len", "api": "keras_xla"}
    assert resources.training_mem_mb(cell, "static", 1000) > 23 * 1024
    with pytest.raises(ValueError, match=r"max_len 240, input_dim 16, api keras_xla \(cell c\): a "
                                         r"training job "
                                         r"needs about \d+ MiB, this machine has 24576 MiB"):
        resources.check_fits({"c": cell}, 1000, 24 * 1024)
    resources.check_fits({"c": {**cell, "max_len": 60}}, 1000, 24 * 1024)
    # dynamic's job unrolls nothing: the base
    assert resources.training_mem_mb(cell, "dynamic", 1000) < 2048
    # a GPU adds its libraries' host memory
    assert resources.training_mem_mb(cell, "dynamic", 1000, "gpu") == (
        resources.training_mem_mb(cell, "dynamic", 1000) + resources.GPU_HOST_MB)


def test_set_resources_a_watchdog_cannot_hold_a_job_to_are_refused():
    resources.check_overrides({"train_static": {"mem_mb": 2048, "runtime": 30},
                               "other_rule": {"mem_mb": 0}}, 24 * 1024)
    for given, fragment in (
            ({"train_static": {"mem_mb": 0}}, "--set-resources train_static:mem_mb=0: the job's "
                                              "watchdog needs a number above 0 (MiB)"),
            ({"peak": {"runtime": -1}}, "--set-resources peak:runtime=-1: the job's watchdog "
                                        "needs a number above 0 (minutes)"),
            ({"train_dynamic": {"mem_mb": 100000}}, "this machine has 24576 MiB")):
        with pytest.raises(ValueError, match=re.escape(fragment)):
            resources.check_overrides(given, 24 * 1024)
    resources.check_overrides({"train_dynamic": {"mem_mb": 100000}}, None)  # a cluster's nodes


def test_all_or_nothing_puts_files_and_folders_back_when_the_block_raises(tmp_path):
    """files.all_or_nothing: a folder emptied, a file rewritten and a new file made inside a
    block that raises are as they were after it (the new one gone); without an exception the
    changes stay."""
    from rnnbench.pipeline.files import all_or_nothing

    folder, kept, new = tmp_path / "figures", tmp_path / "README.md", tmp_path / "new.md"
    folder.mkdir()
    (folder / "chart.svg").write_text("<svg/>")
    kept.write_text("before")
    with pytest.raises(RuntimeError):
        with all_or_nothing([folder, kept, new]):
            (folder / "chart.svg").unlink()
            kept.write_text("half")
            new.write_text("x")
            raise RuntimeError("failed half way")
    assert (folder / "chart.svg").read_text() == "<svg/>" and kept.read_text() == "before"
    assert not new.exists()
    with all_or_nothing([folder, kept]):
        kept.write_text("after")
    assert kept.read_text() == "after"
