"""Which Apptainer image a run uses and where it lives (containers/build.sh builds it).

Standard library only: build.sh runs this file with the host's python3, before any venv
exists, to learn the image's path, Debian release and locks (``python3 -m
rnnbench.pipeline.container REPO FLAVOR TF_VERSION PYTHON``). An image's Python is the
Snakemake's: Debian 12 for Python 3.11, Debian 13 for 3.13. The venv's TensorFlow installs
the venv's locks; the older versions have locks for Python 3.11 only (containers/lock.sh).
Why: docs/containers.md.
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

from rnnbench.grid.axes import DEFAULT_TF_VERSION, tf_version_key

FLAVOR_OF_DEVICE = {"cpu": "cpu", "gpu": "cuda"}
"""The image a config's ``device`` runs in: TensorFlow CPU-only, or with CUDA and cuDNN."""



DEBIAN_OF_PYTHON = {"3.11": "bookworm", "3.13": "trixie"}
"""The Debian release whose python3 is each image Python (major.minor): the images there are."""

OLDER_VERSIONS_PYTHON = "3.11"
"""The Python of the images of TensorFlow versions other than the venv's (containers/lock.sh:
TensorFlow 2.12 has wheels up to Python 3.11, 2.16 up to 3.12)."""

HOST_PYTHON = "%d.%d" % sys.version_info[:2]
"""This interpreter's major.minor: the image Python a Snakemake run here needs."""


def lock_paths(containers_dir: str | Path, flavor: str, tf_version: str,
               python: str = HOST_PYTHON) -> tuple[Path, Path]:
    """Find the two hash-pinned locks an image installs.

    Args:
        containers_dir: the repository's containers/ folder.
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        tf_version: the TensorFlow major.minor, e.g. "2.21".
        python: the image's Python major.minor; default: this interpreter's.

    Returns:
        The locks; the second is installed with --no-deps (it may list nothing). For the
        venv's TensorFlow (DEFAULT_TF_VERSION): the venv's locks for that Python,
        ``envs/locks/py<python>.txt`` (``py<python>-cuda.txt`` for cuda) and
        ``py<python>-nodeps.txt``, beside ``containers_dir``. Other versions:
        ``requirements-<flavor>-tf<version>.txt`` and ``requirements-nodeps-tf<version>.txt``
        in ``containers_dir``, for OLDER_VERSIONS_PYTHON. Neither need exist.
    """
    folder = Path(containers_dir)
    if tf_version == DEFAULT_TF_VERSION:
        locks = folder.parent / "envs" / "locks"
        return (locks / f"py{python}{'-cuda' if flavor == 'cuda' else ''}.txt",
                locks / f"py{python}-nodeps.txt")
    return (folder / f"requirements-{flavor}-tf{tf_version}.txt",
            folder / f"requirements-nodeps-tf{tf_version}.txt")


def shipped_tf_versions(containers_dir: str | Path, flavor: str,
                        python: str = HOST_PYTHON) -> list[str]:
    """List the TensorFlow versions containers/build.sh can build for ``flavor`` and ``python``.

    A version needs a Debian release with that Python, and its locks (envs/lock.sh and
    containers/lock.sh write them).

    Args:
        containers_dir: the repository's containers/ folder.
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        python: the image's Python major.minor; default: this interpreter's.

    Returns:
        The versions ("2.12", ...), oldest first; empty for a Python no Debian release has.
    """
    if python not in DEBIAN_OF_PYTHON:
        return []
    found = []
    if python == OLDER_VERSIONS_PYTHON:
        found = [path.name[len(f"requirements-{flavor}-tf"):-len(".txt")]
                 for path in Path(containers_dir).glob(f"requirements-{flavor}-tf*.txt")]
    if lock_paths(containers_dir, flavor, DEFAULT_TF_VERSION, python)[0].exists():
        found.append(DEFAULT_TF_VERSION)
    return sorted(set(found), key=tf_version_key)


def check_tf_version(containers_dir: str | Path, flavor: str, tf_version: str,
                     python: str = HOST_PYTHON) -> None:
    """Check that there is an image of ``tf_version`` in ``flavor`` for ``python``.

    Args:
        containers_dir: the repository's containers/ folder.
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        tf_version: the TensorFlow major.minor, e.g. "2.21".
        python: the image's Python major.minor; default: this interpreter's.

    Raises:
        ValueError: naming the versions there are images of, for an unknown flavor, or no
            such image. Also says why: no Debian release has that Python (naming which do),
            the version's wheels stop before it, or cuda 2.12 (no CUDA wheels before 2.14).
    """
    if flavor not in FLAVOR_OF_DEVICE.values():
        raise ValueError(f"image flavor must be one of {sorted(set(FLAVOR_OF_DEVICE.values()))}, "
                         f"not {flavor!r}")
    if python not in DEBIAN_OF_PYTHON:
        have = " and ".join(f"{v} (Debian {DEBIAN_OF_PYTHON[v]})" for v in DEBIAN_OF_PYTHON)
        raise ValueError(
            f"no image runs Python {python}, this Snakemake's: a job in an image imports "
            f"Snakemake from the venv, which only the same Python can load. The images run "
            f"Python {have}: make a venv with one of them (PYTHON=python3.11 ./install.sh) "
            "to run in images, or run without --sdm apptainer")
    shipped = shipped_tf_versions(containers_dir, flavor, python)
    if tf_version not in shipped:
        why = ""
        if flavor == "cuda" and tf_version in shipped_tf_versions(containers_dir, "cpu", python):
            why = (" (TensorFlow's pip package brings CUDA and cuDNN, as tensorflow[and-cuda], "
                   "only from 2.14 on; the cpu image has it)")
        elif tf_version in shipped_tf_versions(containers_dir, flavor, OLDER_VERSIONS_PYTHON):
            why = (f" for Python {python} (its images are for Python {OLDER_VERSIONS_PYTHON}, "
                   f"Debian {DEBIAN_OF_PYTHON[OLDER_VERSIONS_PYTHON]}: run it from a venv of "
                   f"that Python, PYTHON=python{OLDER_VERSIONS_PYTHON} ./install.sh)")
        raise ValueError(f"tf_version {tf_version!r} has no {flavor} image{why}; the {flavor} "
                         f"images for Python {python} are for TensorFlow {', '.join(shipped)}")


def installed_tf_version() -> str | None:
    """Read the version of the TensorFlow this Python would import, without importing it.

    Reading the distribution's metadata saves seconds on every snakemake call. The usual
    distributions are asked by name first; mapping every installed distribution to its
    packages (packages_distributions, 0.1 s) is left for another one (tensorflow-macos, ...).

    Returns:
        The version, e.g. "2.21.0"; None if none is installed.
    """
    from importlib import metadata

    for dist in ("tensorflow", "tensorflow-cpu"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    for dist in metadata.packages_distributions().get("tensorflow", []):
        return metadata.version(dist)
    return None


def check_bare_tf_versions(tf_versions: list[str], installed: str | None,
                           containers_dir: str | Path, flavor: str = "cpu",
                           runner: str = "without containers, the installed",
                           python: str = HOST_PYTHON) -> None:
    """Check that a run without containers can run the config's TensorFlow versions.

    Without containers every job runs one TensorFlow, so tf_version must list its major.minor
    alone. Versions with an image of ``flavor`` need --use-singularity; the others cannot run
    at all.

    Args:
        tf_versions: the config's tf_version list (major.minor).
        installed: the TensorFlow every job runs, e.g. "2.21.0" (installed_tf_version), or
            None for none.
        containers_dir: the repository's containers/ folder.
        flavor: the image flavor, "cpu" or "cuda".
        runner: who runs that TensorFlow, in words (with --use-conda: envs/environment.yaml's).
        python: the image's Python major.minor; default: this interpreter's.

    Raises:
        ValueError: naming every version that cannot run here, and how to run each; or that
            no TensorFlow is installed.
    """
    if installed is None:
        raise ValueError(f"tf_version {tf_versions}: no TensorFlow is installed in this Python "
                         f"({sys.executable}); run ./install.sh, or --use-singularity")
    ours = ".".join(installed.split(".")[:2])
    shipped = shipped_tf_versions(containers_dir, flavor, python)
    imaged = [v for v in tf_versions if v != ours and v in shipped]
    unknown = [v for v in tf_versions if v != ours and v not in shipped]
    problems = []
    if unknown:
        older = [v for v in unknown if python != OLDER_VERSIONS_PYTHON
                 and v in shipped_tf_versions(containers_dir, flavor, OLDER_VERSIONS_PYTHON)]
        problems.append(f"tf_version {unknown}: no {flavor} image"
                        + (f" for Python {python}" if python != OLDER_VERSIONS_PYTHON else "")
                        + f" (the {flavor} images are of TensorFlow {', '.join(shipped) or 'none'}"
                        + (f"; those of {', '.join(older)} run Python {OLDER_VERSIONS_PYTHON}: "
                           f"run them from a venv of that Python" if older else "") + ")")
    if imaged:
        problems.append(f"tf_version {imaged}: {runner} TensorFlow {installed} runs every job; "
                        "run them with --use-singularity, after "
                        + "; ".join(f"containers/build.sh {flavor} {v}" for v in imaged))
    if problems:
        raise ValueError("; ".join(problems) + f"; or set tf_version: [\"{ours}\"]")


def image_key(containers_dir: str | Path, flavor: str, tf_version: str = DEFAULT_TF_VERSION,
              python: str = HOST_PYTHON) -> str:
    """Hash everything that defines an image, so a change to any of it names a new image.

    Args:
        containers_dir: the repository's containers/ folder.
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        tf_version: the TensorFlow major.minor, e.g. "2.21".
        python: the image's Python major.minor; default: this interpreter's.

    Returns:
        The first 16 hex digits of the sha256 over the flavor, TensorFlow version and Python,
        ``rnnbench.def`` and the image's two locks (lock_paths; each length-prefixed).

    Raises:
        ValueError: for an unknown flavor or a version without an image (check_tf_version).
        OSError: where ``rnnbench.def`` or a lock cannot be read.
    """
    check_tf_version(containers_dir, flavor, tf_version, python)
    digest = hashlib.sha256(f"{flavor} {tf_version} {python}".encode())
    for path in (Path(containers_dir) / "rnnbench.def",
                 *lock_paths(containers_dir, flavor, tf_version, python)):
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:16]


def images_key(containers_dir: str | Path, flavor: str, python: str = HOST_PYTHON) -> str:
    """Name the set of images a run with --use-singularity may use.

    Its results go to a folder of their own, so a changed definition or lock re-measures.

    Args:
        containers_dir: the repository's containers/ folder.
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        python: the image's Python major.minor; default: this interpreter's.

    Returns:
        The first 16 hex digits of the sha256 over the image_key of every shipped version.
    """
    keys = [f"{v}:{image_key(containers_dir, flavor, v, python)}"
            for v in shipped_tf_versions(containers_dir, flavor, python)]
    return hashlib.sha256(" ".join(keys).encode()).hexdigest()[:16]


def image_path(repo_dir: str | Path, flavor: str, tf_version: str = DEFAULT_TF_VERSION,
               python: str = HOST_PYTHON) -> Path:
    """Give the path the workflow's ``container:`` names for an image.

    Args:
        repo_dir: the repository.
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        tf_version: the TensorFlow major.minor, e.g. "2.21".
        python: the image's Python major.minor; default: this interpreter's.

    Returns:
        ``<repo>/containers/images/rnnbench-<flavor>-tf<version>-py<python>-<key>.sif``, a
        link that build.sh makes to the image in its cache folder. Absolute, so that
        ``--directory`` cannot break it.

    Raises:
        ValueError: as image_key.
    """
    repo = Path(repo_dir).resolve()
    key = image_key(repo / "containers", flavor, tf_version, python)
    name = f"rnnbench-{flavor}-tf{tf_version}-py{python}-{key}.sif"
    return repo / "containers" / "images" / name


def build_arguments(repo_dir: str | Path, flavor: str, tf_version: str,
                    python: str) -> list[str]:
    """List what containers/build.sh needs; this file's command line prints one per line.

    Args:
        repo_dir: the repository.
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        tf_version: the TensorFlow major.minor, e.g. "2.21".
        python: the image's Python major.minor.

    Returns:
        The image's path (image_path), its Debian release (DEBIAN_OF_PYTHON) and its two
        locks, relative to ``containers/`` (where build.sh runs apptainer build).

    Raises:
        ValueError: as image_key.
    """
    repo = Path(repo_dir).resolve()
    locks = lock_paths(repo / "containers", flavor, tf_version, python)
    return [str(image_path(repo, flavor, tf_version, python)), DEBIAN_OF_PYTHON[python],
            *(os.path.relpath(lock, repo / "containers") for lock in locks)]


def image_sha256(path: str | Path) -> str:
    """Hash the image file (following links), as it is now.

    Hashing a 3.6 GB image takes seconds. So the digest is kept beside the file in
    ``<image>.sha256``, with the file's size and mtime (ns), and reused while both match.
    Otherwise the file is hashed again and the record rewritten (skipped where the folder is
    read-only). docs/containers.md says more.

    Args:
        path: the image, or a link to it.

    Returns:
        The sha256, in hex.

    Raises:
        OSError: if the image cannot be read.
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
    """Start the image once before any job relies on it, and return its labels.

    Args:
        path: the image.
        timeout_s: how long the start may take, seconds.

    Returns:
        ``/.singularity.d/labels.json`` inside it: ``org.rnnbench.flavor``, ``.tf_version``,
        ...

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


def check_deployment(images: Mapping[str, Path], flavor: str, device: str,
                     repo_dir: str | Path, environ: Mapping[str, str],
                     host_python: str = HOST_PYTHON) -> None:
    """Check everything --use-singularity needs, before any job.

    Checked: no image path has whitespace; each image is there; Apptainer is on PATH; no
    PYTHONPATH or PYTHONHOME would reach the image; each image starts and is what its name
    says (image_labels). Its Python must be Snakemake's: a job in an image imports Snakemake
    from the host's venv. Why each: docs/containers.md.

    Args:
        images: {tf_version: image path}.
        flavor: the image flavor, "cpu" or "cuda".
        device: the config's device, named in the message.
        repo_dir: the repository, for the build and install commands the message gives.
        environ: the environment jobs will see (PATH, PYTHONPATH, PYTHONHOME).
        host_python: Snakemake's Python major.minor.

    Raises:
        ValueError: naming the problem and what to do (e.g. the missing image's build
            command, or how to install Apptainer).
    """
    repo = Path(repo_dir)
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
        found = tuple(labels.get(f"org.rnnbench.{key}") for key in ("flavor", "tf_version",
                                                                    "python"))
        if found != (flavor, tf_version, host_python):
            raise ValueError(
                f"{image} holds the {found[0]} image of TensorFlow {found[1]} with Python "
                f"{found[2]} (its labels), not the {flavor} image of {tf_version} with Python "
                f"{host_python}: a link or copy of another image; make it again with "
                f"{repo / 'containers' / 'build.sh'} {flavor} {tf_version} {host_python}")



def scripts_bind(scripts_dir: str | Path, environ: Mapping[str, str]) -> str:
    """The APPTAINER_BIND that mounts the workflow's scripts folder, read-only, in every image.

    A training job runs ``workflow/scripts/train.py`` by its host path, as a shell command.
    Snakemake mounts the host's folders into an image only for a ``script:`` job (its search
    paths), so Apptainer must mount this one: APPTAINER_BIND, which adds to any ``--bind`` of
    ``--apptainer-args`` (Apptainer's "Bind Paths and Mounts" page). An entry already there is
    kept once: a SLURM job step reads the Snakefile again with the submitting environment.

    Args:
        scripts_dir: the absolute path of ``workflow/scripts`` on the host.
        environ: the environment Snakemake's jobs will see (its APPTAINER_BIND, if any).

    Returns:
        APPTAINER_BIND's new value: its old entries, comma-separated, then
        ``<scripts_dir>:<scripts_dir>:ro``.

    Raises:
        ValueError: the path holds a comma or a colon, the separators of APPTAINER_BIND.
    """
    folder = str(scripts_dir)
    if "," in folder or ":" in folder:
        raise ValueError(f"--use-singularity: Apptainer cannot bind {folder!r} (a comma or colon "
                         "in the path): clone the repository to a path without them, or run "
                         "without --use-singularity")
    entry = f"{folder}:{folder}:ro"
    entries = [e for e in environ.get("APPTAINER_BIND", "").split(",") if e.strip()]
    return ",".join(entries if entry in entries else [*entries, entry])


def deployment_images(methods: set[str], repo_dir: str | Path, flavor: str, device: str,
                      tf_versions: list[str], environ: Mapping[str, str]
                      ) -> tuple[Path | None, dict[str, Path], dict[str, str]]:
    """Check the software each job will run in, before any job, and name its images.

    With Apptainer every rule runs in an image: the training and peak jobs in that of their
    cell's tf_version, every other rule in that of DEFAULT_TF_VERSION (check_deployment).
    With conda, envs/environment.yaml pins the default TensorFlow; bare, the venv's
    TensorFlow runs every job (check_bare_tf_versions).

    Args:
        methods: Snakemake's deployment methods, as words ("apptainer", "conda"); neither:
            a bare run.
        repo_dir: the repository (its containers/ folder).
        flavor: the image flavor, "cpu" or "cuda" (FLAVOR_OF_DEVICE).
        device: the config's device, named in messages.
        tf_versions: the TensorFlow versions the grid's cells run at.
        environ: the environment jobs will see.

    Returns:
        (the image of the other rules, {tf_version: image}, {tf_version: image sha256}):
        None, {} and {} without Apptainer.

    Raises:
        ValueError: naming what is missing or wrong, and the fix.
    """
    containers = Path(repo_dir) / "containers"
    if "apptainer" in methods:
        image = image_path(repo_dir, flavor)
        images = {v: image_path(repo_dir, flavor, v) for v in tf_versions}
        used = {DEFAULT_TF_VERSION: image, **images}
        check_deployment(used, flavor, device, repo_dir, environ)
        return image, images, {v: image_sha256(path) for v, path in used.items()}
    if "conda" in methods:
        check_bare_tf_versions(tf_versions, DEFAULT_TF_VERSION, containers, flavor,
                               "with --use-conda, envs/environment.yaml's")
    else:
        check_bare_tf_versions(tf_versions, installed_tf_version(), containers, flavor)
    return None, {}, {}


if __name__ == "__main__":
    try:
        print("\n".join(build_arguments(*sys.argv[1:5])))
    except ValueError as error:
        sys.exit(f"{Path(sys.argv[0]).name}: {error}")
