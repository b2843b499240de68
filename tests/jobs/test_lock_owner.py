"""Which run holds a folder's Snakemake locks (rnnbench.jobs.interrupt.live_owner)."""

import json
import os
import subprocess
import sys

from rnnbench.jobs import interrupt


def test_a_live_run_of_the_folder_is_known_and_a_gone_or_own_one_is_not(tmp_path):
    """A second run in a folder moved the first one's tables and rewrote its settings before
    Snakemake's own lock refused it."""
    folder = tmp_path / ".snakemake"
    folder.mkdir()
    assert interrupt.live_owner(folder) is None  # no record
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        interrupt.write_owner(folder, other.pid)
        owner = interrupt.live_owner(folder)
        assert owner["pid"] == other.pid and owner["since"] > 0
    finally:
        other.kill()
        other.wait()
    assert interrupt.live_owner(folder) is None  # its process is gone
    interrupt.write_owner(folder)  # this process: not another run
    assert interrupt.live_owner(folder) is None
    (folder / interrupt.OWNER).write_text(json.dumps({**interrupt.owner_record(os.getppid()),
                                                      "host": "elsewhere"}))
    assert interrupt.live_owner(folder) is None  # another host's pids are not ours to judge
    # a record whose start time could not be read names no live process
    (folder / interrupt.OWNER).write_text(json.dumps({**interrupt.owner_record(os.getppid()),
                                                      "pid": 2 ** 22 + 1, "start_time": None}))
    assert interrupt.live_owner(folder) is None
    (folder / interrupt.OWNER).write_text("[1, 2]")  # not a record of ours
    assert interrupt.live_owner(folder) is None
