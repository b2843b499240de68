"""device: gpu on a machine without one is refused before any job, dry runs included, for the
executor the real run would use (rnnbench.pipeline.hardware)."""

import os
import stat

import pytest
import yaml

from conftest import REPO, TINY, snakemake
from rnnbench.pipeline import hardware


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


@pytest.mark.slow
def test_the_invocation_is_read_as_snakemake_reads_it(tmp_path, monkeypatch):
    """The executor a command line asks for, with Snakemake's own parser: abbreviations,
    profiles given as a folder, by $SNAKEMAKE_PROFILE or relative to where Snakemake started
    ($PWD); and whether it runs any job (a breaker found -e slurm, --prof and --summary
    misread by a hand-made reader)."""
    monkeypatch.chdir(tmp_path)  # as Snakemake's --directory: not where it started
    cases = [
        (["-n"], {}, ("local", False)),
        (["--cores", "1"], {}, ("local", True)),
        (["-n", "--executor", "slurm"], {}, ("slurm", False)),
        (["-eslurm"], {}, ("slurm", True)),
        (["--exec", "slurm", "-n"], {}, ("slurm", False)),
        (["--profile", "profiles/slurm-gpu", "-n"], {}, ("slurm", False)),
        (["--prof", "profiles/slurm-gpu"], {}, ("slurm", True)),
        (["-n"], {"SNAKEMAKE_PROFILE": "profiles/slurm-gpu"}, ("slurm", False)),
        (["--exec", "local"], {"SNAKEMAKE_PROFILE": "profiles/slurm"}, ("local", True)),
        (["--summary"], {}, ("local", False)),
        (["--dag"], {}, ("local", False)),
        (["--report", "r.html"], {}, ("local", False)),
        (["--lint"], {}, ("local", False)),
    ]
    monkeypatch.setenv("PWD", str(REPO))
    for argv, more, expected in cases:
        monkeypatch.delenv("SNAKEMAKE_PROFILE", raising=False)
        for name, value in more.items():
            monkeypatch.setenv(name, value)
        got = hardware.invocation(["snakemake", "-s", str(REPO / "Snakefile"), *argv])
        assert (got.executor, got.executes) == expected, (argv, more)
        assert bool(got.report) == (argv[0] == "--report"), argv
    # --report in its = form too (the workflow checks a report's grid: check_report_grid)
    assert hardware.invocation(["snakemake", "--report=r.html"]).report == "r.html"
    # --set-resources as Snakemake reads it, for the watchdog's bounds (check_overrides)
    got = hardware.invocation(["snakemake", "--set-resources", "train_static:mem_mb=0",
                               "peak:runtime=5"])
    assert got.set_resources == {"train_static": {"mem_mb": 0}, "peak": {"runtime": 5}}
    # which options run other jobs than the whole workflow's missing ones, as a user writes them
    assert hardware.invocation(["snakemake", "--cores", "1"])[-3:] == ((), (), True)
    assert hardware.invocation(["snakemake", "--nolock"]).locks is False
    got = hardware.invocation(["snakemake", "--until", "aggregate", "--omit-from", "plot",
                               "-R", "train_static", "--", "results/summary.csv"])
    assert (got.narrowed, got.forced) == (("a named target", "--until", "--omit-from"),
                                          ("--forcerun",))
    assert hardware.invocation(["snakemake", "-F"]).forced == ("--forceall",)
    assert os.getcwd() == str(tmp_path)


def test_a_gpu_config_is_refused_only_for_a_local_run_without_a_gpu():
    with pytest.raises(ValueError, match=r"device: 'gpu', but this machine shows no NVIDIA GPU "
                                         r".*check with nvidia-smi -L"):
        hardware.check_device("gpu", True, [])
    hardware.check_device("gpu", False, [])  # a cluster's nodes are not this machine
    hardware.check_device("gpu", True, ["GPU 0: NVIDIA H200"])
    hardware.check_device("cpu", True, [])


@pytest.mark.skipif(bool(hardware.gpu_names()), reason="this machine has an NVIDIA GPU")
@pytest.mark.slow
def test_a_dry_run_with_device_gpu_stops_here_before_any_job(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({**TINY, "device": "gpu"}))
    proc = snakemake(tmp_path, "-n", "--cores", "1", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out and 'File "' not in out
    assert "config: device: 'gpu', but this machine shows no NVIDIA GPU" in out
    assert not (tmp_path / "results").exists()
    # the GPU cluster profile's dry run plans its jobs for the cluster's nodes
    proc = snakemake(tmp_path, "-n", "--profile", str(REPO / "profiles" / "slurm-gpu"),
                     check=False, env={"RNNBENCH_SLURM_PARTITION": "cpu",
                                       "RNNBENCH_SLURM_ACCOUNT": "",
                                       "RNNBENCH_SLURM_GPU_PARTITION": "gpu"})
    assert "shows no NVIDIA GPU" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("argv, refused", [
    (["--cores", "0"], "--cores 0: Snakemake would select no job and wait forever"),
    (["-n", "-c0"], "--cores 0: "),
    (["--cores", "-1"], "--cores -1: "),
    (["--jobs", "0"], "--jobs 0: "),
    (["--cores", "1"], None),
    (["--cores", "all"], None),
    (["-n"], None),
])
def test_no_cores_are_refused_before_snakemake_waits_for_them(argv, refused):
    invocation = hardware.invocation(["snakemake", *argv])
    if refused is None:
        hardware.check_cores(invocation)
        return
    with pytest.raises(ValueError, match=refused):
        hardware.check_cores(invocation)


def test_a_key_given_twice_to_config_is_refused_naming_both_values():
    """Snakemake merges ``--config steps=3 steps=4`` without a word (the last wins); a key
    given twice in a config file is refused, and so is this."""
    twice = hardware.invocation(["snakemake", "--cores", "1", "--config", "steps=3",
                                 "repeats=2", "steps=4"])
    assert twice.config == ("steps=3", "repeats=2", "steps=4")
    with pytest.raises(ValueError, match=r"--config: steps given twice \(steps=3 and steps=4\)"):
        hardware.check_config_keys(twice)
    hardware.check_config_keys(hardware.invocation(["snakemake", "--cores", "1", "--config",
                                                    "steps=3", "repeats=2"]))


def test_an_override_of_a_rule_the_workflow_lacks_is_refused(tmp_path):
    """Snakemake ignores ``--set-resources nosuchrule:...`` and ``--set-threads nosuchrule=N``
    without a word; the workflow names the rule and its own rules, before any job."""
    invocation = hardware.invocation(["snakemake", "--set-resources", "train_statc:mem_mb=100",
                                      "--set-threads", "peak=2", "plott=1"])
    assert set(invocation.set_threads) == {"peak", "plott"}
    with pytest.raises(ValueError, match=r"--set-resources train_statc:\.\.\.: this workflow "
                                         r"has no rule 'train_statc'; its rules: peak, plot$"):
        hardware.check_rule_names(invocation, {"peak", "plot"})
    with pytest.raises(ValueError, match=r"--set-threads plott=\.\.\.: .* no rule 'plott'"):
        hardware.check_rule_names(invocation._replace(set_resources={}), {"peak", "plot"})
    hardware.check_rule_names(invocation._replace(set_resources={}, set_threads={}), {"peak"})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--set-resources", "train_statc:mem_mb=9",
                     check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "--set-resources train_statc:...: this workflow has no rule 'train_statc'; its " \
           "rules: aggregate, all, " in proc.stderr


def test_a_report_into_a_missing_folder_is_refused(tmp_path, monkeypatch):
    """Snakemake builds the report, then stops with a FileNotFoundError traceback."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "there").mkdir()
    for fine in ("r.html", "there/r.zip", ""):
        hardware.check_report_folder(hardware.Invocation("local", False, fine))
    with pytest.raises(ValueError, match=r"^--report gone/r\.html: there is no folder gone in "
                                         rf"{tmp_path}: make it first \(mkdir -p gone\)"):
        hardware.check_report_folder(hardware.Invocation("local", False, "gone/r.html"))
    with pytest.raises(ValueError, match=r"make it first \(mkdir -p 'my reports'\), or name"):
        hardware.check_report_folder(hardware.Invocation("local", False, "my reports/r.html"))


def test_threads_below_one_are_refused():
    """The job would train, then fail on its result's schema (job_threads >= 1)."""
    hardware.check_threads(hardware.invocation(["snakemake", "--set-threads", "peak=2",
                                                "plot=2*2"]))
    with pytest.raises(ValueError, match=r"^--set-threads train_static=0: a job needs 1 thread"):
        hardware.check_threads(hardware.invocation(["snakemake", "--set-threads",
                                                    "train_static=0"]))


def test_threads_beyond_the_machines_cpus_are_said():
    """A cell of 64 intra-op threads ran on a 2-CPU machine without a word (Snakemake scaled
    its job down to --cores; TensorFlow still started 64 threads)."""
    cells = {"c1": {"intra_op_parallelism_threads": 1},
             "c64": {"intra_op_parallelism_threads": 64}}
    assert hardware.oversubscribed({"c1": cells["c1"]}, cpus=2) is None
    assert hardware.oversubscribed(cells, cpus=2) == (
        "1 cell(s) ask for more TensorFlow threads than the 2 CPU(s) a job has here "
        "(intra_op_parallelism_threads or inter_op_parallelism_threads; e.g. 64 in c64): their "
        "steps time threads that share CPUs, not what those threads would do on a machine that "
        "has them")
