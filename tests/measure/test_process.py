"""The speed check and the placement a run records (rnnbench.measure.process)."""

import os
import shutil
import subprocess
import sys

import pytest

from rnnbench.measure import process


def test_the_speed_check_gives_rates_of_this_machine():
    speed = process.speed_check()
    assert 0.5 < speed["python_ns"] < 5000  # a Python loop iteration: ns, not µs or ps
    assert 0.01 < speed["matmul_gflop_s"] < 1e5


def _fake_proc(tmp_path, personality, randomize, tasks):
    proc = tmp_path / "proc" / "self"
    for tid, (cpu, moves) in tasks.items():
        task = proc / "task" / str(tid)
        task.mkdir(parents=True)
        # pid (comm with a space and a paren) state, then fields 4.. ; field 39 is the CPU
        fields = ["S"] + ["0"] * 35 + [str(cpu)] + ["0"] * 10
        (task / "stat").write_text(f"{tid} (py thread) x) " + " ".join(fields) + "\n")
        if moves is not None:
            (task / "sched").write_text(f"python ({tid}, #threads: 2)\n---\n"
                                        f"se.nr_migrations    :    {moves}\n")
    (proc / "personality").write_text(personality + "\n")
    kernel = tmp_path / "proc" / "sys" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "randomize_va_space").write_text(randomize + "\n")
    return proc


def test_placement_reads_cpus_and_migrations_and_aslr_the_personality(tmp_path):
    proc = _fake_proc(tmp_path, "00040000", "2", {10: (1, 4), 11: (0, 3), 12: (1, 0)})
    place = process.placement(proc)
    assert place["cpus"] == [0, 1]
    assert place["migrations"] == 7
    assert process.aslr(proc) is False


def test_placement_records_the_timing_variables_set(tmp_path, monkeypatch):
    proc = _fake_proc(tmp_path, "00040000", "2", {10: (1, 4)})
    for name in list(os.environ):
        if name in process.TIMING_VARIABLES or name.startswith(process.TIMING_PREFIXES):
            monkeypatch.delenv(name)
    assert process.placement(proc)["timing_env"] is None
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")  # changes no timing: not recorded
    # glibc's allocator and Python's hashing (they were pooled unseen)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "1")
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "SSE41")  # by prefix: oneDNN's kernels
    assert process.placement(proc)["timing_env"] == {
        "TF_ENABLE_ONEDNN_OPTS": "0", "OMP_NUM_THREADS": "2", "MALLOC_ARENA_MAX": "1",
        "PYTHONHASHSEED": "1", "ONEDNN_MAX_CPU_ISA": "SSE41"}


def test_placement_says_none_where_the_kernel_keeps_no_migrations(tmp_path):
    proc = _fake_proc(tmp_path, "00000000", "2", {10: (3, None)})
    place = process.placement(proc)
    assert place["cpus"] == [3] and place["migrations"] is None and process.aslr(proc) is True
    proc = _fake_proc(tmp_path / "off", "00000000", "0", {10: (3, 1)})
    assert process.aslr(proc) is False


@pytest.mark.skipif(not (shutil.which("setarch") and shutil.which("taskset")),
                    reason="needs util-linux's setarch and taskset")
def test_a_pinned_process_without_randomisation_is_recorded_as_such():
    code = ("from rnnbench.measure.process import aslr, placement; "
            "print(placement()['cpus'], aslr())")
    out = subprocess.run(["setarch", "-R", "taskset", "-c", "0", sys.executable, "-c", code],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().split(maxsplit=1) == ["[0]", "False"]
