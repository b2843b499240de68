"""How fast the machine ran a fixed workload during a run, and where the run's process ran.

metadata.noise_probe takes a speed check before and after each run's measured steps, and the
process's placement after them, so that a slow process can be told from a slow machine;
metadata.collect records whether the address space is randomised (aslr).
Method: docs/method.md, Repeats that disagree.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

LOOP_ITERATIONS = 100_000
"""Iterations of the pure-Python loop in one block of speed_check."""
MATMUL_N = 256
"""The speed check's matmul: [MATMUL_N, MATMUL_N] x [MATMUL_N, MATMUL_N], float32."""
MATMULS = 8
"""Matmuls in one block of speed_check."""
BLOCKS = 5
"""Timed blocks of each workload; speed_check reports their median."""
NO_RANDOMIZE = 0x0040000
"""personality(2)'s ADDR_NO_RANDOMIZE flag, which ``setarch -R`` sets (linux/personality.h)."""


def speed_check() -> dict[str, float]:
    """Time a pure-Python loop and a float32 numpy matmul: about 0.1 s in all.

    Returns:
        ``python_ns``: nanoseconds per iteration of the loop (what graph construction in
        Python depends on); ``matmul_gflop_s``: the matmul's rate in GFLOP/s (2 N^3 FLOP each;
        numpy's BLAS threads). Each is the median of BLOCKS blocks.
    """
    loop, matmul = [], []
    rng = np.random.default_rng(0)
    a = rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)
    b = rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)
    a @ b  # the first call pays BLAS's thread start
    for _ in range(BLOCKS):
        start = time.perf_counter()
        total = 0
        for i in range(LOOP_ITERATIONS):
            total += i & 7
        loop.append(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(MATMULS):
            a @ b
        matmul.append(time.perf_counter() - start)
    return {"python_ns": round(float(np.median(loop)) / LOOP_ITERATIONS * 1e9, 3),
            "matmul_gflop_s": round(2 * MATMUL_N ** 3 * MATMULS / float(np.median(matmul))
                                    / 1e9, 3)}


TIMING_VARIABLES = ("TF_ENABLE_ONEDNN_OPTS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                    "TF_NUM_INTEROP_THREADS", "TF_XLA_FLAGS", "XLA_FLAGS", "JAX_ENABLE_X64",
                    "JAX_DISABLE_JIT", "XLA_PYTHON_CLIENT_PREALLOCATE",
                    "XLA_PYTHON_CLIENT_MEM_FRACTION", "GLIBC_TUNABLES", "PYTHONMALLOC",
                    "PYTHONHASHSEED")
"""Environment variables that change a step's time or the kernels TensorFlow or JAX choose
(oneDNN on or off, the thread pools of OpenBLAS and TensorFlow, XLA's flags, JAX's jit and
memory, glibc's and Python's allocators, Python's string hashing (the order of sets of names,
so of graph construction)), with those of TIMING_PREFIXES: recorded with each run, which is
pooled only with runs of the same values (rnnbench.results.load.SAME_IN_A_CELL). XLA_FLAGS as
the job sets it (a JAX job adds its thread flags: frameworks.import_jax). Not
CUDA_VISIBLE_DEVICES: SLURM gives each job its own GPU (the metadata records it; the
fingerprint names the GPU's model)."""
TIMING_PREFIXES = ("ONEDNN_", "DNNL_", "MKLDNN_", "TF_ONEDNN_", "OMP_", "GOMP_", "KMP_", "MKL_",
                   "MALLOC_")
"""Prefixes of more such variables (oneDNN's ISA and floating-point mode, OpenMP's thread
counts, binding and waiting, MKL's, glibc's malloc (mallopt(3))): every variable set whose name
starts with one is recorded too."""


def placement(proc: Path = Path("/proc/self")) -> dict[str, Any]:
    """Where this process's threads ran and how often they were moved or preempted.

    Args:
        proc: the process's /proc folder (a test passes a copy).

    Returns:
        ``cpus``: the CPUs its live threads last ran on (proc(5) stat field 39), sorted;
        ``migrations``: their moves between CPUs (``se.nr_migrations`` of each thread's
        sched file; None where the kernel has no such file); ``involuntary_switches`` and
        ``voluntary_switches``: the process's context switches (getrusage(2)); ``ld_preload``:
        LD_PRELOAD (another allocator), or None; ``timing_env``: {name: value} of the
        TIMING_VARIABLES set and those of TIMING_PREFIXES, by name, or None. A value that
        cannot be read is None.
    """
    cpus, migrations = set(), 0
    for task in sorted((proc / "task").glob("*")):
        stat = read_stripped(task / "stat")
        if stat:
            fields = stat.rsplit(")", 1)[1].split()
            cpus.add(int(fields[36]))  # field 39 counts from pid (1) and comm (2)
        sched = read_stripped(task / "sched")
        moves = next((line.split(":")[1] for line in (sched or "").splitlines()
                      if line.startswith("se.nr_migrations")), None)
        migrations = None if moves is None or migrations is None else migrations + int(moves)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpus": sorted(cpus) or None, "migrations": migrations if cpus else None,
            "involuntary_switches": usage.ru_nivcsw, "voluntary_switches": usage.ru_nvcsw,
            "ld_preload": os.environ.get("LD_PRELOAD") or None,
            "timing_env": {name: os.environ[name] for name in sorted(os.environ)
                           if name in TIMING_VARIABLES or name.startswith(TIMING_PREFIXES)}
            or None}


def aslr(proc: Path = Path("/proc/self")) -> bool | None:
    """Whether this process's address space is randomised (ASLR).

    Args:
        proc: the process's /proc folder (a test passes a copy); the kernel setting is read
            from the /proc beside it.

    Returns:
        False where ``setarch -R`` turned it off (personality(2)'s ADDR_NO_RANDOMIZE) or
        kernel.randomize_va_space is 0; None where either cannot be read.
    """
    personality = read_stripped(proc / "personality")
    randomize = read_stripped(proc.parent / "sys" / "kernel" / "randomize_va_space")
    if personality is None or randomize is None:
        return None
    return not int(personality, 16) & NO_RANDOMIZE and randomize != "0"


def read_stripped(path: Path) -> str | None:
    """Return a small text file's content, stripped; None where empty or unreadable."""
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
