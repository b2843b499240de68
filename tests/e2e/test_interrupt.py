"""Resuming after an interruption (rnnbench.jobs.interrupt): stale locks of a killed Snakemake are
removed, live ones kept; a job dies with its Snakemake; and, end to end, a Snakemake killed
mid-job leaves no job running and the same command runs again."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from conftest import REPO, TINY, snakemake
from rnnbench.jobs import exclusive, interrupt

SCRIPTS = REPO / "workflow" / "scripts"


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _locked(folder, owner_pid, host=None, lock_after=False):
    """A .snakemake folder with two lock files and an owner record of ``owner_pid``."""
    (folder / "locks").mkdir(parents=True)
    if not lock_after:
        for kind in ("input", "output"):
            (folder / "locks" / f"0.{kind}.lock").write_text("results/x.json\n")
    record = interrupt.write_owner(folder, owner_pid)
    if host:
        record.write_text(json.dumps({**json.loads(record.read_text()), "host": host}))
    if lock_after:
        os.utime(record, (time.time() - 10, time.time() - 10))
        (folder / "locks" / "0.input.lock").write_text("results/x.json\n")
    return folder


def test_the_locks_of_a_killed_snakemake_are_removed(tmp_path):
    folder = _locked(tmp_path / ".snakemake", _dead_pid())
    lines = []
    removed = interrupt.remove_stale_locks(folder, log=lines.append)
    assert sorted(p.name for p in removed) == ["0.input.lock", "0.output.lock"]
    assert not list((folder / "locks").iterdir()) and not (folder / interrupt.OWNER).exists()
    assert "removed the 2 lock file(s) left by Snakemake pid" in lines[0]


def test_locks_that_may_belong_to_a_live_run_are_kept(tmp_path):
    cases = {
        "alive": _locked(tmp_path / "alive", os.getpid()),
        "other host": _locked(tmp_path / "host", _dead_pid(), host="another-node"),
        "lock newer than the record": _locked(tmp_path / "newer", _dead_pid(), lock_after=True),
    }
    for case, folder in cases.items():
        assert interrupt.remove_stale_locks(folder, log=print) == [], case
        assert list((folder / "locks").iterdir()), case
    # no record at all (locks of a Snakemake that never reached onstart): left to Snakemake
    (tmp_path / "bare" / "locks").mkdir(parents=True)
    (tmp_path / "bare" / "locks" / "0.input.lock").write_text("x\n")
    assert interrupt.stale_locks(tmp_path / "bare") == ([], None)


def test_a_pid_and_its_start_time_name_one_process():
    assert interrupt.start_time(os.getpid()) == interrupt.start_time(os.getpid()) > 0
    assert interrupt.start_time(_dead_pid()) is None
    assert interrupt.parent_pid(os.getpid()) == os.getppid()


def test_a_job_stops_when_its_snakemake_is_killed(tmp_path):
    """A process named snakemake starts a job that calls exit_with_snakemake; killing the
    former stops the latter within a poll interval, with exit status 3 and a line saying why."""
    job = tmp_path / "job.py"
    job.write_text(
        f"import sys, time; sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "from rnnbench.jobs import interrupt\n"
        "print(interrupt.exit_with_snakemake(poll_s=0.1), flush=True)\n"
        "time.sleep(60)\n")
    fake = tmp_path / "snakemake"  # the program's name is what is_snakemake looks at
    out = tmp_path / "job.out"
    fake.write_text(
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, {str(job)!r}], "
        f"stdout=open({str(out)!r}, 'w'), stderr=subprocess.STDOUT)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, str(fake)], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    deadline = time.time() + 30
    while str(parent.pid) not in (out.read_text() if out.exists() else ""):
        assert time.time() < deadline, "the job never found its snakemake"
        time.sleep(0.05)
    assert interrupt.start_time(child) is not None  # the job runs while snakemake does
    parent.kill()
    parent.wait()
    deadline = time.time() + 5
    while interrupt.start_time(child) is not None and time.time() < deadline:
        time.sleep(0.05)
    # gone (reaped by init) or a zombie (exited, waiting for init to reap it)
    state = Path(f"/proc/{child}/stat")
    assert not state.exists() or state.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    assert "has ended: this job stops without a result" in out.read_text()


def test_without_snakemake_nothing_is_watched():
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); "
         "from rnnbench.jobs import interrupt; print(interrupt.exit_with_snakemake())"],
        capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "None"


def killed_run(tmp_path):
    """End to end, in the background (a scenario: mostly waiting): SIGKILL to Snakemake while
    a training job runs, then the same command again; what the test checks, as a dict."""
    config = {**TINY, "max_len": [4], "api": ["compat_v1"], "repeats": 3,
              "min_measure_s": 120}  # a job long enough to be killed while it runs
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    plan = snakemake(tmp_path, "-n", "--cores", "1").stdout
    result = next(line.split()[-1] for line in plan.splitlines()
                  if line.strip().startswith("output:") and "static/repeat1.json" in line)
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
           str(tmp_path), "--cores", "1", result]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           exclusive.LOCK_VARIABLE: str(tmp_path / "measuring.lock")}
    run = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / result.replace("results/runs/", "results/logs/").replace(".json", ".log")
    deadline = time.time() + 120
    while "graph construction" not in (log.read_text() if log.exists() else ""):
        if time.time() > deadline or run.poll() is not None:
            run.kill()
            return {"started": False}
        time.sleep(0.2)
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.time() + 10  # the job notices within a second
    while "has ended" not in log.read_text() and time.time() < deadline:
        time.sleep(0.2)
    out = {"started": True, "log": log.read_text(), "result": (tmp_path / result).exists(),
           "locks": list((tmp_path / ".snakemake" / "locks").iterdir())}
    # the next run takes the same command; targeting the dataset (done) keeps it short
    dataset = next(line.split()[1].rstrip(",") for line in plan.splitlines()
                   if line.strip().startswith("output:") and ".npz," in line)
    out["rerun"] = snakemake(tmp_path, "--cores", "1", dataset).stderr
    out["owner"] = (tmp_path / ".snakemake" / interrupt.OWNER).exists()
    return out


SCENARIOS = {"test_after_snakemake_is_killed_the_same_command_runs_again": killed_run}


def should_run():
    return True


def test_after_snakemake_is_killed_the_same_command_runs_again(scenarios):
    """SIGKILL to Snakemake while a training job runs: the job stops (no result), and the
    next run removes the stale locks instead of asking for --unlock."""
    _, out = scenarios["test_after_snakemake_is_killed_the_same_command_runs_again"]
    assert out["started"], "the training job never started"
    assert "has ended: this job stops without a result" in out["log"]
    assert not out["result"]
    assert out["locks"]  # left by the killed run
    assert "removed the 2 lock file(s) left by Snakemake pid" in out["rerun"]
    assert not out["owner"]
