"""Measure the JAX apis without Snakemake or TensorFlow, on a machine with numpy and JAX.

E.g. a GPU machine without TensorFlow; api keras_jax needs Keras 3 too. It expands a preset
into cells as the workflow does (rnnbench.grid.cells) and makes the same datasets
(rnnbench.measure.data). It runs each (cell, implementation, repeat) in a fresh Python with
bench.run, repeat by repeat. It writes the workflow's result JSONs, which ``rnnbench
compare`` and the workflow's aggregation read beside any other results.

    rnnbench jax PRESET.json OUT
    PYTHONPATH=workflow/scripts python3 -m rnnbench jax PRESET.json OUT   (no install: numpy
                                                                           and JAX alone)

PRESET.json holds config keys, by config.yaml's names: cell, batch_size, max_len,
sequence_length, num_units, input_dim, unroll, mode, api, repeats, steps, min_measure_s,
warmup_steps, max_warmup_steps, num_samples, seed, device. api is jax_scan unless the preset
lists keras_jax too (axes.JAX_APIS: no TensorFlow). The first six (cell to input_dim) are
required; every other key is at the schema's default (config.schema.yaml's, as
config.yaml's).

Each run takes the machine's measuring lock first, as the workflow's measuring jobs do
(rnnbench/jobs/exclusive.py): it never measures beside them, and its result records the lock.

It writes:
  - OUT/runs/<protocol>/<cell>/<static|dynamic>/repeat<N>.json (rnnbench.grid.layout);
  - OUT/data/: the datasets, with their sha256 sidecars;
  - OUT/standalone.json: what ran (the preset, each run's wall time, the versions).
Results are checked against the result schema where jsonschema and PyYAML are installed (the
venv; they are not needed). A second call measures only the runs still missing. Exit status
1 if a run failed (its error in standalone.json; the others still run) or the preset is
refused.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rnnbench.measure import data, metadata  # numpy only: no TensorFlow, no JAX
from rnnbench.grid import layout
from rnnbench.grid.axes import ABLATION_DEFAULTS, JAX_APIS, PROTOCOL_KEYS
from rnnbench.grid.cells import cells as grid_cells, datasets, protocol_id, shared_runs
from rnnbench.grid.plan import job_priorities
from rnnbench.grid.configcheck import (check_cross_fields, config_warnings, schema_defaults,
                                  schema_error)
from rnnbench.grid.axes import DEFAULT_TF_VERSION
from rnnbench.pipeline.files import write_if_changed
from rnnbench.grid.layout import REPO
from rnnbench.pipeline.arguments import existing_file, output_folder

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the package (workflow/scripts): each run's fresh Python gets it on
PYTHONPATH, so it imports this same rnnbench, installed or not."""
SETTINGS = ("repeats", "steps", "min_measure_s", "warmup_steps", "max_warmup_steps",
            "num_samples", "seed", "device")
"""The protocol keys a preset may set; each defaults to config.schema.yaml's default."""
AXES = ("cell", "batch_size", "max_len", "sequence_length", "num_units", "input_dim", "unroll",
        "mode", "api")
"""The preset's grid axes; each a list, as in config.yaml (the first six required)."""
AXIS_EXAMPLES = {"cell": ["basic_lstm"], "batch_size": [64], "max_len": [100],
                 "sequence_length": ["max_len"], "num_units": [64], "input_dim": [32]}
"""A value of each required axis, for the message that names it missing."""
LOG_EVERY = 100
"""The runs' loss-logging interval, steps (bench.run's protocol log_every)."""

LIGHT_DEFAULTS = {
    "repeats": 6, "steps": 500, "min_measure_s": 1.0, "warmup_steps": 40,
    "max_warmup_steps": 500, "num_samples": 1000, "seed": 0, "device": "cpu",
    "hook_every": 100, "grappler_alone": False, "ablation_design": "product", "claims": [],
    "claims_from": [], "extrapolate": {}, "margin": 0.1, "more_repeats": 0, "log_every": 25, "tf_version": [DEFAULT_TF_VERSION],
    "unroll": [ABLATION_DEFAULTS["unroll"]], "mode": [ABLATION_DEFAULTS["mode"]],
    **{axis: [value] for axis, value in ABLATION_DEFAULTS.items()},
}
"""ONLY for a machine without PyYAML, where config.schema.yaml cannot be read: a copy of the
schema's defaults of the keys a preset leaves out (tests/commands/test_standalone.py checks that it
agrees with the schema)."""
LIGHT_MINIMUMS = {"repeats": 1, "steps": 2, "warmup_steps": 0, "max_warmup_steps": 0,
                  "num_samples": 1, "seed": 0}
"""The least value of each integer protocol key (config.schema.yaml's minimum), checked
where jsonschema or PyYAML is missing and the schema cannot be read."""


def preset_defaults() -> dict:
    """Give every config key's default.

    Returns:
        config.schema.yaml's (configcheck.schema_defaults) where PyYAML is installed, else a
        copy of LIGHT_DEFAULTS.
    """
    try:
        import yaml  # noqa: F401
    except ImportError:  # a bare GPU machine: numpy and JAX only
        return json.loads(json.dumps(LIGHT_DEFAULTS))  # a deep copy
    return schema_defaults()


def expand(preset: dict) -> tuple[dict, dict[str, dict]]:
    """Expand a preset into the full config and its cells, checked as the workflow checks one.

    The checks: config.schema.yaml's (check_schema), then configcheck.check_cross_fields (no
    dependencies: min_measure_s finite, batch_size <= num_samples, sequence_length <= max_len,
    integers, a grid with cells).

    Args:
        preset: the preset's config keys (read_preset).

    Returns:
        The config (api jax_scan unless the preset lists JAX apis; every other key at its
        default, preset_defaults) and its cells by id (cells.cells).

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
            raise ValueError(f"preset: {axis} is missing (a list, e.g. "
                             f"{json.dumps(AXIS_EXAMPLES[axis])})")
    for axis in AXES:
        if axis in preset and not isinstance(preset[axis], list):
            raise ValueError(f"preset: {axis}: {preset[axis]!r} is not a list")
    for api in preset.get("api", []):
        if api not in JAX_APIS:
            raise ValueError(f"preset: api: {api!r} is not one of {list(JAX_APIS)} (this "
                             "command runs no TensorFlow)")
    config = {**preset_defaults(), "api": ["jax_scan"], **preset}
    check_schema(config)
    try:
        check_cross_fields(config)
    except ValueError as error:
        raise ValueError(f"preset: {error}") from None
    return config, grid_cells(config)


def check_schema(config: dict) -> None:
    """Check an expanded preset by config.schema.yaml (configcheck.schema_error).

    That needs jsonschema and PyYAML. Where either is missing (a bare GPU machine), only the
    few checks that keep a run from measuring nothing are made: LIGHT_MINIMUMS, min_measure_s
    a number >= 0, every mode train or inference, device cpu or gpu.

    Args:
        config: the expanded preset.

    Raises:
        ValueError: ``preset: <key path>: <the schema's message>``.
    """
    try:
        import jsonschema  # noqa: F401  (schema_error's)
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
        schema_error(config, json_preset=True)
    except ValueError as error:
        raise ValueError(f"preset: {error}") from None


def plan(config: dict, cells: dict[str, dict]) -> list[tuple[str, str, int]]:
    """List the runs in the workflow's order (plan.job_priorities).

    Args:
        config: the expanded preset (its repeats).
        cells: its cells by id.

    Returns:
        (cell_id, impl, repeat) of each run: repeat by repeat through the grid, static and
        dynamic side by side; the runs a cell takes from another are left out.
    """
    priorities = job_priorities(cells, config["repeats"], shared_runs(cells))
    return sorted(priorities, key=priorities.get, reverse=True)


def one_run(job: dict) -> None:
    """Measure one run in this process and write its result JSON.

    It first takes the machine's measuring lock, as the workflow's measuring jobs do
    (rnnbench.jobs.exclusive), and holds it until this process ends; the result records it
    (``exclusive``). The result is validated against the result schema where jsonschema and
    PyYAML are installed, and written atomically.

    Args:
        job: keys cell_id, cell, impl, repeat, protocol, npz and sidecar (the dataset's
            paths), out (the result path).

    Raises:
        OSError: when the measuring lock cannot be opened (names the path).
    """
    from rnnbench.jobs import exclusive, overlap
    from rnnbench.jobs.jobstart import end_measuring_job

    def say(line: str) -> None:
        print(f"rnnbench jax: {line}", file=sys.stderr, flush=True)

    alone = {**exclusive.measure_alone(say), "others_at_start": overlap.others_measuring()}
    from rnnbench.measure import bench

    arrays, sidecar = data.load_dataset(job["npz"], job["sidecar"])
    result = bench.run(job["impl"], job["cell"], arrays, job["protocol"],
                       {"git": metadata.git_commit(REPO), "image_sha256": None})
    result.update(cell_id=job["cell_id"], repeat=job["repeat"], job_threads=1,
                  data={"path": job["npz"], "sha256": sidecar["sha256"]},
                  exclusive=end_measuring_job(alone, say))
    try:
        from rnnbench.measure.schema import validate_result
    except ImportError:  # no jsonschema or PyYAML here: the aggregation validates it later
        pass
    else:
        validate_result(result)
    out = Path(job["out"])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(out)


def _python(code: str, *args: str, **options) -> subprocess.CompletedProcess:
    """Run ``code`` with ``args`` in a fresh Python (this one's interpreter) that imports this
    rnnbench: PACKAGE_ROOT first on its PYTHONPATH; its output captured as text."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT) + (os.pathsep + path if path else "")}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, **options)


def check_jax(device: str, keras: bool = False) -> None:
    """Import JAX in a fresh Python, as each run does, once before any dataset or run.

    A machine without JAX or Keras, or device gpu where JAX sees no GPU, stops here with
    their own words, instead of failing every run. Prints JAX's version and devices.

    Args:
        device: the config's device, "cpu" or "gpu" (frameworks.import_jax).
        keras: also import Keras on JAX (keras_model.import_keras_jax), for api keras_jax.

    Raises:
        ValueError: naming device (and api keras_jax) and the import's last error lines.
    """
    code = ("import sys; from rnnbench.measure import frameworks; "
            "jax = frameworks.import_jax(sys.argv[1], 1); print(jax.__version__, jax.devices())"
            + ("; from rnnbench.measure import keras_model; print('Keras', "
               "keras_model.import_keras_jax().__version__)" if keras else ""))
    proc = _python(code, device)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        what = "JAX and Keras on it (api keras_jax)" if keras else "JAX"
        raise ValueError(f"device: {device!r}: {what} does not start in {sys.executable}:"
                         f"\n{last}")
    print(f"rnnbench jax: JAX {' '.join(proc.stdout.split())}", flush=True)


def _die_with_parent() -> None:
    """In a run's process before it starts (Linux): SIGKILL it when this command dies, so a
    killed command leaves no run measuring, or holding the GPU, on its own."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the run ends with its steps
        pass


def read_preset(path: str | Path) -> dict:
    """Read the preset in the JSON file ``path``.

    Args:
        path: the preset file.

    Returns:
        Its config keys.

    Raises:
        ValueError: for a file that does not read, is not JSON, holds a key twice or is not
            an object.
    """
    def no_repeats(pairs: list) -> dict:
        keys = [key for key, _ in pairs]
        twice = sorted({key for key in keys if keys.count(key) > 1})
        if twice:
            raise ValueError(f"preset: {', '.join(twice)}: the key appears twice (JSON would "
                             "keep the last): keep one")
        return dict(pairs)

    try:
        preset = json.loads(Path(path).read_text(), object_pairs_hook=no_repeats)
    except OSError as error:
        raise ValueError(f"{path}: {error}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error}): a preset is a JSON object of config "
                         "keys, as presets/jax-tiny.json") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start}): save it as UTF-8") from None
    if not isinstance(preset, dict):
        raise ValueError(f"{path}: a JSON object of config keys, not {preset!r:.60}")
    return preset


def lock_output(out: Path):
    """Make OUT and hold OUT/standalone.lock until this process ends, even killed.

    One command per OUT.

    Args:
        out: the output folder.

    Returns:
        The open lock file: keep it.

    Raises:
        ValueError: OUT locked by another running command.
    """
    out.mkdir(parents=True, exist_ok=True)
    lock = (out / "standalone.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ValueError(f"{out}: another rnnbench jax is writing into this folder "
                         "(standalone.lock): wait for it, or give another OUT") from None
    return lock


def make_datasets(config: dict, out: Path) -> dict[str, tuple[str, str]]:
    """Make each dataset of the grid (cells.datasets) in OUT/data/, as rule make_data does.

    Args:
        config: the expanded preset.
        out: the output folder.

    Returns:
        dataset -> (npz path, sidecar path). A dataset whose two files are there is kept.
    """
    paths = {}
    for dataset, spec in datasets(config).items():
        npz = out / "data" / f"{dataset}.npz"
        if not (npz.exists() and npz.with_suffix(".json").exists()):  # a kill between the two
            npz.parent.mkdir(parents=True, exist_ok=True)
            data.write_dataset(data.make_dataset(**spec), spec, npz, npz.with_suffix(".json"))
        paths[dataset] = (str(npz), str(npz.with_suffix(".json")))
    return paths


def run_all(preset: dict, config: dict, cells: dict[str, dict],
            targets: dict[tuple[str, str, int], Path], out: Path) -> int:
    """Run every run of ``targets`` whose result is missing, each in a fresh Python (one_run).

    Each run is recorded in OUT/standalone.json, with those of earlier calls. A failed run's
    error is recorded, and the others still run.

    Args:
        preset: the preset as read, recorded.
        config: the expanded preset.
        cells: its cells by id.
        targets: (cell_id, impl, repeat) -> result path.
        out: the output folder.

    Returns:
        The exit status: 1 if a run failed, else 0.
    """
    pending = [run for run, target in targets.items() if not target.exists()]
    protocol = {**{key: config[key] for key in PROTOCOL_KEYS}, "log_every": LOG_EVERY}
    log = out / "standalone.json"  # every run so far, across resumed invocations
    record = {"preset": preset, "python": sys.version,
              "runs": json.loads(log.read_text())["runs"] if log.exists() else []}
    paths = make_datasets(config, out)
    code = ("import json, sys; from rnnbench.commands.jax import one_run; "
            "one_run(json.loads(sys.argv[1]))")
    failed = 0
    for cell_id, impl, repeat in pending:
        cell = cells[cell_id]
        job = {"cell_id": cell_id, "impl": impl, "repeat": repeat, "cell": cell,
               "protocol": protocol, "npz": paths[cell["dataset"]][0],
               "sidecar": paths[cell["dataset"]][1], "out": str(targets[(cell_id, impl, repeat)])}
        start = time.perf_counter()
        proc = _python(code, json.dumps(job), preexec_fn=_die_with_parent)
        wall_s = time.perf_counter() - start
        entry = {"cell_id": cell_id, "impl": impl, "repeat": repeat, "wall_s": round(wall_s, 2),
                 "rc": proc.returncode}
        if proc.returncode != 0:
            failed += 1
            entry["error"] = proc.stderr[-2000:]
        cause = next((line for line in reversed(proc.stderr.splitlines()) if line.strip()),
                     f"status {proc.returncode}")
        print(f"rnnbench jax: {cell_id} {impl} repeat {repeat}: {wall_s:.1f} s"
              + ("" if proc.returncode == 0 else
                 f", failed: {cause.strip()} (its traceback: {log})"), flush=True)
        record["runs"].append(entry)
        write_if_changed(log, json.dumps(record, indent=1))  # atomic: a kill leaves it whole
    write_if_changed(log, json.dumps(record, indent=1))  # also when nothing was left to run
    return 1 if failed else 0


def check_same_preset(preset: dict, log: Path) -> None:
    """Refuse an OUT whose standalone.json records another preset's runs.

    standalone.json holds one preset and every run of every call, so a second preset's runs
    would be listed under the first's name. The same preset with other repeats (more runs of
    the same grid) is taken.

    Args:
        preset: the preset as read (read_preset).
        log: OUT/standalone.json; none yet: nothing to check.

    Raises:
        ValueError: naming the file and the keys whose values differ, or a file that is not
            standalone.json's JSON.
    """
    if not log.exists():
        return
    try:
        earlier = json.loads(log.read_text())["preset"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{log}: not a standalone.json of rnnbench jax ({error}): give another "
                         "OUT") from None
    differ = sorted(key for key in {*earlier, *preset} - {"repeats"}
                    if earlier.get(key) != preset.get(key))
    if differ:
        raise ValueError(f"{log.parent} holds the runs of another preset ({', '.join(differ)} "
                         f"differ, e.g. {differ[0]}: {earlier.get(differ[0])!r} there, "
                         f"{preset.get(differ[0])!r} now): give another OUT")


def measure(preset_path: str | Path, out_dir: str | Path) -> int:
    """Check a preset and JAX, then run every planned run still missing (run_all).

    In order: read and check the preset (read_preset, expand); print the grid's warnings
    (configcheck.config_warnings, e.g. unroll values left out); check JAX where a run is
    missing (check_jax); take OUT/standalone.lock.

    Args:
        preset_path: the JSON preset.
        out_dir: the output folder, OUT.

    Returns:
        The exit status (run_all's).

    Raises:
        ValueError: for a preset the checks refuse, JAX that does not start, OUT a file, or
            OUT locked by another running command.
    """
    preset = read_preset(preset_path)
    config, cells = expand(preset)
    for warning in config_warnings(config, cells):  # as the workflow prints them
        print(f"rnnbench jax: {warning}", file=sys.stderr, flush=True)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: a file where the output folder goes: give another OUT")
    check_same_preset(preset, out / "standalone.json")
    runs_dir = out / "runs" / protocol_id(config)
    targets = {run: Path(layout.result_path(runs_dir, *run)) for run in plan(config, cells)}
    if any(not target.exists() for target in targets.values()):  # else nothing to check
        check_jax(config["device"], "keras_jax" in config["api"])
    lock = lock_output(out)  # noqa: F841  (held until this process ends)
    return run_all(preset, config, cells, targets, out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench jax``'s arguments to ``parser``."""
    parser.add_argument("preset", metavar="PRESET", type=existing_file,
                        help="a JSON preset of config keys (e.g. presets/jax-gpu.json)")
    parser.add_argument("out", metavar="OUT", type=output_folder,
                        help="the output folder (runs/, data/, standalone.json); a second "
                             "call with the same OUT measures only the runs still missing")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench jax`` (measure).

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: measure's; 1 with a one-line message for what the checks refuse,
        and for an interrupt.
    """
    try:
        return measure(args.preset, args.out)
    except ValueError as error:
        print(f"rnnbench jax: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the running run's Python dies with it (_die_with_parent)
        print("rnnbench jax: interrupted; the same command measures the runs still missing",
              file=sys.stderr)
        return 1
