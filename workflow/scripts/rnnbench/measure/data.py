"""Synthetic, seeded, variable-length sequence data, written as .npz with a JSON sidecar.

The data follow the first seed document (000): inputs uniform in [0, 1) (``np.random.rand``),
labels uniform over the classes, and a sequence_length per sample. Padding steps beyond a
sample's sequence_length hold random values too, as in the seed: they must be masked out.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from rnnbench.grid.axes import sequence_length_bounds


def make_dataset(max_len: int, sequence_length: Any, input_dim: int, num_classes: int,
                 num_samples: int, seed: int) -> dict[str, np.ndarray]:
    """Generate one dataset deterministically from ``seed``.

    Args:
        max_len: padded time steps.
        sequence_length: int, "max_len", or {"uniform": [low, high]} (inclusive).
        input_dim: features per time step.
        num_classes: labels are drawn from [0, num_classes).
        num_samples: number of sequences.
        seed: seeds numpy's PCG64 generator.

    Returns:
        ``inputs`` float32 [num_samples, max_len, input_dim], ``sequence_length`` int32
        [num_samples], ``labels`` int32 [num_samples].

    Raises:
        ValueError: if sequence_length does not fit max_len (see axes.sequence_length_bounds).
    """
    low, high = sequence_length_bounds(sequence_length, max_len)
    rng = np.random.default_rng(seed)
    inputs = rng.random((num_samples, max_len, input_dim), dtype=np.float32)
    lengths = rng.integers(low, high, size=num_samples, endpoint=True).astype(np.int32)
    labels = rng.integers(0, num_classes, size=num_samples).astype(np.int32)
    return {"inputs": inputs, "sequence_length": lengths, "labels": labels}


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_dataset(arrays: dict[str, np.ndarray], params: dict, npz_path: str | Path,
                  sidecar_path: str | Path) -> dict:
    """Write ``arrays`` to ``npz_path`` (uncompressed .npz) and a sidecar JSON.

    Args:
        arrays: make_dataset's arrays, by name.
        params: the dataset's parameters.
        npz_path: the .npz file to write.
        sidecar_path: the JSON file to write.

    Returns:
        The sidecar's content: ``params``, each array's shape and dtype, and the file's sha256.
    """
    np.savez(npz_path, **arrays)
    sidecar = {
        "params": params,
        "arrays": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
        "sha256": sha256_file(npz_path),
    }
    Path(sidecar_path).write_text(json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
    return sidecar


def load_dataset(npz_path: str | Path, sidecar_path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """Load a dataset after checking its sha256 against the sidecar; no pickles are allowed.

    Returns:
        (arrays, sidecar) with the arrays named as in make_dataset.

    Raises:
        ValueError: if the file's sha256 differs from the sidecar's (names both hashes), or
            numpy cannot read it whole (a corrupted zip member).
    """
    sidecar = json.loads(Path(sidecar_path).read_text())
    actual = sha256_file(npz_path)
    if actual != sidecar["sha256"]:
        raise ValueError(
            f"{npz_path}: sha256 {actual} does not match {sidecar['sha256']} in {sidecar_path}"
        )
    try:
        with np.load(npz_path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:  # e.g. "Bad CRC-32"
        raise ValueError(f"{npz_path}: not a whole dataset ({error}): delete it and "
                         f"{sidecar_path}; the workflow makes them anew") from None
    return arrays, sidecar
