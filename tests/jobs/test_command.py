"""A training job's command line (rnnbench.jobs.command): formatted as Snakemake formats the
rules' shell command, then read back by the script's parser."""

import shlex
from types import SimpleNamespace

import pytest
from snakemake.utils import format as snakemake_format

from rnnbench.jobs.command import TRAIN_COMMAND, as_json, parse_train_arguments

CELL = {"api": "compat_v1", "cell": "basic_lstm", "max_len": 8, "sequence_length": {
    "uniform": [4, 8]}, "dataset": "d1", "note": "it's \"odd\" $HOME `x`"}


def formatted(folder="runs/p 1", cell=CELL):
    """TRAIN_COMMAND as Snakemake's format() fills it for one job."""
    return snakemake_format(
        TRAIN_COMMAND, threads=2,
        params=SimpleNamespace(python="/opt/my venv/bin/python", script="/repo/train.py",
                               rule="train_dynamic", log_every=100, impl="dynamic",
                               cell=as_json(cell),
                               protocol=as_json({"steps": 4, "seed": 0}),
                               workflow_meta=as_json({"git": None, "image_sha256": None})),
        wildcards=SimpleNamespace(cell="c-1.x", repeat="3"),
        resources=SimpleNamespace(mem_mb=2048, runtime=7),
        input=SimpleNamespace(npz=f"{folder}/d1.npz", sidecar=f"{folder}/d1.json"),
        output=SimpleNamespace(result=f"{folder}/repeat3.json"), log=f"{folder}/it's.log")


def test_the_command_reads_back_as_formatted_quoting_and_all():
    words = shlex.split(formatted())
    # exec: the job replaces the shell (a signal to the group cannot end the shell alone)
    assert words[:3] == ["exec", "/opt/my venv/bin/python", "/repo/train.py"]
    assert words[-2:] == ["2>", "runs/p 1/it's.log"]
    job = parse_train_arguments(words[3:words.index("2>")])
    assert job.cell == CELL and job.protocol == {"steps": 4, "seed": 0}
    assert job.workflow_meta == {"git": None, "image_sha256": None}
    assert (job.rule, job.impl, job.cell_id, job.repeat, job.threads, job.log_every) == (
        "train_dynamic", "dynamic", "c-1.x", 3, 2, 100)
    assert (job.mem_mb, job.runtime_min) == (2048.0, 7.0)
    assert (job.npz, job.sidecar, job.result, job.log) == (
        "runs/p 1/d1.npz", "runs/p 1/d1.json", "runs/p 1/repeat3.json", "runs/p 1/it's.log")


def test_as_json_is_one_text_for_equal_values():
    assert as_json({"b": 1, "a": [1, 2]}) == as_json({"a": [1, 2], "b": 1}) == '{"a":[1,2],"b":1}'


@pytest.mark.parametrize("argument, value, words", [
    ("--cell", "[1, 2]", "not a JSON object"),
    ("--protocol", "{steps: 4}", "not JSON"),
    ("--impl", "both", "invalid choice"),
    ("--repeat", "x", "invalid int value"),
])
def test_a_bad_argument_is_named(argument, value, words, capsys):
    argv = shlex.split(formatted())
    argv = argv[3:argv.index("2>")]
    argv[argv.index(argument) + 1] = value
    with pytest.raises(SystemExit) as stop:
        parse_train_arguments(argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert argument in error and words in error
