"""Measuring jobs of this workflow that measure side by side under different locks
(rnnbench.jobs.overlap), who holds a lock (exclusive.lock_holder), and what results, FINDINGS
and the end of a run say of it."""

import json
import math
import subprocess
import sys

import jsonschema
import pytest

from conftest import REPO, make_result
from rnnbench.jobs import exclusive, interrupt, jobstart, overlap
from rnnbench.measure.schema import validate_result
from rnnbench.pipeline import housekeeping
from rnnbench.report.findings import _overlap_line
from rnnbench.report.sections import overlap_line
from rnnbench.results import load
from test_results import write_results

JOB = """
import json, sys, time
from rnnbench.jobs import exclusive, overlap
taken = exclusive.measure_alone(lambda line: print(line, file=sys.stderr, flush=True))
print(json.dumps(overlap.others_measuring()), flush=True)
sys.stdin.read()  # until the test closes it
"""
LOOK = ("import json; from rnnbench.jobs import overlap; "
        "print(json.dumps(overlap.others_measuring()))")


def env(lock):
    return {"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": "/usr/bin:/bin",
            exclusive.LOCK_VARIABLE: str(lock)}


def job(folder, name, lock):
    """A measuring job as Snakemake starts one: train.py as the training rules' shell command
    runs it (workflow/scripts/train.py), peak.py copied to .snakemake/scripts/ (a script:)."""
    script = (folder / "workflow" / "scripts" / "train.py" if name == "train"
              else folder / ".snakemake" / "scripts" / f"tmpx1y2.{name}.py")
    script.parent.mkdir(parents=True)
    script.write_text(JOB)
    return subprocess.Popen([sys.executable, str(script.relative_to(folder))], cwd=folder,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env(lock))


def mine(others, tmp_path):
    """The jobs of this test among those found (a real run may measure on the machine)."""
    return [o for o in others if (o["folder"] or "").startswith(str(tmp_path))]


def test_a_job_sees_another_runs_job_under_another_lock_but_not_one_waiting(tmp_path):
    for name in "abc":
        (tmp_path / name).mkdir()
    first = job(tmp_path / "a", "train", tmp_path / "one.lock")
    jobs = [first]
    try:
        assert mine(json.loads(first.stdout.readline()), tmp_path) == []  # alone
        second = job(tmp_path / "b", "peak", tmp_path / "two.lock")  # another lock
        jobs.append(second)
        seen = mine(json.loads(second.stdout.readline()), tmp_path)
        assert seen == [{"pid": first.pid, "job": "train", "folder": str(tmp_path / "a")}]
        waiting = job(tmp_path / "c", "train", tmp_path / "one.lock")  # waits for the first
        jobs.append(waiting)
        assert "waiting for it to end" in waiting.stderr.readline()
        looked = subprocess.run([sys.executable, "-c", LOOK], capture_output=True, text=True,
                                env=env(tmp_path / "one.lock"), check=True)
        assert sorted(o["pid"] for o in mine(json.loads(looked.stdout), tmp_path)) == sorted(
            [first.pid, second.pid])
        holder = exclusive.lock_holder({exclusive.LOCK_VARIABLE: str(tmp_path / "one.lock")})
        assert holder["pid"] == first.pid and holder["folder"] == str(tmp_path / "a")
        assert holder["lock"] == str(tmp_path / "one.lock")
        assert holder["start_time"] == interrupt.start_time(first.pid)
        assert 0 <= holder["run_since_s"] == holder["since_s"]
    finally:
        for process in jobs:
            process.kill()
            process.wait()
    assert exclusive.lock_holder({exclusive.LOCK_VARIABLE: str(tmp_path / "one.lock")}) is None


def test_the_lock_table_names_holders_not_waiters():
    table = ("1: FLOCK  ADVISORY  WRITE 101 fe:00:77 0 EOF\n"
             "1: -> FLOCK  ADVISORY  WRITE 102 fe:00:77 0 EOF\n"
             "2: POSIX  ADVISORY  WRITE 103 fe:00:78 0 EOF\n"
             "3: FLOCK  ADVISORY  READ 104 fe:00:79 0 EOF\n")
    assert overlap.flock_holders(table) == {101: {"fe:00:77"}}


def test_a_job_of_the_same_run_keeps_its_runs_start(monkeypatch, tmp_path):
    monkeypatch.setattr(interrupt, "outermost_snakemake", lambda pid=None: 42)
    monkeypatch.chdir(tmp_path)
    first = exclusive.holder_record(None, 100.0)
    assert first["run_since_s"] == first["since_s"] == 100.0
    assert exclusive.holder_record(first, 160.0)["run_since_s"] == 100.0
    other = {**first, "folder": "/elsewhere"}
    assert exclusive.holder_record(other, 160.0)["run_since_s"] == 160.0


def test_the_record_counts_others_and_older_results_stay_readable(tmp_path, monkeypatch):
    seen = [{"pid": 7, "job": "train", "folder": "/runs/b"}]
    monkeypatch.setattr(overlap, "others_measuring", lambda: seen)
    lines = []
    ended = jobstart.end_measuring_job({"lock": "/tmp/x", "waited_s": 0.0, "start_s": 1.0,
                                        "others_at_start": []}, lines.append)
    assert ended["others_at_end"] == seen and "pid 7 (train, in /runs/b)" in lines[0]
    records = []
    for repeat, exclusive_record in enumerate([ended, None], start=1):
        record = make_result("static", "c1", repeat)
        if exclusive_record:
            record["exclusive"] = exclusive_record
        validate_result(record)
        records.append(record)
    runs = load.load_results(write_results(tmp_path, records))
    assert list(runs["others_measuring"])[0] == 1 and math.isnan(runs["others_measuring"][1])
    assert list(runs["others_measuring_in"])[0] == "/runs/b"
    bad = {**ended, "others_at_end": [{"pid": 0, "job": "train", "folder": None}]}
    with pytest.raises(jsonschema.ValidationError, match=r"others_at_end\[0\]\.pid"):
        validate_result({**records[0], "exclusive": bad})


def test_findings_and_the_terminal_say_how_many_runs_overlapped(tmp_path):
    records = []
    for repeat, others in enumerate([[], [{"pid": 7, "job": "train", "folder": "/runs/b"}],
                                     []], start=1):
        record = make_result("static", "c1", repeat)
        record["exclusive"] = {"lock": "/tmp/x", "waited_s": 0.0, "start_s": 10.0 * repeat,
                               "end_s": 10.0 * repeat + 5, "others_at_start": others,
                               "others_at_end": []}
        records.append(record)
    runs = load.load_results(write_results(tmp_path, records))
    assert "1 of 3 runs (the other jobs' folders: /runs/b)" in overlap_line(runs)
    assert _overlap_line(runs)[0].startswith("- **Measured beside another run**: 1 of 3 runs")
    runs.to_csv(tmp_path / "measurements.csv", index=False)
    line = housekeeping.overlap_line(str(tmp_path / "measurements.csv"))
    assert line.startswith("overlap: 1 of 3 runs") and "(in /runs/b)" in line
    quiet = runs.assign(others_measuring=0, others_measuring_in=None)
    assert _overlap_line(quiet) == [] and "0 of 3 runs." in overlap_line(quiet)
    older = runs.drop(columns=["others_measuring", "others_measuring_in"])
    assert overlap_line(older) is None and _overlap_line(older) == []
    older.to_csv(tmp_path / "older.csv", index=False)
    assert housekeeping.overlap_line(str(tmp_path / "older.csv")) is None
