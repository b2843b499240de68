"""Every ``rnnbench`` subcommand refuses a bad argument when its command line is read: exit
status 2, the argument and the value named, no traceback, nothing started (a hang here was
``reproduce --cores 0``; tracebacks were ``scale --results 5``'s ``--cells -3``,
``reproduce README.md``, ``compare ... --out README.md``)."""

import pytest

from conftest import REPO
from rnnbench import cli

README = str(REPO / "README.md")
RUNS = str(REPO / "tests" / "fixtures" / "behaviour" / "results" / "runs")
BAD = [
    (["reproduce", "{tmp}/x", "--cores", "0"], "--cores: 0: at least 1"),
    (["reproduce", "{tmp}/x", "--cores", "-2"], "--cores: -2: at least 1"),
    (["reproduce", "{tmp}/x", "--cores", "two"], "--cores: 'two' is not a whole number"),
    (["reproduce", README], f"outdir: {README}: {README} is a file, not a folder"),
    (["reproduce", f"{README}/run"], f"{README} is a file, not a folder"),
    (["reproduce", "{tmp}/x", "--configfile", "nowhere.yaml"], "nowhere.yaml: no such file"),
    (["reproduce", "{tmp}/x", "--configfile", str(REPO)], "a folder, not a file"),
    (["scale", "--results", "0"], "--results: 0: at least 120 (ten cells: a tenth is one cell"),
    (["scale", "--results", "50"], "--results: 50: at least 120"),
    (["scale", "--results", "-5"], "--results: -5: at least 120"),
    (["scale", "--cells", "-3"], "--cells: -3: 0 or more"),
    (["scale", "--repeats", "0"], "--repeats: 0: at least 1"),
    (["scale", "--cells", "1e9"], "--cells: '1e9' is not a whole number"),
    (["compare", RUNS, RUNS + "/..", "--out", README], f"--out: {README}: {README} is a file"),
    (["compare", RUNS, RUNS, "--configfile", "nowhere.yaml"], "nowhere.yaml: no such file"),
    (["probe", "--threads", "0"], "--threads: 0: at least 1"),
    (["probe", "--out", str(REPO)], f"--out: {REPO} is a folder: give a file"),
    (["probe", "--out", f"{README}/probe.json"], f"{README} is a file, not a folder"),
    (["jax", "nowhere.json", "{tmp}/out"], "PRESET: nowhere.json: no such file"),
    (["jax", str(REPO / "presets" / "jax-tiny.json"), README], f"OUT: {README}: {README} is a"),
    (["reference", "--no-run", "--results", README], f"--results: {README}: a file, not a"),
    (["reference", "--no-run", "--results", "/nowhere"], "--results: /nowhere: no such folder"),
    (["reference", "--runs", "0"], "--runs: 0: at least 1"),
    (["reference", "--gap-min", "-1"], "--gap-min: -1: 0 or more"),
    (["predict", "--batch", "0", "--units", "8", "--max-len", "4"], "--batch"),
    (["predict", "--batch", "x", "--units", "8", "--max-len", "4"], "--batch"),
    (["check", "nowhere.yaml"], "nowhere.yaml"),
    (["drift", "/nowhere", str(REPO)], "results: /nowhere: no such folder"),
    (["drift", README, str(REPO)], f"results: {README}: a file, not a folder"),
    (["drift", str(REPO), str(REPO), "--out", README], f"--out: {README}: {README} is a file"),
    (["drift", str(REPO)], "1 results folder given: need two or more runs"),
    (["drift", str(REPO), str(REPO / "docs")], f"{REPO}: no measurements.csv"),
]


@pytest.mark.parametrize("argv, words", BAD, ids=[" ".join(argv[:3]) for argv, _ in BAD])
def test_a_bad_argument_is_refused_in_one_line_naming_it(argv, words, capsys, tmp_path):
    argv = [word.replace("{tmp}", str(tmp_path)) for word in argv]
    try:
        status = cli.main(argv)
    except SystemExit as done:  # argparse's refusal
        status = done.code
    err = capsys.readouterr().err
    assert status in (1, 2) if argv[0] == "check" else status == 2, (status, err)
    assert "Traceback" not in err
    assert words in err.strip().splitlines()[-1], err  # the last line (after argparse's usage)


# Refused while the command line is read: each would otherwise run long (a hang, or hours and
# gigabytes of temporary files), overwrite a user's file, or work in the working folder.
REFUSED_WHEN_READ = [
    (["probe", "--threads", "100000"], "--threads: 100000: at most 1024"),
    (["probe", "--out", "{tmp}/base.yaml"], "--out: {tmp}/base.yaml: exists and is not a probe"),
    (["probe", "--out", "{tmp}/other.json"], "--out: {tmp}/other.json: exists and is not a"),
    (["scale", "--results", "100000000000"], "--results: 100000000000: at most 1000000"),
    (["scale", "--cells", "100001"], "--cells: 100001: at most 100000"),
    (["jax", str(REPO / "presets" / "jax-tiny.json"), ""], "argument OUT: '' is empty"),
    (["reproduce", ""], "argument outdir: '' is empty"),
    (["reproduce", "{tmp}/x", "--configfile", ""], "--configfile: '' is empty"),
    (["compare", "", RUNS, "--out", "{tmp}/c"], "argument a: '' is empty"),
    (["compare", RUNS, " ", "--out", "{tmp}/c"], "argument b: ' ' is empty"),
    (["compare", RUNS, RUNS + "/..", "--out", ""], "--out: '' is empty"),
    (["predict", "--results", "", "--batch", "8", "--units", "8", "--max-len", "4"],
     "--results: '' is empty"),
]


@pytest.mark.parametrize("argv, words", REFUSED_WHEN_READ,
                         ids=[" ".join(argv[:3]) for argv, _ in REFUSED_WHEN_READ])
def test_a_value_that_would_run_long_or_overwrite_is_refused_when_read(argv, words, capsys,
                                                                       tmp_path):
    (tmp_path / "base.yaml").write_text("steps: 5\n")  # a user's config: not a probe record
    (tmp_path / "other.json").write_text('{"kind": "standalone"}\n')
    argv = [word.replace("{tmp}", str(tmp_path)) for word in argv]
    with pytest.raises(SystemExit) as done:  # only read: nothing runs, before or after a mend
        cli.build_parser(argv).parse_args(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2, err
    assert "Traceback" not in err
    assert words.replace("{tmp}", str(tmp_path)) in err.strip().splitlines()[-1], err
    assert (tmp_path / "base.yaml").read_text() == "steps: 5\n"


def test_probe_replaces_only_an_earlier_probe_record(tmp_path):
    earlier = tmp_path / "probe.json"
    earlier.write_text('{"kind": "probe", "schema_version": 1}\n')
    argv = ["probe", "--out", str(earlier), "--threads", "1024"]
    args = cli.build_parser(argv).parse_args(argv)
    assert (args.out, args.threads) == (earlier, 1024)
    argv = ["scale", "--results", "1000000", "--cells", "100000"]  # the caps themselves
    args = cli.build_parser(argv).parse_args(argv)
    assert (args.results, args.cells) == (1_000_000, 100_000)


@pytest.mark.parametrize("name, where, argv", [
    ("probe", "probe_record", ["probe", "--out", "{tmp}/p.json"]),
    ("reproduce", "run_once", ["reproduce", "{tmp}/out"]),
])
def test_ctrl_c_ends_a_command_in_one_line(name, where, argv, capsys, monkeypatch, tmp_path):
    import importlib

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C deep in TensorFlow, or while Snakemake runs

    monkeypatch.setattr(importlib.import_module(f"rnnbench.commands.{name}"), where, interrupted)
    monkeypatch.setenv("RNNBENCH_MEASURING_LOCK", str(tmp_path / "lock"))
    assert cli.main([word.replace("{tmp}", str(tmp_path)) for word in argv]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [f"rnnbench {name}: interrupted"]
    assert not (tmp_path / "p.json").exists()
    if name == "probe":  # the measuring lock it took is let go (the process goes on: it
        import fcntl     # held it, and every later workflow job on the machine waited)
        import os

        fd = os.open(tmp_path / "lock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError while still held
        os.close(fd)
