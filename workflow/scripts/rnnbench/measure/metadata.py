"""What can change a timing, recorded beside it (after pyperf's metadata)."""

from __future__ import annotations

import datetime
import os
import platform
import resource
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else platform.processor() or 'unknown'."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


SIMD_LEVELS = ("avx512f", "avx2", "avx", "sse4_2")
"""Vector instruction sets, widest first (the names of /proc/cpuinfo's flags)."""


def cpu_simd(cpuinfo: str | None = None) -> str | None:
    """Return the widest vector instruction set in a cpuinfo's first ``flags`` line.

    A VM's model name may hide its CPU, so the fingerprint (load.environment) carries this
    too, and runs of two such machines are never pooled. Two 2-core VMs both named "AMD EPYC"
    ran this project's matmuls on one thread at up to 102 and 12 GFLOP/s
    (docs/figures/heldout/VALIDATION.md). The second reports avx2 and no avx512f. The first's
    flags were not recorded, but 102 GFLOP/s at 2.6 GHz is 39 FLOP a cycle: more than AVX2's
    two 8-wide FMA units give (32).

    Args:
        cpuinfo: the text of /proc/cpuinfo; None reads the file.

    Returns:
        One of SIMD_LEVELS, or None where it cannot be read or lists none of them.
    """
    try:
        text = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return next((level for level in SIMD_LEVELS if level in flags), None)
    return None


def peak_rss_mb() -> float:
    """Return this process's peak resident set size so far, in MiB.

    Source: getrusage; ru_maxrss is in KiB on Linux.
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def git_commit(directory: str | Path) -> dict[str, Any]:
    """Return the HEAD commit of the repository holding ``directory``, and whether it is dirty.

    Args:
        directory: a folder inside the repository.

    Returns:
        {"commit": the hash, "dirty": True when tracked files changed}; both None when git or
        the repository is unavailable (e.g. inside a container without git).
    """
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True,
            check=True, timeout=10,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=directory,
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def gpu_driver() -> str | None:
    """The NVIDIA driver version nvidia-smi reports (first GPU), or None without nvidia-smi.

    Inside an Apptainer image, ``--nv`` binds the host's nvidia-smi and driver libraries in.
    """
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return out[0] if out else None


def tensorflow_info(tf: ModuleType, device: str) -> dict[str, Any]:
    """Describe TensorFlow: its version, build (CUDA/cuDNN), the GPUs it sees, the device used.

    Args:
        tf: the imported ``tensorflow`` module.
        device: the run's device, "cpu" or "gpu".

    Returns:
        tf_version, tf_git_version, tensorflow_path (where TensorFlow was imported from; in an
        image: /opt/rnnbench/...), is_cuda_build, cuda_version, cudnn_version, gpus_visible,
        gpu_driver (asked of nvidia-smi only when TensorFlow sees a GPU), device, and
        device_name (the GPU's name for "gpu", the CPU model for "cpu").
    """
    build = dict(tf.sysconfig.get_build_info())
    gpus = tf.config.list_physical_devices("GPU")
    gpu_names = []
    for gpu in gpus:
        details = tf.config.experimental.get_device_details(gpu)
        gpu_names.append(details.get("device_name", gpu.name))
    return {
        "tf_version": tf.__version__,
        "tf_git_version": tf.version.GIT_VERSION,
        "tensorflow_path": str(Path(tf.__file__).parent),
        "is_cuda_build": bool(build.get("is_cuda_build", False)),
        "cuda_version": build.get("cuda_version"),
        "cudnn_version": build.get("cudnn_version"),
        "gpus_visible": gpu_names,
        "gpu_driver": gpu_driver() if gpus else None,
        "device": device,
        "device_name": gpu_names[0] if device == "gpu" and gpu_names else cpu_model(),
    }


def jax_info(device: str) -> dict[str, Any]:
    """Describe JAX: its version, backend and devices, in tensorflow_info's keys.

    A JAX job never imports TensorFlow, so the TensorFlow keys are None.

    Args:
        device: the run's device, "cpu" or "gpu".

    Returns:
        tensorflow_info's keys, plus jax_version, jaxlib_version, jax_backend and xla_flags
        (the XLA_FLAGS the job ran with: its CPU threads). is_cuda_build says whether JAX's
        backend is a GPU.
    """
    import jax
    import jaxlib

    backend = jax.default_backend()
    gpus = [d.device_kind for d in jax.devices() if d.platform == "gpu"]
    return {
        "tf_version": None, "tf_git_version": None, "tensorflow_path": None,
        "jax_version": jax.__version__, "jaxlib_version": jaxlib.__version__,
        "jax_backend": backend, "xla_flags": os.environ.get("XLA_FLAGS"),
        "is_cuda_build": backend == "gpu", "cuda_version": None, "cudnn_version": None,
        "gpus_visible": gpus,
        "gpu_driver": gpu_driver() if gpus else None,
        "device": device,
        "device_name": gpus[0] if device == "gpu" and gpus else cpu_model(),
    }


SNAKEMAKE_RUN = "RNNBENCH_SNAKEMAKE_RUN"
"""The environment variable that names the Snakemake run a job belongs to (snakemake_run_id),
set by the workflow's main process (common.smk) and inherited by its jobs."""


def snakemake_run_id() -> str:
    """Name this Snakemake run: its start, UTC to the second, and its process id.

    Returns:
        ``2026-12-06T07:40:01Z-12345``.
    """
    start = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{start}-{os.getpid()}"


def collect(framework: dict[str, Any]) -> dict[str, Any]:
    """Collect what this process sees of one run.

    The workflow's git commit is not here: the job may run in an image without git or the
    repository (bench.run takes it from the workflow).

    Args:
        framework: what tensorflow_info or jax_info says.

    Returns:
        Software versions (python, numpy), machine (cpu_model, cpu_simd, cpu_count,
        cpu_affinity, hostname, platform), ``aslr`` (process.aslr), time (utc_time), job
        (SLURM ids, CUDA_VISIBLE_DEVICES), image (apptainer_container), and ``framework``'s
        keys.
    """
    import numpy as np

    from rnnbench.measure import process

    meta = {
        "python_version": platform.python_version(),
        "python_prefix": sys.prefix,
        "numpy_version": np.__version__,
        "cpu_model": cpu_model(),
        "cpu_simd": cpu_simd(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "aslr": process.aslr(),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "utc_time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_job_partition": os.environ.get("SLURM_JOB_PARTITION"),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "apptainer_container": os.environ.get("APPTAINER_CONTAINER")
        or os.environ.get("SINGULARITY_CONTAINER"),
    }
    meta.update(framework)
    return meta


def noise_probe() -> dict[str, Any]:
    """Take a snapshot of what can slow a run down from outside it, as pyperf's metadata does.

    Each value is None where it cannot be read (no /proc, a VM without cpufreq).

    Returns:
        The 1-, 5- and 15-minute load averages (``os.getloadavg``); the CPU time counters of
        /proc/stat's ``cpu`` line (stat_ticks) and of the CPUs this process may use
        (own_cpu_ticks), read once; the first CPU's frequency scaling governor and current
        frequency (MHz; sysfs cpufreq, else /proc/cpuinfo's ``cpu MHz``); the machine's
        speed (process.speed_check) and the process's placement (process.placement).
    """
    from rnnbench.measure import process  # numpy: only in a measuring job

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    try:
        stat = Path("/proc/stat").read_text().splitlines()
    except OSError:
        stat = []
    cpufreq = Path("/sys/devices/system/cpu/cpu0/cpufreq")
    governor = process.read_stripped(cpufreq / "scaling_governor")
    khz = process.read_stripped(cpufreq / "scaling_cur_freq")
    mhz = float(khz) / 1000 if khz and khz.isdigit() else _cpuinfo_mhz()
    return {"load_average": load, "ticks": stat_ticks(stat, {"cpu"}), "cpu_governor": governor,
            "cpu_mhz": mhz, "own_cpus": own_cpu_ticks(stat), "speed": process.speed_check(),
            "placement": process.placement()}


def stat_ticks(lines: list[str], names: set[str]) -> dict[str, int] | None:
    """Sum the CPU time counters (USER_HZ ticks) of /proc/stat's lines named ``names``.

    Args:
        lines: /proc/stat's lines.
        names: ``cpu`` for the machine; ``cpuN`` for a CPU.

    Returns:
        ``total``, ``busy`` (all but idle and iowait) and ``steal`` (time a hypervisor gave
        those CPUs to others); None where no such line.
    """
    total = busy = steal = 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in names:
            # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
            values = [int(x) for x in fields[1:9]]
            total += sum(values)
            busy += sum(values) - values[3] - values[4]
            steal += values[7] if len(values) > 7 else 0
    return {"total": total, "busy": busy, "steal": steal} if total else None


def own_cpu_ticks(stat: list[str]) -> dict[str, float] | None:
    """Return stat_ticks of the CPUs this process may run on, with its own CPU time.

    The CPUs come from ``os.sched_getaffinity``; a job pinned with taskset has fewer than the
    machine. ``own`` is this process's CPU time (``os.times``, children included), in the same
    ticks.

    Args:
        stat: /proc/stat's lines.

    Returns:
        The counters, or None where the affinity or those lines cannot be read.
    """
    try:
        ticks = stat_ticks(stat, {f"cpu{n}" for n in os.sched_getaffinity(0)})
    except AttributeError:  # no sched_getaffinity (not Linux)
        return None
    if ticks is None:
        return None
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    return {**ticks, "own": own * os.sysconf("SC_CLK_TCK")}


def noise(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Build the result's ``noise`` record from two noise_probe snapshots.

    Args:
        before: the snapshot taken when the run started.
        after: the snapshot taken after its measured steps.

    Returns:
        Both load averages, both CPU frequencies and the governor. ``steal_share``: the share of
        all CPU time in between that the hypervisor stole (None without /proc/stat). On the
        CPUs the run may use (own_cpu_ticks): ``others_share``, the share of their time that
        other processes used (their busy time less the run's own), and
        ``own_cpus_steal_share`` (None without those counters). ``speed_before`` and
        ``speed_after`` (process.speed_check), and the process's ``placement`` after the run
        (process.placement).
    """
    steal = None
    if before["ticks"] and after["ticks"]:
        total = after["ticks"]["total"] - before["ticks"]["total"]
        steal = (after["ticks"]["steal"] - before["ticks"]["steal"]) / total if total > 0 else 0.0
    others = own_steal = None
    mine = [probe.get("own_cpus") for probe in (before, after)]
    if all(mine) and mine[1]["total"] > mine[0]["total"]:
        total = mine[1]["total"] - mine[0]["total"]
        others_ticks = (mine[1]["busy"] - mine[0]["busy"]) - (mine[1]["own"] - mine[0]["own"])
        others = round(min(max(others_ticks / total, 0.0), 1.0), 4)
        own_steal = round((mine[1]["steal"] - mine[0]["steal"]) / total, 4)
    return {
        "others_share": others,
        "own_cpus_steal_share": own_steal,
        "load_average_before": before["load_average"],
        "load_average_after": after["load_average"],
        "steal_share": steal,
        "cpu_governor": after["cpu_governor"] or before["cpu_governor"],
        "cpu_mhz_before": before["cpu_mhz"],
        "cpu_mhz_after": after["cpu_mhz"],
        "speed_before": before.get("speed"),
        "speed_after": after.get("speed"),
        "placement": after.get("placement"),
    }


def _cpuinfo_mhz() -> float | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None
