"""What the machine that plans a run has, and whether the jobs run on it: checked before any
job, dry runs included (common.smk).

- gpu_names: the NVIDIA GPUs the kernel driver shows (``/proc/driver/nvidia/gpus/``, else
  ``nvidia-smi -L``), with no framework imported.
- intended_executor: where the jobs of this Snakemake would run. A dry run always gets
  Snakemake's ``dryrun`` executor (``workflow.local_exec`` is then true), so a dry run of a
  cluster profile (``--profile profiles/slurm-gpu -n``) reads the executor from the command
  line or the profile, as Snakemake would for the real run.
- check_device: ``device: gpu`` on a machine without one is refused for a local run, naming
  how to check; Snakemake alone would fail at the first training job.

Standard library and PyYAML only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

LOCAL_EXECUTORS = ("local", "dryrun", "touch")


def gpu_names(proc: str | Path = "/proc/driver/nvidia/gpus",
              environ: Mapping[str, str] = os.environ) -> list[str]:
    """The NVIDIA GPUs of this machine: one entry per folder of ``proc`` (the driver's), or
    per ``GPU <n>: <name>`` line of ``nvidia-smi -L`` where that folder is absent (a
    container without /proc/driver); [] without a driver or a GPU."""
    folder = Path(proc)
    if folder.is_dir():
        return sorted(path.name for path in folder.iterdir())
    smi = shutil.which("nvidia-smi", path=environ.get("PATH", os.defpath))
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.splitlines() if line.startswith("GPU ")]


def _option(argv: Sequence[str], *names: str) -> str | None:
    """The value of the last of ``names`` in ``argv`` (``--name value`` or ``--name=value``)."""
    value = None
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif arg.startswith(name + "=") and name.startswith("--"):
                value = arg.split("=", 1)[1]
    return value


def intended_executor(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> str:
    """The executor a run of this command line would use: ``--executor`` / ``-e``, else the
    ``executor`` of the profile (``--profile`` or ``$SNAKEMAKE_PROFILE``: a folder with a
    config.yaml, or a name under ~/.config/snakemake/ or /etc/xdg/snakemake/), else
    ``local``. A profile that cannot be read counts as local (Snakemake names it itself)."""
    import yaml

    named = _option(argv, "--executor", "-e")
    if named:
        return named
    profile = _option(argv, "--profile") or environ.get("SNAKEMAKE_PROFILE")
    if not profile:
        return "local"
    home = Path(environ.get("HOME", "~")).expanduser()
    for folder in (Path(profile), home / ".config" / "snakemake" / profile,
                   Path("/etc/xdg/snakemake") / profile):
        try:
            settings = yaml.safe_load((folder / "config.yaml").read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        return str(settings.get("executor", "local"))
    return "local"


def check_device(device: str, local: bool, gpus: list[str]) -> None:
    """Refuse ``device: gpu`` for a local run on a machine whose driver shows no GPU
    (``gpus``: gpu_names). A cluster run (``local`` false) is not checked here: its nodes
    are not this machine.

    Raises:
        ValueError: naming the key, the value, how to check and what to do.
    """
    if device == "gpu" and local and not gpus:
        raise ValueError(
            "device: 'gpu', but this machine shows no NVIDIA GPU (no /proc/driver/nvidia/gpus/, "
            "and nvidia-smi -L lists none); check with nvidia-smi -L. Run with device: cpu, on a "
            "machine with an NVIDIA GPU and driver, or through a cluster profile "
            "(profiles/slurm-gpu)")
