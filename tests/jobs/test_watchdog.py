"""A measuring job's bounds: Ctrl-C ends it at once, however long the call it is in
(interrupt.end_at_once_on_ctrl_c), and its watchdog stops it past its memory or time limit,
naming which in its log (rnnbench.jobs.watchdog, rnnbench.jobs.jobstart); failures.error_line carries
that line to the terminal."""

import os
import pytest
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO
from rnnbench.jobs import exclusive, watchdog
from rnnbench.pipeline import failures

SCRIPTS = REPO / "workflow" / "scripts"

# A call that stays in C for minutes and never lets Python handle a signal (as TensorFlow's
# Grappler, Keras tracing or an XLA compilation do): KeyboardInterrupt waits for it to return.
LONG_C_CALL = """
import sys
from rnnbench.jobs import interrupt
if sys.argv[1] == "at-once":
    interrupt.end_at_once_on_ctrl_c()
print("ready", flush=True)
sum(range(10**12))
"""


def _child(code, *args, lock=None):
    env = {"PYTHONPATH": str(SCRIPTS), "PATH": "/usr/bin:/bin"}
    if lock:
        env[exclusive.LOCK_VARIABLE] = str(lock)
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _seconds_to_end(proc, timeout):
    began = time.monotonic()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - began


@pytest.mark.slow
def test_ctrl_c_ends_a_job_inside_a_long_call_at_once():
    control, job = _child(LONG_C_CALL, "python-default"), _child(LONG_C_CALL, "at-once")
    for proc in (control, job):
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)  # inside the long call
        proc.send_signal(signal.SIGINT)
    assert _seconds_to_end(job, 2) is not None and job.returncode == -signal.SIGINT
    # Python's own handling would have waited for the call to return: the premise holds
    assert _seconds_to_end(control, 0.5) is None
    control.kill()
    control.wait()


# A job at its end: the result written, then a second of teardown (TensorFlow's, at exit).
FINISHED = """
import sys, time
from pathlib import Path
from rnnbench.jobs import interrupt
interrupt.end_at_once_on_ctrl_c()
if sys.argv[1] == "whole":
    interrupt.write_result_whole(sys.argv[2], "{}")
else:
    Path(sys.argv[2]).write_text("{}")
print("written", flush=True)
time.sleep(1)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_group_after_the_result_is_written_keeps_it(tmp_path, signum):
    """As ``timeout`` or Ctrl-C signal a run's process group: through the rules' shell
    (``exec``, TRAIN_COMMAND), a job whose result is written exits 0, so Snakemake keeps the
    result; one that wrote it plainly dies of the signal, and Snakemake would remove it."""
    ends = {}
    for how in ("whole", "plain"):
        command = (f"set -euo pipefail; exec {sys.executable} -c '{FINISHED}' {how} "
                   f"{tmp_path / how}.json")
        proc = subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE, text=True,
                                env={"PYTHONPATH": str(SCRIPTS), "PATH": "/usr/bin:/bin"},
                                start_new_session=True)
        assert proc.stdout.readline().strip() == "written"
        os.killpg(proc.pid, signum)
        ends[how] = proc.wait(timeout=10)
    assert ends == {"whole": 0, "plain": -signum}
    assert (tmp_path / "whole.json").read_text() == "{}"


def test_over_bound_names_the_bound_and_the_fix():
    assert watchdog.over_bound(100, 5, 200, 60) is None
    memory = watchdog.over_bound(250.4, 5, 200, 60)
    assert memory.startswith("out of memory: the job's resident memory reached 250 MiB, over "
                             "its limit of 200 MiB (resource mem_mb), after 5 s")
    assert "--set-resources train_static:mem_mb=N" in memory
    time_line = watchdog.over_bound(100, 61, 200, 60)
    assert time_line.startswith("over its time limit: the job ran 61 s, past its limit of 60 s")
    assert failures.error_line(["INFO building the graph", memory]) == memory
    assert failures.error_line(["INFO building", time_line]) == time_line


GROW = """
import sys, time
from pathlib import Path
from rnnbench.jobs import jobstart
# its warnings (another run measuring beside it, on a shared machine) to stderr: stdout is read
taken = jobstart.start_measuring_job(lambda line: print(line, file=sys.stderr), sys.argv[1],
                                     float(sys.argv[2]), float(sys.argv[3]))
print(taken["mem_limit_mb"], taken["time_limit_s"], flush=True)
chunks = []
for _ in range(int(sys.argv[4])):  # 20 MiB a step, 0.05 s apart
    chunks.append(bytearray(20 * 2**20))
    time.sleep(0.05)
Path(sys.argv[1]).open("a").write("finished\\n")
"""


def test_the_watchdog_stops_a_job_past_its_memory_limit(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("INFO first step (graph optimisation) ...\n")
    job = _child(GROW, log, 150, 10, 40, lock=tmp_path / "lock")  # would grow to ~800 MiB
    assert job.stdout.readline().split() == ["150.0", "600.0"]
    assert _seconds_to_end(job, 30) is not None and job.returncode == -signal.SIGKILL
    lines = log.read_text().splitlines()
    assert "finished" not in lines and lines[-1].startswith("out of memory: the job's resident")
    reached = float(lines[-1].split("reached ")[1].split(" MiB")[0])
    assert 150 < reached < 150 + 80  # caught within a few steps of its growth
    assert failures.error_line(lines) == lines[-1]


@pytest.mark.slow
def test_the_watchdog_stops_a_job_past_its_time_limit_and_ends_with_a_job_that_finishes(
        tmp_path):
    log = tmp_path / "job.log"
    slow = _child(GROW, log, 4000, 1 / 60, 200, lock=tmp_path / "lock")  # 1 s limit, ~10 s run
    assert _seconds_to_end(slow, 20) < 5 and slow.returncode == -signal.SIGKILL
    assert log.read_text().splitlines()[-1].startswith(
        "over its time limit: the job ran 1 s, past its limit of 1 s")
    quick = _child(GROW + "print(__import__('os').getpid(), flush=True)\n", log, 4000, 10, 1,
                   lock=tmp_path / "lock")
    out, _ = quick.communicate(timeout=20)
    assert quick.returncode == 0 and log.read_text().splitlines()[-1] == "finished"
    # its watchdog ends too (within a poll): no process is left watching the job's pid
    deadline = time.time() + 3
    while time.time() < deadline and _watchdogs_of(int(out.split()[-1])):
        time.sleep(0.1)
    assert not _watchdogs_of(int(out.split()[-1]))


def _watchdogs_of(pid):
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.endswith(b"watchdog.py") for arg in argv) and str(pid).encode() in argv:
            found.append(cmdline.parent.name)
    return found


UNBOUNDED = """
import os, signal, sys, time
from rnnbench.jobs import jobstart
jobstart.start_measuring_job(print, sys.argv[1], 4000, 10, "peak")
time.sleep(0.5)
os.kill(jobstart._watchdog[0].pid, signal.SIGKILL)  # someone kills the watchdog
time.sleep(0.5)
jobstart.check_still_bounded()
print("written")
"""


def test_a_job_whose_watchdog_was_killed_writes_no_result(tmp_path):
    job = _child(UNBOUNDED, tmp_path / "job.log", lock=tmp_path / "lock")
    out, err = job.communicate(timeout=30)
    assert job.returncode == 1 and "written" not in out
    assert "ended before the job did (killed?): the job ran without its memory and time " \
           "bounds, so its result is not written" in err
