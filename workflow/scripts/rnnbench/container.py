"""Which Apptainer image a run uses and where it lives (containers/build.sh builds it).

Standard library only: containers/build.sh runs this file with the host's python3 to learn
the image's path (``python3 container.py REPO FLAVOR``), before any venv exists.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

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


def image_sha256(path: str | Path) -> str | None:
    """sha256 of the image file, read from the ``.sha256`` file build.sh writes beside it.

    Follows the link to the cached image. None when there is no such file (no image built).
    """
    sidecar = Path(str(Path(path).resolve()) + ".sha256")
    try:
        return sidecar.read_text().split()[0]
    except (OSError, IndexError):
        return None


if __name__ == "__main__":
    print(image_path(sys.argv[1], sys.argv[2]))
