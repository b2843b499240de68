"""One measuring job at a time on a machine (rnnbench.jobs.exclusive), and aggregation's refusal of
runs that overlapped all the same (load.check_no_overlap)."""

import json
import subprocess
import sys
import time

import pandas as pd
import pytest

from conftest import REPO, make_result
from rnnbench.jobs import exclusive
from rnnbench.results import load
from test_results import write_results

HOLD = """
import json, sys, time
from rnnbench.jobs import exclusive
taken = exclusive.measure_alone(lambda line: print(line, file=sys.stderr, flush=True))
print(json.dumps(taken), flush=True)
time.sleep(float(sys.argv[1]))
print(json.dumps({"end_s": time.time()}), flush=True)
"""


def hold(lock, seconds):
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(seconds)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={"PYTHONPATH": str(REPO / "workflow" / "scripts"), "PATH": "/usr/bin:/bin",
             exclusive.LOCK_VARIABLE: str(lock)})


@pytest.mark.slow
def test_a_second_measuring_job_waits_for_the_first_to_end(tmp_path):
    lock = tmp_path / "measuring.lock"
    first = hold(lock, 1.5)
    taken = json.loads(first.stdout.readline())
    second = hold(lock, 0)
    out, err = second.communicate(timeout=60)
    first_end = json.loads(first.communicate(timeout=60)[0].splitlines()[-1])["end_s"]
    waited = json.loads(out.splitlines()[0])
    assert taken["lock"] == str(lock) and taken["waited_s"] < 1
    assert waited["start_s"] >= first_end and waited["waited_s"] > 0.5
    assert f"another measuring job holds {lock}: waiting for it to end" in err
    # a lock on another file does not wait
    other = hold(tmp_path / "other.lock", 0)
    assert json.loads(other.communicate(timeout=60)[0].splitlines()[0])["waited_s"] < 1


def test_a_killed_holder_frees_the_lock(tmp_path):
    lock = tmp_path / "measuring.lock"
    first = hold(lock, 60)
    first.stdout.readline()
    first.kill()
    first.wait()
    out, _ = hold(lock, 0).communicate(timeout=60)
    assert json.loads(out.splitlines()[0])["waited_s"] < 1


def spans(tmp_path, *timing, host="vm"):
    records = []
    for repeat, (impl, start, end) in enumerate(timing, start=1):
        record = make_result(impl, "c1", repeat)
        record["exclusive"] = {"lock": "/tmp/x", "waited_s": 0.0, "start_s": start, "end_s": end}
        record["metadata"]["hostname"] = host
        records.append(record)
    return load.load_results(write_results(tmp_path, records))


def test_runs_that_overlapped_on_one_host_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    apart = spans(tmp_path / "a", ("static", 0, 10), ("dynamic", 10, 20), ("static", 25, 30))
    load.check_no_overlap(apart)
    assert list(apart["lock_waited_s"]) == [0.0] * 3
    (tmp_path / "b").mkdir()
    overlapping = spans(tmp_path / "b", ("static", 0, 10), ("dynamic", 30, 40),
                        ("static", 9, 12))
    with pytest.raises(ValueError, match=r"r2\.json and \S+r0\.json were measured at "
                                         r"the same time on vm \(1 run\(s\) overlap another\)"):
        load.check_no_overlap(overlapping)
    (tmp_path / "d").mkdir()  # two runs of one span (a result's span copied into another)
    with pytest.raises(ValueError, match=r"were measured at the same time on vm"):
        load.check_no_overlap(spans(tmp_path / "d", ("static", 5, 10), ("dynamic", 5, 10)))
    # on two hosts (cluster nodes) the same times are no overlap; a shared run is one run
    (tmp_path / "c1").mkdir(), (tmp_path / "c2").mkdir()
    nodes = pd.concat([spans(tmp_path / "c1", ("static", 0, 10), host="node1"),
                       spans(tmp_path / "c2", ("static", 0, 10), host="node2")])
    load.check_no_overlap(nodes)
    load.check_no_overlap(pd.concat([apart, apart.assign(cell_id="c2")]))


def test_results_without_spans_are_not_compared(tmp_path):
    runs = load.load_results(write_results(tmp_path, [make_result("static", "c1", 1),
                                                      make_result("dynamic", "c1", 1)]))
    assert runs["job_start_unix_s"].isna().all()
    load.check_no_overlap(runs)
    load.check_no_overlap(runs.drop(columns=["job_start_unix_s", "job_end_unix_s"]))
