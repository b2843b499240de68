"""The JAX apis' measurement without Snakemake or TensorFlow, for a machine that has JAX and
numpy only (a GPU machine without TensorFlow; Keras 3 too for api keras_jax): it expands a
preset into cells as the workflow does (rnnbench.grid), makes the same datasets
(rnnbench.data), runs each (cell, implementation, repeat) in a fresh Python with bench.run,
repeat by repeat, and writes the workflow's result JSONs, which `rnnbench/compare.py` and
the workflow's aggregation read beside any other results.

Usage (from the repository root):

    python workflow/scripts/jax_standalone.py PRESET.json OUT

PRESET.json holds config keys (config.yaml's names: cell, batch_size, max_len,
sequence_length, num_units, input_dim, unroll, mode, api, repeats, steps, min_measure_s,
warmup_steps, max_warmup_steps, num_samples, seed, device); api is jax_scan unless the
preset lists keras_jax too (grid.JAX_APIS: no TensorFlow), every other ablation at its
reference. It writes OUT/runs/<protocol>/<cell>/<static|dynamic>/repeat<N>.json, OUT/data/
(the datasets, with their sha256 sidecars) and OUT/standalone.json (what ran: the preset,
each run's wall time, the versions). Results are checked against the result schema where
jsonschema and PyYAML are installed (the venv; they are not needed). Exit status 1 if a run
failed (its error in standalone.json; the others still run).
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from rnnbench import data, grid, metadata  # noqa: E402  (numpy only: no TensorFlow, no JAX)
from rnnbench.files import write_if_changed  # noqa: E402

SETTINGS = {"repeats": 3, "steps": 500, "min_measure_s": 1.0, "warmup_steps": 40,
            "max_warmup_steps": 500, "num_samples": 1000, "seed": 0, "device": "cpu"}
"""The defaults of the preset's protocol keys (config.yaml's)."""
AXES = ("cell", "batch_size", "max_len", "sequence_length", "num_units", "input_dim", "unroll",
        "mode", "api")
"""The preset's grid axes; each a list, as in config.yaml."""


LIGHT_MINIMUMS = {"repeats": 1, "steps": 2, "warmup_steps": 0, "max_warmup_steps": 0,
                  "num_samples": 1, "seed": 0}
"""The least value of each integer protocol key (config.schema.yaml's minimum), checked
where jsonschema or PyYAML is missing and the schema cannot be read."""


def expand(preset: dict) -> tuple[dict, dict[str, dict]]:
    """The full config (api jax_scan unless the preset lists JAX apis, every other axis at
    its reference) and its cells (grid.cells) of a preset, checked as the workflow checks a
    config before any run: by config.schema.yaml (with jsonschema and PyYAML, as in the
    venv; otherwise LIGHT_MINIMUMS, min_measure_s a number, mode and device by name) and by
    grid.check_config (no dependencies: min_measure_s finite, batch_size <= num_samples,
    sequence_length <= max_len, integers, a grid with cells).

    Raises:
        ValueError: ``preset: <key>: <value> ...``, naming a key the preset may not set, an
            axis that is not a list, a missing axis, an api with TensorFlow, or a value the
            checks refuse.
    """
    unknown = set(preset) - set(SETTINGS) - set(AXES)
    if unknown:
        raise ValueError(f"preset: unknown keys {sorted(unknown)}; allowed: "
                         f"{sorted(set(SETTINGS) | set(AXES))}")
    for axis in AXES[:6]:
        if axis not in preset:
            raise ValueError(f"preset: {axis} is missing (a list, e.g. [64])")
    for axis in AXES:
        if axis in preset and not isinstance(preset[axis], list):
            raise ValueError(f"preset: {axis}: {preset[axis]!r} is not a list")
    for api in preset.get("api", []):
        if api not in grid.JAX_APIS:
            raise ValueError(f"preset: api: {api!r} is not one of {list(grid.JAX_APIS)} (this "
                             "script runs no TensorFlow)")
    config = {**SETTINGS, **{axis: [default] for axis, default in grid.ABLATION_DEFAULTS.items()},
              "hook_every": 100, "grappler_alone": False, "ablation_design": "product",
              "api": ["jax_scan"], "tf_version": [grid.DEFAULT_TF_VERSION], "claims": [],
              "claims_from": [], **preset}
    check_schema(config)
    try:
        grid.check_config(config)
    except ValueError as error:
        raise ValueError(f"preset: {error}") from None
    return config, grid.cells(config)


def check_schema(config: dict) -> None:
    """config.schema.yaml's checks of an expanded preset (grid.schema_error: jsonschema and
    PyYAML), or, where
    either is missing (a bare GPU machine), the few that keep a run from measuring nothing:
    LIGHT_MINIMUMS, min_measure_s a number >= 0, every mode train or inference, device cpu or
    gpu.

    Raises:
        ValueError: ``preset: <key path>: <the schema's message>``.
    """
    try:
        import jsonschema  # noqa: F401  (grid.schema_error's)
        import yaml  # noqa: F401
    except ImportError:
        for key, least in LIGHT_MINIMUMS.items():
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"preset: {key}: {value!r} is not an integer >= {least}")
        value = config["min_measure_s"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"preset: min_measure_s: {value!r} is not a number >= 0 (seconds)")
        for key, allowed in (("mode", ("train", "inference")), ("device", ("cpu", "gpu"))):
            for value in config[key] if key == "mode" else [config[key]]:
                if value not in allowed:
                    raise ValueError(f"preset: {key}: {value!r} is not one of {allowed}")
        return
    try:
        grid.schema_error(config)
    except ValueError as error:
        raise ValueError(f"preset: {error}") from None


def plan(config: dict, cells: dict[str, dict]) -> list[tuple[str, str, int]]:
    """The runs, (cell_id, impl, repeat), repeat by repeat through the grid with static and
    dynamic side by side (as grid.job_priorities orders the workflow's jobs), leaving out the
    runs a cell takes from another (grid.shared_runs: dynamic is the same at every unroll)."""
    shared = grid.shared_runs(cells)
    return [(name, impl, repeat) for repeat in range(1, config["repeats"] + 1)
            for name in cells for impl in grid.IMPLEMENTATIONS if (name, impl) not in shared]


def one_run(job: dict) -> None:
    """Measure one run in this process (``job``: cell, impl, repeat, protocol, dataset
    paths, output path) and write its result JSON."""
    from rnnbench import bench

    arrays, sidecar = data.load_dataset(job["npz"], job["sidecar"])
    result = bench.run(job["impl"], job["cell"], arrays, job["protocol"],
                       {"git": metadata.git_commit(REPO), "image_sha256": None})
    result.update(cell_id=job["cell_id"], repeat=job["repeat"], job_threads=1,
                  data={"path": job["npz"], "sha256": sidecar["sha256"]})
    try:
        from rnnbench.schema import validate_result
    except ImportError:  # no jsonschema or PyYAML here: the aggregation validates it later
        pass
    else:
        validate_result(result)
    out = Path(job["out"])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(out)


def check_jax(device: str, keras: bool = False) -> None:
    """Import JAX for ``device`` in a fresh Python, as each run does (bench.import_jax), and
    with ``keras`` Keras on it (keras_model.import_keras_jax), once before any dataset or run:
    a machine without JAX or Keras, or a device: gpu where JAX sees no GPU, stops here with
    their own words instead of failing every run.

    Raises:
        ValueError: naming device (and api keras_jax) and the import's last error lines.
    """
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from rnnbench import bench; "
            "jax = bench.import_jax(sys.argv[2], 1); print(jax.__version__, jax.devices())"
            + ("; from rnnbench import keras_model; print('Keras', "
               "keras_model.import_keras_jax().__version__)" if keras else ""))
    proc = subprocess.run([sys.executable, "-c", code, str(REPO / "workflow" / "scripts"),
                           device], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        what = "JAX and Keras on it (api keras_jax)" if keras else "JAX"
        raise ValueError(f"device: {device!r}: {what} does not start in {sys.executable}:"
                         f"\n{last}")
    print(f"jax_standalone: JAX {' '.join(proc.stdout.split())}", flush=True)


def _die_with_parent() -> None:
    """In a run's process before it starts (Linux): SIGKILL it when this script dies, so a
    killed script leaves no run measuring, or holding the GPU, on its own."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the run ends with its steps
        pass


def main(preset_path: str, out_dir: str) -> int:
    """Check the preset (a JSON object without a key twice; expand) and JAX (check_jax),
    print the grid's warnings (grid.config_warnings, e.g. unroll values left out), take
    OUT/standalone.lock (one script per OUT), then run every planned run still missing in a
    fresh Python; returns the exit status.

    Raises:
        ValueError: for a preset the checks refuse, OUT a file, or OUT locked by another
            running script."""
    def no_repeats(pairs: list) -> dict:
        keys = [key for key, _ in pairs]
        twice = sorted({key for key in keys if keys.count(key) > 1})
        if twice:
            raise ValueError(f"preset: {', '.join(twice)}: the key appears twice (JSON would "
                             "keep the last): keep one")
        return dict(pairs)

    try:
        preset = json.loads(Path(preset_path).read_text(), object_pairs_hook=no_repeats)
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{preset_path}: {error}") from None
    if not isinstance(preset, dict):
        raise ValueError(f"{preset_path}: a JSON object of config keys, not {preset!r:.60}")
    config, cells = expand(preset)
    for warning in grid.config_warnings(config, cells):  # as the workflow prints them
        print(f"jax_standalone: {warning}", file=sys.stderr, flush=True)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: a file where the output folder goes: give another OUT")
    runs_dir = out / "runs" / grid.protocol_id(config)
    targets = {run: runs_dir / run[0] / run[1] / f"repeat{run[2]}.json"
               for run in plan(config, cells)}
    pending = [run for run, target in targets.items() if not target.exists()]
    if pending:  # (resumed with every run measured before: nothing to check)
        check_jax(config["device"], "keras_jax" in config["api"])
    out.mkdir(parents=True, exist_ok=True)
    lock = (out / "standalone.lock").open("w")  # held until this process ends, even killed
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ValueError(f"{out}: another jax_standalone.py is writing into this folder "
                         "(standalone.lock): wait for it, or give another OUT") from None
    protocol = {**{key: config[key] for key in grid.PROTOCOL_KEYS}, "log_every": 100}
    log = out / "standalone.json"  # every run so far, across resumed invocations
    record = {"preset": preset, "python": sys.version,
              "runs": json.loads(log.read_text())["runs"] if log.exists() else []}
    paths = {}
    for dataset, spec in grid.datasets(config).items():  # as rule make_data
        npz = out / "data" / f"{dataset}.npz"
        if not (npz.exists() and npz.with_suffix(".json").exists()):  # a kill between the two
            npz.parent.mkdir(parents=True, exist_ok=True)
            data.write_dataset(data.make_dataset(**spec), spec, npz, npz.with_suffix(".json"))
        paths[dataset] = (str(npz), str(npz.with_suffix(".json")))
    failed = 0
    for cell_id, impl, repeat in pending:
        target = targets[(cell_id, impl, repeat)]
        cell = cells[cell_id]
        job = {"cell_id": cell_id, "impl": impl, "repeat": repeat, "cell": cell,
               "protocol": protocol, "npz": paths[cell["dataset"]][0],
               "sidecar": paths[cell["dataset"]][1], "out": str(target)}
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--one", json.dumps(job)],
                              capture_output=True, text=True, preexec_fn=_die_with_parent)
        wall_s = time.perf_counter() - start
        entry = {"cell_id": cell_id, "impl": impl, "repeat": repeat, "wall_s": round(wall_s, 2),
                 "rc": proc.returncode}
        if proc.returncode != 0:
            failed += 1
            entry["error"] = proc.stderr[-2000:]
        print(f"jax_standalone: {cell_id} {impl} repeat {repeat}: {wall_s:.1f} s"
              + ("" if proc.returncode == 0 else f", failed:\n{proc.stderr[-2000:]}"),
              flush=True)
        record["runs"].append(entry)
        write_if_changed(log, json.dumps(record, indent=1))  # atomic: a kill leaves it whole
    write_if_changed(log, json.dumps(record, indent=1))  # also when nothing was left to run
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one_run(json.loads(sys.argv[2]))
    elif len(sys.argv) == 3:
        try:
            sys.exit(main(sys.argv[1], sys.argv[2]))
        except ValueError as error:
            sys.exit(f"jax_standalone.py: {error}")
        except KeyboardInterrupt:  # the running run's Python dies with it (_die_with_parent)
            sys.exit("jax_standalone.py: interrupted; the same command measures the runs "
                     "still missing")
    else:
        sys.exit(__doc__)
