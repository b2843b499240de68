"""Malformed configs, each rejected before any job by the checks the workflow runs first
(rnnbench.grid.configcheck.check_config_files, called by common.smk), in a message that names the bad key.
A few go through Snakemake itself in test_workflow.test_bad_config_stops_before_any_job."""

import copy
import re

import pytest
import yaml

from conftest import TINY
from rnnbench.grid import configcheck, configfiles

CLAIM = TINY["claims"][0]
# (the key the message must name, what is changed: a dict merged into tests/tiny.yaml, or
# a YAML text appended to it)
CASES = [
    ("batch_size", {"batch_size": [-8]}),
    ("batch_size", {"batch_size": ["8"]}),
    ("batch_size", {"batch_size": [True]}),
    ("batch_size", {"batch_size": [64]}),  # above num_samples 32
    ("max_len", {"max_len": []}),
    ("max_len", {"max_len": [4.5]}),
    ("max_len", {"max_len": 8}),
    ("num_units", {"num_units": [0]}),
    ("num_units", {"num_units": [100_000]}),  # the weights do not fit in memory
    ("input_dim", {"input_dim": "16"}),
    ("cell", {"cell": ["lstmm"]}),
    ("api", {"api": ["keras2"]}),
    ("sequence_length", {"sequence_length": [{"uniform": [1]}]}),
    ("sequence_length.0: Additional properties are not allowed ('unifrom' was unexpected); "
     "'unifrom': did you mean 'uniform'?", {"sequence_length": [{"unifrom": [1, 4]}]}),
    ("sequence_length", {"sequence_length": [9]}),  # above max_len 8
    ("sequence_length", {"sequence_length": [3, 3]}),
    ("steps", {"steps": 0}),
    ("steps", {"steps": "five"}),
    ("repeats", {"repeats": 0}),
    ("min_measure_s", {"min_measure_s": -1}),
    ("min_measure_s", {"min_measure_s": float("inf")}),
    ("warmup_steps", {"warmup_steps": -1}),
    ("max_warmup_steps", {"warmup_steps": 5, "max_warmup_steps": 2}),
    ("seed", {"seed": 2**40}),
    ("seed", {"seed": -1}),
    ("device", {"device": "tpu"}),
    ("tf_version", {"tf_version": [2.21]}),
    ("tf_version", {"tf_version": ["2.x"]}),
    ("meta_optimizer", {"meta_optimizer": [True]}),  # an unquoted on
    ("loop_bound", {"loop_bound": ["forever"]}),
    ("loop_bound", {"loop_bound": ["max_len", "max_len"]}),
    ("pass_sequence_length", {"pass_sequence_length": ["yes"]}),
    ("swap_memory", {"swap_memory": ["no"]}),
    ("fetches", {"fetches": ["everything"]}),
    ("parallel_iterations", {"parallel_iterations": [0]}),
    ("intra_op_parallelism_threads", {"intra_op_parallelism_threads": [0]}),
    ("intra_op_parallelism_threads", {"intra_op_parallelism_threads": 2}),  # now a list
    ("num_samples", {"num_samples": 0}),
    ("max_lenn", {"max_lenn": [4]}),
    ("ablation_design", {"ablation_design": "produkt"}),
    ("claims.0", {"claims": [{k: v for k, v in CLAIM.items() if k != "quantity"}]}),
    ("claims.0.quantity", {"claims": [{**CLAIM, "quantity": "speed"}]}),
    ("claims.0.direction", {"claims": [{**CLAIM, "direction": "static >> dynamic"}]}),
    ("claims.0.id", {"claims": [{**CLAIM, "id": "has space"}]}),
    ("claims.0.statement", {"claims": [{**CLAIM, "statement": "two\nlines"}]}),  # a heading
    ("claims.0.figure", {"claims": [{**CLAIM, "figure": 0}]}),
    ("steps", "steps: 6\n"),  # twice: the file's own steps and this one
    ("hook_every", "hook_every: 1:30\n"),
    ("inter_op_parallelism_threads.0", "inter_op_parallelism_threads: [016]\n"),
    ("hook_every", {"hook_every": 0}),
    ("'max_lenn': did you mean 'max_len'", {"extrapolate": {"max_lenn": [3000]}}),
    ("steps", {"steps": 10**12}),  # would run for ever; fetch_plan once listed every step
    ("warmup_steps", {"warmup_steps": 10**9, "max_warmup_steps": 10**9}),
    ("min_measure_s", {"min_measure_s": 1e12}),
    ("parallel_iterations.0", {"parallel_iterations": [10**12]}),
    ("claims", {"claims": [CLAIM, {**CLAIM, "statement": "again"}]}),  # the same id twice
    ("claims.0.figure", {"claims": [{**CLAIM, "figure": float("nan")}]}),
    ("1", "1: 3\n"),  # a key that is no name
    ("device: False is not of type 'string'; YAML reads an unquoted yes, no, on, off",
     {"device": False}),  # device: off, unquoted
    ("batch_size.0: '8' is not of type 'integer'; a number in quotes (--config passes",
     {"batch_size": ["8"]}),
    # a word list's alternative: the quotes named too (was: "'2' is not one of ['max_len']")
    ("unroll.0: '2' is not one of ['max_len']; a number in quotes (--config passes",
     {"unroll": ["2"]}),
    ("log_every", {"log_every": -2}),
    # a scalar where a list goes (--config api=keras): how to write the list, there too
    ("api: 'keras' is not of type 'array'; a list: write [keras] (on the command line: "
     "--config 'api=[keras]')", {"api": "keras"}),
    ("max_len: 300 is not of type 'array'; a list: write [300], in a file given with "
     "--configfile (--config passes a list's items as text)", {"max_len": 300}),
]


@pytest.mark.parametrize("key, change", CASES, ids=[f"{i}-{key}" for i, (key, _) in
                                                    enumerate(CASES)])
def test_a_malformed_config_is_rejected_naming_the_key(tmp_path, key, change):
    path = tmp_path / "config.yaml"
    if isinstance(change, str):
        path.write_text(yaml.safe_dump(TINY, sort_keys=False) + change)
    else:
        path.write_text(yaml.safe_dump({**copy.deepcopy(TINY), **change}, sort_keys=False))
    config = yaml.safe_load(path.read_text())  # as Snakemake loads it (the last of a key)
    with pytest.raises(ValueError) as error:
        configcheck.check_config_files([path], config, available_mb=16 * 1024)
    message = str(error.value)
    assert key in message, message
    assert "\n" not in message and len(message) < 600, message


def test_the_tiny_config_passes_the_same_checks(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(TINY))
    cells = configcheck.check_config_files([path], yaml.safe_load(path.read_text()), 16 * 1024)
    assert len(cells) == 4


def test_a_yaml_syntax_error_names_file_line_and_column(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("max_len: [4, 8\nbatch_size: [8]\n")
    with pytest.raises(ValueError, match=r"grid.yaml, line 2, column 11: not valid YAML"):
        configcheck.check_config_files([path], {}, None)
    with pytest.raises(ValueError, match=r"nothere.yaml: cannot be read \(No such file"):
        configcheck.check_config_files([tmp_path / "nothere.yaml"], {}, None)
    # a tag SafeLoader cannot construct, a control character, a device: one line each
    for text, said in (("batch_size: !foo [8]\n", r"line 1, column 13: not valid YAML \(could "
                        r"not determine a constructor for the tag '!foo'\)"),
                       ("steps: !!python/object/apply:os.system [ls]\n", r"line 1, column 8: "),
                       ("steps: 5\x00\n", r"not valid YAML \(unacceptable character #x0000: .*"
                        r"position 8\): remove that character$")):
        path.write_text(text)
        with pytest.raises(ValueError, match=r"grid.yaml.*" + said):
            configcheck.check_config_files([path], {}, None)
    with pytest.raises(ValueError, match=r"^/dev/zero: not a regular file"):
        configcheck.check_config_files(["/dev/zero"], {}, None)
    # aliases that expand past any grid (a hang before), hold themselves, or nesting past
    # Python's recursion limit (tracebacks before): one line each, at once
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
        f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    for text, said in (("\n".join(bomb), r": its aliases expand to over 100,000 values"),
                       ("a: &x [*x]\n", r", line 1: an alias inside its own anchor"),
                       ("max_len: " + "[" * 5000 + "]" * 5000, r": nested too deeply")):
        path.write_text(text)
        with pytest.raises(ValueError, match=r"grid.yaml" + said):
            configcheck.check_config_files([path], {}, None)
    path.write_text("batch_size: &b [8, 16]\nnum_units: *b\n")  # an alias, fine
    configfiles.check_config_file(path)


@pytest.mark.slow
def test_rnnbench_check_checks_a_configfile_before_snakemake_does(tmp_path, monkeypatch,
                                                                   capsys):
    """Snakemake reads --configfile files before the workflow: for those ``rnnbench check`` is
    how a user gets the workflow's messages (docs/running.md); it reads them over config.yaml,
    as the workflow does (in-process here: tests/commands/test_install.py runs the command)."""
    from conftest import REPO, snakemake
    from rnnbench import cli

    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(TINY))
    bad.write_text("steps: 1:30\n")
    monkeypatch.chdir(tmp_path)  # no config.yaml here: the workflow's is the base
    assert cli.main(["check", str(good)]) == 0
    # over the workflow's config.yaml, as Snakemake reads a --configfile: its loop-bound
    # ablation adds 2 cells (4 jobs), and the plan of the workflow's dry run agrees
    assert f"config: {REPO / 'config.yaml'} + {good}: 6 cells, 20 training jobs" in \
        capsys.readouterr().out
    plan = snakemake(tmp_path, "-n", "--configfile", str(good)).stdout
    jobs = {impl: int(re.search(rf"train_{impl}\s+(\d+)\n", plan).group(1))
            for impl in ("static", "dynamic")}
    assert sum(jobs.values()) == 20  # (the plan's job table, printed twice: the first)
    assert not (tmp_path / "results").exists()
    assert cli.main(["check", str(good), str(bad)]) == 1
    assert "bad.yaml, line 1: steps: '1:30' is read by YAML 1.1 as 90" in capsys.readouterr().err
    # another folder's config.yaml is that folder's grid, as snakemake --directory reads it:
    # not layered over the workflow's (it was: 6 cells for a file of 4)
    (tmp_path / "grid").mkdir()
    (tmp_path / "grid/config.yaml").write_text(yaml.safe_dump(TINY))
    assert cli.main(["check", str(tmp_path / "grid/config.yaml")]) == 0
    said = capsys.readouterr()
    assert said.out == f"config: {tmp_path / 'grid/config.yaml'}: 4 cells, 16 training jobs\n"
    assert "config: repeats: 2 is below 3" in said.err  # the workflow's warnings, as it says them
    plan = snakemake(tmp_path / "grid", "-n").stdout
    assert sum(int(re.search(rf"train_{impl}\s+(\d+)\n", plan).group(1))
               for impl in ("static", "dynamic")) == 16


def test_a_config_of_ones_own_does_not_inherit_the_seeds_claims(tmp_path, monkeypatch):
    from conftest import REPO

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text((REPO / "config.yaml").read_text())
    shipped = yaml.safe_load((tmp_path / "config.yaml").read_text())
    configcheck.check_config_files(["config.yaml"], shipped, None, REPO)
    assert [c["id"] for c in shipped["claims"]] == ["seed000-start", "seed000-steps",
                                                    "seed003-speed", "seed003-memory"]
    mine = {k: v for k, v in TINY.items() if k != "claims"}
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(mine))
    config, notes = {**yaml.safe_load((tmp_path / "config.yaml").read_text()), **mine}, []
    configcheck.check_config_files([tmp_path / "mine.yaml", "config.yaml"], config, None, REPO, notes)
    assert config["claims"] == [] and notes[0] == (
        f"claims: {tmp_path / 'mine.yaml'} names none, so no claim is judged (config.yaml's "
        "claims_from: ['presets/seed-claims.yaml'] are left out: repeat them in your config file "
        "to judge them too)")
    # a folder's own config.yaml with claims of its own: those are named, not the shipped
    # config's (the line named presets/seed-claims.yaml whatever config.yaml held)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY))
    config, notes = {**TINY, **mine}, []
    configcheck.check_config_files([tmp_path / "mine.yaml", "config.yaml"], config, None, REPO, notes)
    assert notes[0].endswith(f"(config.yaml's claims: ({', '.join(c['id'] for c in TINY['claims'])})"
                             " are left out: repeat them in your config file to judge them too)")
    (tmp_path / "config.yaml").write_text((REPO / "config.yaml").read_text())
    asked = {**mine, "claims_from": ["presets/seed-claims.yaml"]}  # found in the repository
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(asked))
    config = {**yaml.safe_load((tmp_path / "config.yaml").read_text()), **asked}
    configcheck.check_config_files([tmp_path / "mine.yaml", "config.yaml"], config, None, REPO)
    assert len(config["claims"]) == 4
    with pytest.raises(ValueError, match="claims_from: nowhere.yaml: no such file here or in"):
        configcheck.check_config_files([tmp_path / "mine.yaml"], {**asked, "claims_from": ["nowhere.yaml"]},
                            None, REPO)
    with pytest.raises(ValueError, match=f"claims_from: {tmp_path}: a folder, not a file of "
                                         "claims"):  # was: "no such file"
        configcheck.check_config_files([tmp_path / "mine.yaml"],
                                       {**asked, "claims_from": [str(tmp_path)]}, None, REPO)
    twice = ["presets/seed-claims.yaml", str(REPO / "presets/seed-claims.yaml")]
    with pytest.raises(ValueError, match=f"claims_from: {twice[1]}: the same file as "
                                         f"{twice[0]}, listed twice"):  # was: a duplicate id
        configcheck.check_config_files([tmp_path / "mine.yaml"], {**asked, "claims_from": twice},
                                       None, REPO)


def test_claims_from_given_with_config_is_kept_over_a_config_file(tmp_path, monkeypatch):
    """--config claims_from=... with a --configfile: its claims are judged, not dropped."""
    from conftest import REPO

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text((REPO / "config.yaml").read_text())
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(TINY))  # its own claims
    (tmp_path / "more.yaml").write_text(yaml.safe_dump([{**CLAIM, "id": "q"}]))
    overrides = {"claims_from": ["more.yaml"]}
    config = {**yaml.safe_load((tmp_path / "config.yaml").read_text()), **TINY, **overrides}
    configcheck.check_config_files([tmp_path / "mine.yaml", "config.yaml"], config, None, REPO,
                                   overrides=overrides)
    assert [c["id"] for c in config["claims"]] == [CLAIM["id"], "q"]
    config = {**yaml.safe_load((tmp_path / "config.yaml").read_text()), **TINY,
              "claims_from": ["nowhere.yaml"]}
    with pytest.raises(ValueError, match="claims_from: nowhere.yaml: no such file"):
        configcheck.check_config_files([tmp_path / "mine.yaml"], config, None, REPO,
                                       overrides={"claims_from": ["nowhere.yaml"]})
    config = {**TINY, "claims_from": "more.yaml"}  # --config claims_from=more.yaml: text
    with pytest.raises(ValueError, match="claims_from: 'more.yaml' is not a list of files"):
        configcheck.check_config_files([tmp_path / "mine.yaml"], config, None, REPO,
                                       overrides={"claims_from": "more.yaml"})


def test_a_working_directory_without_config_yaml_is_told_where_the_grid_comes_from(tmp_path):
    """Snakemake's --directory elsewhere: the grid is the workflow's config.yaml under the
    --configfile, and the notes say so, in the order the files apply; none with a config.yaml
    in the working directory."""
    from conftest import REPO

    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump(TINY))
    shipped = str(REPO / "config.yaml")
    config, notes = {**yaml.safe_load((REPO / "config.yaml").read_text()), **TINY}, []
    configcheck.check_config_files([shipped, mine], config, None, REPO, notes, shipped)
    assert notes == [f"this working directory has no config.yaml: the grid is read from "
                     f"{shipped}, then {mine} (each later file's keys win)"]
    config, notes = {**yaml.safe_load((REPO / "config.yaml").read_text()), **TINY}, []
    configcheck.check_config_files([mine], config, None, REPO, notes, "config.yaml")
    assert not any("working directory" in note for note in notes)


def test_an_error_names_which_file_set_each_key(tmp_path):
    """A preset's warmup_steps over a config.yaml's max_warmup_steps: the cross-field error
    says where each came from (it read as the preset's alone)."""
    from rnnbench.grid.configfiles import sources_of

    base, preset = tmp_path / "config.yaml", tmp_path / "preset.yaml"
    base.write_text("warmup_steps: 2\nmax_warmup_steps: 2\n")
    preset.write_text("warmup_steps: 100\n")
    message = "max_warmup_steps: 2 is below warmup_steps 100"
    assert sources_of(message, [base, preset]) == (
        f" (warmup_steps from {preset}; max_warmup_steps from {base})")
    assert sources_of(message, [base]) == ""  # one file: it names itself
    assert sources_of("steps: -1 is less than the minimum of 2", [base, preset]) == ""
    # --config's keys win over every file's: named as such (they were blamed on a file)
    assert sources_of(message, [base, preset], {"warmup_steps": 100}) == (
        f" (warmup_steps from --config; max_warmup_steps from {base})")
