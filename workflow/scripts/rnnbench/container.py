"""Which Apptainer image a run uses and where it lives (containers/build.sh builds it).

Standard library only: containers/build.sh runs this file with the host's python3 to learn
the image's path (``python3 container.py REPO FLAVOR TF_VERSION``), before any venv exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

FLAVOR_OF_DEVICE = {"cpu": "cpu", "gpu": "cuda"}
"""The image a config's ``device`` runs in: TensorFlow CPU-only, or with CUDA and cuDNN."""

DEFAULT_TF_VERSION = "2.21"
"""The TensorFlow the venv pins (envs/requirements.txt): its image holds the whole workflow
(aggregation, charts); the images of other versions hold what a training job imports."""


def tf_version_key(tf_version: str) -> tuple[int, ...]:
    """Sort key of a major.minor version in release order ("2.9" before "2.12")."""
    return tuple(int(part) for part in tf_version.split("."))


def lock_paths(containers_dir: str | Path, flavor: str, tf_version: str) -> tuple[Path, Path]:
    """The two hash-pinned locks an image installs: ``requirements-<flavor>-tf<version>.txt``
    and ``requirements-nodeps-tf<version>.txt`` (installed with --no-deps; may list nothing).
    """
    folder = Path(containers_dir)
    return (folder / f"requirements-{flavor}-tf{tf_version}.txt",
            folder / f"requirements-nodeps-tf{tf_version}.txt")


def shipped_tf_versions(containers_dir: str | Path, flavor: str) -> list[str]:
    """TensorFlow versions ("2.12", ...) with a lock for ``flavor``, oldest first: the
    versions containers/build.sh can build (containers/lock.sh writes the locks)."""
    found = [path.name[len(f"requirements-{flavor}-tf"):-len(".txt")]
             for path in Path(containers_dir).glob(f"requirements-{flavor}-tf*.txt")]
    return sorted(found, key=tf_version_key)


def check_tf_version(containers_dir: str | Path, flavor: str, tf_version: str) -> None:
    """Raises ValueError, naming the shipped versions, if there is no lock (so no image) for
    ``tf_version`` in ``flavor``; for cuda 2.12, says why (no CUDA wheels before 2.14)."""
    if flavor not in FLAVOR_OF_DEVICE.values():
        raise ValueError(f"image flavor must be one of {sorted(set(FLAVOR_OF_DEVICE.values()))}, "
                         f"not {flavor!r}")
    shipped = shipped_tf_versions(containers_dir, flavor)
    if tf_version not in shipped:
        why = ""
        if flavor == "cuda" and tf_version in shipped_tf_versions(containers_dir, "cpu"):
            why = (" (TensorFlow's pip package brings CUDA and cuDNN, as tensorflow[and-cuda], "
                   "only from 2.14 on; the cpu image has it)")
        raise ValueError(f"tf_version {tf_version!r} has no {flavor} image{why}; the {flavor} "
                         f"images are for TensorFlow {', '.join(shipped)}")


def installed_tf_version() -> str | None:
    """Version of the TensorFlow this Python would import (e.g. "2.21.0"), read from its
    distribution's metadata without importing it (seconds saved on every snakemake call);
    None if none is installed."""
    from importlib import metadata

    for dist in metadata.packages_distributions().get("tensorflow", []):
        return metadata.version(dist)
    return None


def check_bare_tf_versions(tf_versions: list[str], installed: str | None,
                           containers_dir: str | Path, flavor: str = "cpu",
                           runner: str = "without containers, the installed") -> None:
    """Without containers every job runs one TensorFlow (``installed``, e.g. "2.21.0"; with
    --use-conda, envs/environment.yaml's, said by ``runner``): the config's tf_version must
    list its major.minor alone. Versions with an image of ``flavor`` in ``containers_dir``
    need --use-singularity; the others cannot run at all.

    Raises:
        ValueError: naming every version that cannot run here, and how to run each.
    """
    if installed is None:
        raise ValueError(f"tf_version {tf_versions}: no TensorFlow is installed in this Python "
                         f"({sys.executable}); run ./install.sh, or --use-singularity")
    ours = ".".join(installed.split(".")[:2])
    shipped = shipped_tf_versions(containers_dir, flavor)
    imaged = [v for v in tf_versions if v != ours and v in shipped]
    unknown = [v for v in tf_versions if v != ours and v not in shipped]
    problems = []
    if unknown:
        problems.append(f"tf_version {unknown}: no {flavor} image (the {flavor} images are of "
                        f"TensorFlow {', '.join(shipped)})")
    if imaged:
        problems.append(f"tf_version {imaged}: {runner} TensorFlow {installed} runs every job; "
                        "run them with --use-singularity, after "
                        + "; ".join(f"containers/build.sh {flavor} {v}" for v in imaged))
    if problems:
        raise ValueError("; ".join(problems) + f"; or set tf_version: [\"{ours}\"]")


def image_key(containers_dir: str | Path, flavor: str, tf_version: str = DEFAULT_TF_VERSION) -> str:
    """First 16 hex digits of the sha256 over everything that defines an image.

    Hashes the flavor and TensorFlow version, ``rnnbench.def`` and the image's two locks
    (lock_paths; each length-prefixed), so a change to any of them names a new image.
    Raises ValueError for an unknown flavor or a version without a lock (check_tf_version).
    """
    check_tf_version(containers_dir, flavor, tf_version)
    digest = hashlib.sha256(f"{flavor} {tf_version}".encode())
    for path in (Path(containers_dir) / "rnnbench.def", *lock_paths(containers_dir, flavor,
                                                                    tf_version)):
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:16]


def images_key(containers_dir: str | Path, flavor: str) -> str:
    """First 16 hex digits of the sha256 over the image_key of every shipped version of
    ``flavor``: names the set of images a run with --use-singularity may use, so that its
    results go to a folder of their own and a changed definition or lock re-measures."""
    keys = [f"{v}:{image_key(containers_dir, flavor, v)}"
            for v in shipped_tf_versions(containers_dir, flavor)]
    return hashlib.sha256(" ".join(keys).encode()).hexdigest()[:16]


def image_path(repo_dir: str | Path, flavor: str, tf_version: str = DEFAULT_TF_VERSION) -> Path:
    """Absolute path the workflow's ``container:`` names for a flavor and TensorFlow version.

    ``<repo>/containers/images/rnnbench-<flavor>-tf<version>-<key>.sif``, a link that
    build.sh makes to the image it keeps in its cache folder. Absolute, so that
    ``--directory`` cannot break it. Raises ValueError as image_key.
    """
    repo = Path(repo_dir).resolve()
    key = image_key(repo / "containers", flavor, tf_version)
    return repo / "containers" / "images" / f"rnnbench-{flavor}-tf{tf_version}-{key}.sif"


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


def image_labels(path: str | Path, timeout_s: float = 300) -> dict[str, str]:
    """Start the image once before any job relies on it, and return its labels (reading
    ``/.singularity.d/labels.json`` inside it: ``org.rnnbench.flavor``, ``.tf_version``, ...).

    Raises:
        RuntimeError: naming the image and quoting Apptainer's error, if it does not start
            (e.g. a truncated file: "bad superblock ... or the image is corrupted").
    """
    binary = shutil.which("apptainer") or shutil.which("singularity") or "apptainer"
    command = [binary, "exec", str(path), "cat", "/.singularity.d/labels.json"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(f"image {path} does not start: {error}") from error
    if proc.returncode != 0:
        raise RuntimeError(f"image {path} does not start ({binary} exec ... exited "
                           f"{proc.returncode}): {proc.stderr.strip()[-500:]}")
    try:
        return json.loads(proc.stdout)
    except ValueError as error:
        raise RuntimeError(f"image {path}: its labels are not JSON: {error}") from error


IMAGE_PYTHON = "3.11"
"""The Python of every image (Debian 12's; rnnbench.def)."""


def check_deployment(images: Mapping[str, Path], flavor: str, device: str,
                     repo_dir: str | Path, environ: Mapping[str, str],
                     host_python: str = IMAGE_PYTHON) -> None:
    """Everything --use-singularity needs, checked before any job: each image
    (``{tf_version: path}``) is there (else its build command), Apptainer is on ``environ``'s
    PATH (else how to install it), no PYTHONPATH or PYTHONHOME would reach the image
    (Apptainer passes the host's variables in and %environment cannot unset them; the image's
    Python would load the host's packages), and each image starts and is what its name says
    (image_labels: its flavor and TensorFlow version); and Snakemake runs on the images'
    Python (``host_python``, major.minor): a job in an image imports Snakemake from the host's
    venv, which another Python cannot load.

    Raises:
        ValueError: naming the problem and what to do.
    """
    repo = Path(repo_dir)
    if host_python != IMAGE_PYTHON:
        raise ValueError(f"--use-singularity: the images run Python {IMAGE_PYTHON}, this Snakemake "
                         f"Python {host_python}; a job in an image imports Snakemake from this "
                         f"venv, which Python {IMAGE_PYTHON} cannot load: install a venv with "
                         f"Python {IMAGE_PYTHON} (PYTHON=python{IMAGE_PYTHON} ./install.sh) to "
                         "run in the images, or run without them")
    spaced = sorted({str(image) for image in images.values()
                     if any(c.isspace() for c in str(image))})
    if spaced:
        raise ValueError(f"--use-singularity: Apptainer cannot take an image path with whitespace "
                         f"({spaced[0]!r}): clone the repository to a path without spaces, or run "
                         "without --use-singularity")
    missing = []
    for tf_version, image in images.items():
        if not image.exists():
            gone = f" (a link to {os.readlink(image)}, which is gone)" if image.is_symlink() else ""
            missing.append(f"no {flavor} image of TensorFlow {tf_version} at {image}{gone}; build "
                           f"it with: {repo / 'containers' / 'build.sh'} {flavor} {tf_version}")
    if missing:
        raise ValueError(f"--use-singularity (device: {device}): " + "; ".join(missing))
    path = environ.get("PATH", "")
    if not (shutil.which("apptainer", path=path) or shutil.which("singularity", path=path)):
        raise ValueError("--use-singularity needs apptainer on PATH; on Debian 12, which has no "
                         f'package: export PATH="$({repo / ".ci" / "install-apptainer.sh"}):$PATH"')
    for variable in ("PYTHONPATH", "PYTHONHOME"):
        if environ.get(variable):
            raise ValueError(f"{variable}={environ[variable]} would reach the image's Python and "
                             f"load packages from the host: unset {variable} before snakemake "
                             "--use-singularity")
    for tf_version, image in images.items():
        try:
            labels = image_labels(image)
        except RuntimeError as error:
            raise ValueError(str(error)) from error
        found = (labels.get("org.rnnbench.flavor"), labels.get("org.rnnbench.tf_version"))
        if found != (flavor, tf_version):
            raise ValueError(
                f"{image} holds the {found[0]} image of TensorFlow {found[1]} (its labels), not "
                f"the {flavor} image of {tf_version}: a link or copy of another image; make it "
                f"again with {repo / 'containers' / 'build.sh'} {flavor} {tf_version}")


if __name__ == "__main__":
    try:
        print(image_path(*sys.argv[1:4]))
    except ValueError as error:
        sys.exit(f"{Path(sys.argv[0]).name}: {error}")
