"""The stand-alone JAX command, ``rnnbench jax`` (what runs on a GPU machine with numpy and
JAX alone): on presets/jax-tiny.json it writes the workflow's results and resumes, without
PyYAML, pandas, jsonschema, TensorFlow or Snakemake and without the install; it refuses a bad
preset, a machine without the GPU asked for, and what would mix or lose runs, before any run."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import own_lock

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("yaml", "pandas", "jsonschema", "tensorflow", "snakemake")
"""What a bare GPU machine lacks: ``rnnbench jax`` must not need it."""


def rnnbench_jax(preset, out, blocked=None, timeout=600, env=None):
    """``python -m rnnbench jax PRESET OUT`` as on the GPU machine: not installed, the package
    through PYTHONPATH (``blocked``: a folder of modules that refuse to import, put first;
    ``env``: more environment, e.g. conftest.own_lock's measuring lock)."""
    path = [str(blocked)] if blocked else []
    env = {**os.environ, **(env or {}),
           "PYTHONPATH": os.pathsep.join(path + [str(REPO / "workflow/scripts")])}
    return subprocess.run([sys.executable, "-m", "rnnbench", "jax", str(preset), str(out)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def standalone(workdir):
    """rnnbench jax on presets/jax-tiny.json into ``workdir``, twice: first where HEAVY's
    packages do not import, then in the venv (which finds every result and measures
    nothing: it resumes). Run in the background."""
    blocked = workdir / "blocked"
    blocked.mkdir()
    for name in HEAVY:
        (blocked / f"{name}.py").write_text(f"raise ImportError('no {name} here')\n")
    first = rnnbench_jax(REPO / "presets/jax-tiny.json", workdir / "out", blocked,
                         env=own_lock(workdir))
    second = rnnbench_jax(REPO / "presets/jax-tiny.json", workdir / "out",
                          env=own_lock(workdir))
    return {"first": first, "second": second}


SCENARIOS = {"test_the_standalone_script_writes_the_workflows_results": standalone}


def should_run():
    return True


def test_the_standalone_script_writes_the_workflows_results(scenarios):
    from rnnbench.jobs import exclusive
    from rnnbench.results.sides import read_side
    from rnnbench.stats.summary import summarize
    from rnnbench.measure.schema import validate_result

    workdir, outcome = scenarios["test_the_standalone_script_writes_the_workflows_results"]
    assert outcome["first"].returncode == 0, outcome["first"].stderr
    assert outcome["second"].returncode == 0 and outcome["second"].stdout == ""  # resumed
    out = workdir / "out"
    paths = sorted((out / "runs").rglob("repeat*.json"))
    # 2 repeats of: the cell at unroll max_len (static, dynamic) and at unroll 2 (static; its
    # dynamic is the same runs)
    assert len(paths) == 6
    spans = []
    for path in paths:
        result = json.loads(path.read_text())
        validate_result(result)
        assert result["metadata"]["tf_version"] is None and result["cell"]["api"] == "jax_scan"
        # each run took the machine's measuring lock, as the workflow's jobs do
        assert result["exclusive"]["lock"] == own_lock(workdir)[exclusive.LOCK_VARIABLE]
        spans.append((result["exclusive"]["start_s"], result["exclusive"]["end_s"]))
    spans.sort()
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))
    record = json.loads((out / "standalone.json").read_text())
    assert [run["rc"] for run in record["runs"]] == [0] * 6
    runs = read_side(out / "runs")  # rnnbench compare's reading: the shared dynamic runs added
    assert set(zip(runs["cell_id"], runs["impl"])) == {
        (cell, impl) for cell in ("basic_lstm_bs8_ml6_slu1-6_nu8_in4_jaxscan",
                                  "basic_lstm_bs8_ml6_slu1-6_nu8_in4_jaxscan_u2")
        for impl in ("static", "dynamic")}
    assert len(summarize(runs)) == 2


@pytest.mark.parametrize("change, message", [
    ({"unroll": [0]}, "preset: unroll.0: 0 is less than the minimum of 1"),
    ({"min_measure_s": float("inf")}, "preset: min_measure_s: inf"),
    ({"mode": ["fast"]}, "preset: mode.0: 'fast' is not one of"),
    ({"batch_size": [64]}, "batch_size: 64 is above num_samples 32"),
    ({"steps": 1}, "preset: steps: 1 is less than the minimum of 2"),
    ({"repeats": 0}, "preset: repeats: 0 is less than the minimum of 1"),
    # JSON's quoting named, not YAML's or --config's
    ({"batch_size": ["8"]}, "a number in quotes: write it without them"),
    ({"unroll": ["2"]}, "unroll.0: '2' is not one of ['max_len']; a number in quotes: write"),
    ({"max_len": [True]}, "JSON's true and false are booleans: write the value the schema"),
    ({"api": ["jax_scan", "keras"]}, "preset: api: 'keras' is not one of ['keras_jax', "
                                     "'jax_scan'] (this command runs no TensorFlow)"),
])
def test_the_standalone_script_refuses_a_bad_preset_before_any_run(tmp_path, change, message):
    preset = {**json.loads((REPO / "presets/jax-tiny.json").read_text()), **change}
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    proc = rnnbench_jax(path, tmp_path / "out", timeout=60)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()  # no dataset made, no run started


def test_the_light_defaults_are_the_schemas():
    # a bare GPU machine without PyYAML expands a preset as the venv does
    from rnnbench.commands import jax as standalone

    preset = json.loads((REPO / "presets/jax-tiny.json").read_text())
    light = {**standalone.LIGHT_DEFAULTS, "api": ["jax_scan"], **preset}
    assert standalone.expand(preset)[0] == light


def test_the_standalone_checks_hold_without_jsonschema(monkeypatch):
    # a bare GPU machine may lack jsonschema or PyYAML: the light checks still refuse these
    from rnnbench.commands import jax as standalone

    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema raises
    preset = json.loads((REPO / "presets/jax-tiny.json").read_text())
    standalone.expand(preset)  # the shipped preset passes
    for change, message in (({"repeats": 0}, "repeats: 0 is not an integer >= 1"),
                            ({"min_measure_s": "1"}, "min_measure_s: '1' is not a number"),
                            ({"mode": ["fast"]}, "mode: 'fast' is not one of"),
                            ({"min_measure_s": float("inf")}, "min_measure_s: inf is not a finite")):
        with pytest.raises(ValueError, match=re.escape(message)):
            standalone.expand({**preset, **change})


@pytest.mark.slow
def test_the_standalone_script_stops_once_where_jax_sees_no_gpu(tmp_path):
    from rnnbench.commands import jax as standalone

    if subprocess.run([sys.executable, "-c", "import jax; assert jax.default_backend() != 'gpu'"],
                      capture_output=True).returncode != 0:
        pytest.skip("JAX sees a GPU here")
    with pytest.raises(ValueError, match=r"(?s)device: 'gpu': JAX does not start .*sees no GPU"):
        standalone.check_jax("gpu")


@pytest.mark.slow
def test_the_standalone_script_refuses_what_would_mix_or_lose_runs(tmp_path):
    import fcntl

    tiny = json.loads((REPO / "presets/jax-tiny.json").read_text())

    def run(text, out):
        (tmp_path / "p.json").write_text(text)
        return rnnbench_jax(tmp_path / "p.json", out, timeout=120)

    proc = run('{"steps": 5, "steps": 3}', tmp_path / "out")
    assert proc.returncode == 1 and "preset: steps: the key appears twice" in proc.stderr
    proc = run("[1, 2]", tmp_path / "out")
    assert proc.returncode == 1 and "a JSON object of config keys, not [1, 2]" in proc.stderr
    (tmp_path / "file").write_text("")
    proc = run(json.dumps(tiny), tmp_path / "file")
    assert proc.returncode == 2 and "OUT: " in proc.stderr and "is a file, not a folder" in proc.stderr
    # another script writing into OUT (its lock held here): refused before any run; the
    # grid's warnings come first, as the workflow prints them
    out = tmp_path / "locked"
    out.mkdir()
    with open(out / "standalone.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = run(json.dumps({**tiny, "unroll": ["max_len", 2, 6]}), out)
    assert proc.returncode == 1 and "another rnnbench jax is writing into" in proc.stderr
    assert ("left out: an unroll at or above max_len is unroll max_len" in proc.stderr)
    assert not (out / "data").exists()


def test_an_out_of_another_preset_is_refused_and_more_repeats_taken(tmp_path):
    """standalone.json records one preset and every run: another preset's runs would be
    listed under the first's name (as a user found), so its OUT is refused."""
    from rnnbench.commands import jax as standalone

    tiny = json.loads((REPO / "presets/jax-tiny.json").read_text())
    log = tmp_path / "standalone.json"
    standalone.check_same_preset(tiny, log)  # a new OUT
    log.write_text(json.dumps({"preset": tiny, "runs": []}))
    standalone.check_same_preset({**tiny, "repeats": 9}, log)  # more runs of the same grid
    with pytest.raises(ValueError, match=rf"^{tmp_path} holds the runs of another preset \(steps "
                                         r"differ, e.g. steps: .* there, 6 now\): give another"):
        standalone.check_same_preset({**tiny, "steps": 6}, log)
    log.write_text("{")
    with pytest.raises(ValueError, match=r"standalone.json: not a standalone.json of rnnbench"):
        standalone.check_same_preset(tiny, log)


def test_a_preset_that_is_not_utf8_is_named(tmp_path):
    from rnnbench.commands import jax as standalone

    path = tmp_path / "bin.json"
    path.write_bytes(b'\xff\xfe{"steps": 5}')
    with pytest.raises(ValueError, match=r"bin.json: not UTF-8 text \(byte 0\): save it as UTF-8"):
        standalone.read_preset(path)
    path.write_text("nope{")
    with pytest.raises(ValueError, match=r"bin.json: not JSON \(Expecting value: line 1 column 1 "
                                         r"\(char 0\)\): a preset is a JSON object of config keys"):
        standalone.read_preset(path)
    preset = json.loads((REPO / "presets/jax-tiny.json").read_text())
    del preset["cell"]
    with pytest.raises(ValueError, match=r'preset: cell is missing \(a list, e.g. \["basic_lstm"\]\)'):
        standalone.expand(preset)


@pytest.mark.slow
def test_a_failed_run_is_one_line_and_its_traceback_is_kept(tmp_path):
    """JAX_DISABLE_JIT=1 fails each run (jax's AOT path needs jit): the terminal got each
    run's whole traceback."""
    preset = {**json.loads((REPO / "presets/jax-tiny.json").read_text()), "repeats": 1,
              "unroll": ["max_len"]}
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    proc = rnnbench_jax(path, tmp_path / "out", timeout=300,
                        env={**own_lock(tmp_path), "JAX_DISABLE_JIT": "1"})
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout
    failed = [line for line in proc.stdout.splitlines() if ", failed: " in line]
    assert len(failed) == 2 and all(line.endswith(f"(its traceback: {tmp_path}/out/"
                                                  "standalone.json)") for line in failed)
    record = json.loads((tmp_path / "out/standalone.json").read_text())
    assert all("Traceback" in run["error"] for run in record["runs"])
