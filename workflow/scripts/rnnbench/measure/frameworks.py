"""Import guards of the training jobs: each api's framework, its flags set first, alone.

A JAX job (the runners.jax apis) imports no TensorFlow, a TensorFlow job no JAX
(keep_jax_out). Inside an Apptainer image every package of the job must come from the
image's Python (check_image_imports). TensorFlow itself is imported by model.import_tf
(compat_v1) and keras_model.import_tf_keras (the keras apis), Keras on JAX by
keras_model.import_keras_jax. Standard library only.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType


def import_jax(device: str, intra_op: int) -> ModuleType:
    """Import JAX for ``device`` with ``intra_op`` CPU threads for XLA's CPU backend.

    XLA_FLAGS is set before the import: 1 thread matches TensorFlow's
    intra_op_parallelism_threads 1.

    Args:
        device: "cpu" or "gpu".
        intra_op: XLA's CPU threads.

    Returns:
        The ``jax`` module.

    Raises:
        RuntimeError: when JAX was imported already (its flags would not apply), or device is
            "gpu" and JAX sees no GPU.
    """
    if "jax" in sys.modules:
        raise RuntimeError("jax was imported before its flags were set (frameworks.import_jax)")
    threads = (f"--xla_cpu_multi_thread_eigen={'true' if intra_op > 1 else 'false'} "
               f"intra_op_parallelism_threads={intra_op}")
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {threads}".strip()
    os.environ["JAX_PLATFORMS"] = "cpu" if device == "cpu" else "cuda,cpu"
    import jax

    if device == "gpu" and jax.default_backend() != "gpu":
        raise RuntimeError("device: 'gpu' was asked for, but JAX sees no GPU "
                           f"(backend {jax.default_backend()})")
    return jax


def keep_jax_out() -> None:
    """Make ``import jax`` raise ImportError in this process.

    A TensorFlow job calls it before it imports TensorFlow, which would import JAX and pay
    0.8 s for it (docs/experiment.md, A run's phases, in every api). The job scripts (train.py
    for every api but axes.JAX_APIS, peak.py) call it; the tests, which import both frameworks
    in one process, do not. A ``None`` in ``sys.modules`` makes that import raise (Python's
    import system reference, "sys.modules").

    Raises:
        RuntimeError: when JAX was imported already (a TensorFlow job that did so would time
            another process than the workflow's).
    """
    if sys.modules.get("jax") is not None:
        raise RuntimeError("jax was imported before frameworks.keep_jax_out: the TensorFlow job "
                           "would carry JAX")
    sys.modules["jax"] = None


def check_tensorflow(tf: ModuleType, tf_version: str) -> None:
    """Refuse a TensorFlow other than the cell's, or packages from outside an Apptainer image.

    Inside an image, TensorFlow or another package of a training job must come from the
    image's Python. A host PYTHONPATH would break that, and so would a package the image lacks,
    which Snakemake's search path would load from the host's folders (check_image_imports).

    Args:
        tf: the imported ``tensorflow`` module.
        tf_version: the cell's TensorFlow, major.minor.

    Raises:
        RuntimeError: naming the version, or the module and the folder it came from.
    """
    if not tf.__version__.startswith(f"{tf_version}."):
        raise RuntimeError(f"tf_version {tf_version!r} was asked for, but TensorFlow "
                           f"{tf.__version__} ({os.path.dirname(tf.__file__)}) runs")
    check_image_imports()


def check_image_imports() -> None:
    """Refuse, inside an Apptainer image, a job's package that came from outside the image.

    The packages checked are those imported so far (TensorFlow, JAX, Keras, numpy, ...). One
    may come from a host PYTHONPATH, or, where the image lacks it, from the host's folders on
    Snakemake's search path. Outside an image it checks nothing. Called by check_tensorflow and
    by the JAX apis' run.

    Raises:
        RuntimeError: naming the module and the folder it came from.
    """
    if not os.environ.get("APPTAINER_CONTAINER"):
        return
    for name in ("tensorflow", "jax", "jaxlib", "numpy", "keras", "tf_keras", "jsonschema",
                 "yaml"):
        path = getattr(sys.modules.get(name), "__file__", None)  # None: not imported
        where = os.path.dirname(path or "")
        if path and not where.startswith(os.path.join(sys.prefix, "")):
            raise RuntimeError(
                f"{name} was imported from {where}, outside the image's Python ({sys.prefix}): "
                f"PYTHONPATH={os.environ.get('PYTHONPATH')!r}; a host PYTHONPATH reached the "
                "image (unset it), or the image lacks the package")
