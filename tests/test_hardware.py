"""device: gpu on a machine without one is refused before any job, dry runs included, for the
executor the real run would use (rnnbench.hardware)."""

import os
import stat

import pytest
import yaml

from conftest import REPO, TINY, snakemake
from rnnbench import hardware


def test_gpus_are_read_from_the_driver_or_nvidia_smi(tmp_path):
    proc = tmp_path / "gpus"
    (proc / "0000:3b:00.0").mkdir(parents=True)
    assert hardware.gpu_names(proc) == ["0000:3b:00.0"]
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\necho 'MIG 1g'\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    assert hardware.gpu_names(tmp_path / "none", {"PATH": str(smi.parent)}) == [
        "GPU 0: NVIDIA H200 (UUID: GPU-1)"]
    assert hardware.gpu_names(tmp_path / "none", {"PATH": str(tmp_path / "empty")}) == []


def test_the_intended_executor_comes_from_the_command_line_or_the_profile(tmp_path):
    assert hardware.intended_executor(["snakemake", "-n"], {}) == "local"
    assert hardware.intended_executor(["snakemake", "-n", "--executor", "slurm"], {}) == "slurm"
    assert hardware.intended_executor(["snakemake", "-e=x", "-e", "slurm"], {}) == "slurm"
    profile = str(REPO / "profiles" / "slurm-gpu")
    assert hardware.intended_executor(["snakemake", "--profile", profile, "-n"], {}) == "slurm"
    assert hardware.intended_executor(["snakemake", f"--profile={profile}"], {}) == "slurm"
    assert hardware.intended_executor(["snakemake"], {"SNAKEMAKE_PROFILE": profile}) == "slurm"
    named = tmp_path / ".config" / "snakemake" / "mine"
    named.mkdir(parents=True)
    (named / "config.yaml").write_text("cores: 2\n")
    assert hardware.intended_executor(["snakemake", "--profile", "mine"],
                                      {"HOME": str(tmp_path)}) == "local"


def test_a_gpu_config_is_refused_only_for_a_local_run_without_a_gpu():
    with pytest.raises(ValueError, match=r"device: 'gpu', but this machine shows no NVIDIA GPU "
                                         r".*check with nvidia-smi -L"):
        hardware.check_device("gpu", True, [])
    hardware.check_device("gpu", False, [])  # a cluster's nodes are not this machine
    hardware.check_device("gpu", True, ["GPU 0: NVIDIA H200"])
    hardware.check_device("cpu", True, [])


@pytest.mark.skipif(bool(hardware.gpu_names()), reason="this machine has an NVIDIA GPU")
def test_a_dry_run_with_device_gpu_stops_here_before_any_job(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({**TINY, "device": "gpu"}))
    proc = snakemake(tmp_path, "-n", "--cores", "1", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out
    assert "config: device: 'gpu', but this machine shows no NVIDIA GPU" in out
    assert not (tmp_path / "results").exists()
    # the GPU cluster profile's dry run plans its jobs for the cluster's nodes
    proc = snakemake(tmp_path, "-n", "--profile", str(REPO / "profiles" / "slurm-gpu"),
                     check=False, env={"RNNBENCH_SLURM_PARTITION": "cpu",
                                       "RNNBENCH_SLURM_ACCOUNT": "",
                                       "RNNBENCH_SLURM_GPU_PARTITION": "gpu"})
    assert "shows no NVIDIA GPU" not in proc.stdout + proc.stderr
