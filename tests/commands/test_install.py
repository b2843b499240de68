"""install.sh and its locks: one hash-pinned set per supported Python, the same versions for
each, the tests' and linters' packages apart from the workflow's (and out of the images)."""

import os
import subprocess

import pytest

from conftest import REPO
from test_container import pins

ENVS = REPO / "envs"
VERSIONS = ENVS.joinpath("python-versions").read_text().split()
DEV_ONLY = {"pytest", "snakefmt", "black"}


def test_every_supported_python_has_hash_pinned_locks_at_the_same_versions():
    assert VERSIONS == ["3.11", "3.12", "3.13"]  # Debian 12, Ubuntu 24.04, Debian 13
    workflow = pins(ENVS / "requirements.txt")
    dev = pins(ENVS / "requirements-dev.txt")
    assert DEV_ONLY <= set(dev) and not DEV_ONLY & set(workflow)
    for version in VERSIONS:
        runtime, dev_lock, nodeps = (ENVS / "locks" / f"py{version}{suffix}.txt"
                                     for suffix in ("", "-dev", "-nodeps"))
        locked = pins(runtime)
        assert {name: locked.get(name) for name in workflow} == workflow, version
        assert not DEV_ONLY & set(locked), version
        assert {name: pins(dev_lock).get(name) for name in dev} == dev, version
        assert pins(nodeps) == pins(ENVS / "requirements-nodeps.txt"), version
        cuda = pins(ENVS / "locks" / f"py{version}-cuda.txt")
        # FLAVOR=cuda: TensorFlow's CUDA build at the CPU build's version, its CUDA and cuDNN
        # wheels, and every other package as in the CPU lock
        assert "tensorflow-cpu" not in cuda and cuda["tensorflow"] == workflow["tensorflow-cpu"]
        assert {"nvidia-cudnn-cu12", "nvidia-cublas-cu12"} <= set(cuda), version
        rest = {name: v for name, v in locked.items() if name != "tensorflow-cpu"}
        assert {name: cuda.get(name) for name in rest} == rest, version
        assert not DEV_ONLY & set(cuda), version  # the images hold the workflow, not linters
        for lock in (runtime, dev_lock, nodeps, ENVS / "locks" / f"py{version}-cuda.txt"):
            lines = lock.read_text().splitlines()  # --require-hashes: every pin has a hash
            for line, following in zip(lines, lines[1:] + [""]):
                if "==" in line and not line.startswith("#"):
                    assert following.strip().startswith("--hash=sha256:"), (lock.name, line)


def test_install_refuses_an_unknown_flavor(tmp_path):
    proc = subprocess.run([REPO / "install.sh"], capture_output=True, text=True,
                          env={**os.environ, "FLAVOR": "gpu", "VENV": str(tmp_path / "v")})
    assert proc.returncode == 1
    assert "FLAVOR must be cpu (the default) or cuda, not 'gpu'" in proc.stderr
    assert not (tmp_path / "v").exists()


def test_install_refuses_a_python_it_has_no_locks_for(tmp_path):
    fake = tmp_path / "python3.10"
    fake.write_text("#!/bin/sh\necho 3.10\n")
    fake.chmod(0o755)
    proc = subprocess.run([REPO / "install.sh"], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": str(fake), "VENV": str(tmp_path / "v")})
    assert proc.returncode == 1
    assert "is Python 3.10; envs/locks/ has locks for Python 3.11, 3.12, 3.13" in proc.stderr
    assert not (tmp_path / "v").exists()


def test_the_venv_has_the_rnnbench_command():
    # ./install.sh installs the project into the venv: its console script runs every command
    import sys
    from pathlib import Path

    command = Path(sys.executable).parent / "rnnbench"
    proc = subprocess.run([command, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    from rnnbench import cli

    commands = {path.stem for path in (REPO / "workflow/scripts/rnnbench/commands").glob("*.py")}
    assert set(cli.COMMANDS) == commands - {"__init__"}  # one module per command, each listed
    for name in cli.COMMANDS:
        assert f"    {name}" in proc.stdout, name
    proc = subprocess.run([command, "check", str(REPO / "config.yaml")], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0 and "cells" in proc.stdout, proc.stderr


def test_install_puts_the_project_in_a_venv_with_its_locks_once(tmp_path):
    # a venv already holding this Python's locks gets the project alone (offline, editable),
    # and only again when pyproject.toml changes
    import hashlib
    import sys

    version = "%d.%d" % sys.version_info[:2]
    venv = tmp_path / "v"
    (venv / "bin").mkdir(parents=True)
    locks = b"".join((ENVS / "locks" / f"py{version}{suffix}.txt").read_bytes()
                     for suffix in ("", "-dev", "-nodeps"))
    (venv / ".installed").write_text(hashlib.sha256(locks).hexdigest()[:16] + "\n")
    pip = venv / "bin" / "pip"
    pip.write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path / 'pip.log'}\n")
    pip.chmod(0o755)
    env = {**os.environ, "PYTHON": sys.executable, "VENV": str(venv)}
    for _ in range(2):
        proc = subprocess.run([REPO / "install.sh"], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
    calls = (tmp_path / "pip.log").read_text().splitlines()
    assert len(calls) == 1 and "--no-deps --no-build-isolation --no-index -e ." in calls[0]
    project = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    assert (venv / ".installed-project").read_text().strip() == project
