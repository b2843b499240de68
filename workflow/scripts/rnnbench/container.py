"""Which Apptainer image a run uses and where it lives (containers/build.sh builds it).

Standard library only: containers/build.sh runs this file with the host's python3 to learn
the image's path (``python3 container.py REPO FLAVOR``), before any venv exists.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

FLAVOR_OF_DEVICE = {"cpu": "cpu", "gpu": "cuda"}
"""The image a config's ``device`` runs in: TensorFlow CPU-only, or with CUDA and cuDNN."""


def image_key(containers_dir: str | Path, flavor: str) -> str:
    """First 16 hex digits of the sha256 over everything that defines a flavor's image.

    Hashes the flavor's name, ``rnnbench.def``, ``requirements-<flavor>.txt`` and
    ``requirements-nodeps.txt`` (each length-prefixed), so a change to any of them names a
    new image. Raises ValueError for an unknown flavor, OSError if a file is missing.
    """
    if flavor not in FLAVOR_OF_DEVICE.values():
        raise ValueError(f"image flavor must be one of {sorted(set(FLAVOR_OF_DEVICE.values()))}, "
                         f"not {flavor!r}")
    digest = hashlib.sha256(flavor.encode())
    for name in ("rnnbench.def", f"requirements-{flavor}.txt", "requirements-nodeps.txt"):
        data = (Path(containers_dir) / name).read_bytes()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:16]


def image_path(repo_dir: str | Path, flavor: str) -> Path:
    """Absolute path the workflow's ``container:`` names for a flavor.

    ``<repo>/containers/images/rnnbench-<flavor>-<key>.sif``, a link that build.sh makes to
    the image it keeps in its cache folder. Absolute, so that ``--directory`` cannot break it.
    """
    repo = Path(repo_dir).resolve()
    key = image_key(repo / "containers", flavor)
    return repo / "containers" / "images" / f"rnnbench-{flavor}-{key}.sif"


def image_sha256(path: str | Path) -> str:
    """sha256 of the image file (following links), as it is now.

    Hashing a 3.6 GB image takes seconds, so the digest is kept beside the file in
    ``<image>.sha256`` with the file's size and mtime (ns) and reused only while both still
    match; otherwise the file is hashed again and the record rewritten (skipped where the
    folder is read-only). Raises OSError if the image cannot be read.
    """
    image = Path(path).resolve()
    stat = image.stat()
    sidecar = Path(f"{image}.sha256")
    try:
        digest, size, mtime_ns = sidecar.read_text().split()
        if (int(size), int(mtime_ns)) == (stat.st_size, stat.st_mtime_ns):
            return digest
    except (OSError, ValueError):
        pass
    sha = hashlib.sha256()
    with open(image, "rb") as handle:
        for chunk in iter(lambda: handle.read(2**24), b""):
            sha.update(chunk)
    digest = sha.hexdigest()
    try:
        tmp = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.tmp")
        tmp.write_text(f"{digest} {stat.st_size} {stat.st_mtime_ns}\n")
        tmp.replace(sidecar)
    except OSError:
        pass
    return digest


def check_image_starts(path: str | Path, timeout_s: float = 300) -> None:
    """Start the image once (``apptainer exec IMAGE true``) before any job relies on it.

    Raises:
        RuntimeError: naming the image and quoting Apptainer's error, if it does not start
            (e.g. a truncated file: "bad superblock ... or the image is corrupted").
    """
    binary = shutil.which("apptainer") or shutil.which("singularity") or "apptainer"
    try:
        proc = subprocess.run([binary, "exec", str(path), "true"], capture_output=True,
                              text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(f"image {path} does not start: {error}") from error
    if proc.returncode != 0:
        raise RuntimeError(f"image {path} does not start ({binary} exec ... true exited "
                           f"{proc.returncode}): {proc.stderr.strip()[-500:]}")


def check_deployment(image: Path, flavor: str, device: str, repo_dir: str | Path,
                     environ: Mapping[str, str]) -> None:
    """Everything --use-singularity needs, checked before any job: the image is there (else
    the build command), Apptainer is on ``environ``'s PATH (else how to install it), no
    PYTHONPATH or PYTHONHOME would reach the image (Apptainer passes the host's variables in
    and %environment cannot unset them; the image's Python would load the host's packages),
    and the image starts (check_image_starts).

    Raises:
        ValueError: naming the problem and what to do.
    """
    repo = Path(repo_dir)
    if not image.exists():
        gone = f" (a link to {os.readlink(image)}, which is gone)" if image.is_symlink() else ""
        raise ValueError(f"no {flavor} image for --use-singularity at {image}{gone} (device: "
                         f"{device}); build it with: {repo / 'containers' / 'build.sh'} {flavor}")
    path = environ.get("PATH", "")
    if not (shutil.which("apptainer", path=path) or shutil.which("singularity", path=path)):
        raise ValueError("--use-singularity needs apptainer on PATH; on Debian 12, which has no "
                         f'package: export PATH="$({repo / ".ci" / "install-apptainer.sh"}):$PATH"')
    for variable in ("PYTHONPATH", "PYTHONHOME"):
        if environ.get(variable):
            raise ValueError(f"{variable}={environ[variable]} would reach the image's Python and "
                             f"load packages from the host: unset {variable} before snakemake "
                             "--use-singularity")
    try:
        check_image_starts(image)
    except RuntimeError as error:
        raise ValueError(str(error)) from error


if __name__ == "__main__":
    print(image_path(sys.argv[1], sys.argv[2]))
