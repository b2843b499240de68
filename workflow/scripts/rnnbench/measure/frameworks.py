"""Import guards of the training jobs: each api's framework imported with its flags set first,
and nothing else in its process. A JAX job (the runners.jax apis) imports no TensorFlow, a
TensorFlow job no JAX (keep_jax_out); inside an Apptainer image every package of the job
must come from the image's Python (check_image_imports).

TensorFlow itself is imported by model.import_tf (compat_v1) and keras_model.import_tf_keras
(the keras apis), Keras on JAX by keras_model.import_keras_jax. Stdlib only.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType


def import_jax(device: str, intra_op: int) -> ModuleType:
    """Import JAX for ``device`` ("cpu" or "gpu") with ``intra_op`` CPU threads for XLA's
    CPU backend (XLA_FLAGS, set before the import: 1 thread as TensorFlow's
    intra_op_parallelism_threads 1). Returns the ``jax`` module.

    Raises:
        RuntimeError: if JAX was imported already (its flags would not apply), or device is
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
    """Make ``import jax`` raise ImportError in this process: what a TensorFlow job does
    before it imports TensorFlow.

    TensorFlow imports JAX whenever it is installed (tensorflow/lite/python/util.py tries
    ``from jax import jit`` for TFLite's JAX converter, and falls back to None on
    ImportError). With JAX in the venv for the JAX apis, that made TensorFlow's import 4.0 s
    instead of 3.3 s here (medians of 10 interleaved pairs of ``python -c "import
    tensorflow"`` with and without ``sys.modules["jax"] = None``: 0.8 s of every job), and
    loaded XLA's CPU runtime beside TensorFlow's in a process that times TensorFlow. The job
    scripts (train.py for every api but axes.JAX_APIS, peak.py) call it before importing
    TensorFlow; the tests, which import both frameworks in one process, do not. The Python
    convention used: a ``None`` in ``sys.modules`` makes the import of that name raise
    ImportError (the import system's reference, "sys.modules").

    Raises:
        RuntimeError: if JAX was imported already (a TensorFlow job that did so would time
            another process than the workflow's).
    """
    if sys.modules.get("jax") is not None:
        raise RuntimeError("jax was imported before frameworks.keep_jax_out: the TensorFlow job "
                           "would carry JAX")
    sys.modules["jax"] = None


def check_tensorflow(tf: ModuleType, tf_version: str) -> None:
    """Refuse a TensorFlow other than the cell's tf_version (major.minor), and, inside an
    Apptainer image, TensorFlow or another package of a training job imported from outside
    the image's Python (a host PYTHONPATH; or a package the image lacks, which Snakemake's
    search path would load from the host's folders).

    Raises:
        RuntimeError: naming the version, or the module and the folder it came from.
    """
    if not tf.__version__.startswith(f"{tf_version}."):
        raise RuntimeError(f"tf_version {tf_version!r} was asked for, but TensorFlow "
                           f"{tf.__version__} ({os.path.dirname(tf.__file__)}) runs")
    check_image_imports()


def check_image_imports() -> None:
    """Inside an Apptainer image, refuse a package of the job (TensorFlow, JAX, Keras, numpy,
    ...: those imported so far) that came from outside the image's Python: a host PYTHONPATH,
    or a package the image lacks, which Snakemake's search path would load from the host's
    folders. Outside an image, nothing. Called by check_tensorflow and by the JAX apis' run.

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
