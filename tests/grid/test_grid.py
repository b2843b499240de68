"""Config validation (rnnbench.grid.configcheck), grid expansion (rnnbench.grid.cells) and the plan
(rnnbench.grid.plan)."""

import copy
import re

import pytest
import yaml
from snakemake.exceptions import WorkflowError

from conftest import REPO, TINY, snakemake
from fetch_plan import fetch_plan
from rnnbench.grid import axes, configcheck, configfiles, plan
from rnnbench.grid import cells as grid_cells


def shipped_config():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    configcheck.validate_config(config)
    return config


def default_config(**overrides):
    """The schema's defaults at batch_size 32, num_units 64, input_dim 16, with ``overrides``."""
    config = {"batch_size": [32], "num_units": [64], "input_dim": [16], **overrides}
    configcheck.validate_config(config)
    return config


def test_shipped_config_is_the_main_job_the_answer_needs():
    """A cell shaped like the seed's (batch_size = num_units, sequence_length at most a tenth
    of max_len, as its 20 of 300), one with every sequence full length, the loop-bound
    ablation that names the cause of the seed's per-step result, at least 5 fresh processes
    per implementation, and Grappler alone off."""
    config = shipped_config()
    cells = grid_cells.cells(config).values()
    assert any(c["batch_size"] == c["num_units"] and isinstance(c["sequence_length"], int)
               and 10 * c["sequence_length"] <= c["max_len"] for c in cells)
    assert any(c["sequence_length"] == "max_len" for c in cells)
    assert config["loop_bound"] == ["batch_max", "max_len"]
    assert config["repeats"] >= 5 and not config["grappler_alone"]
    assert config["steps"] >= 500


def test_defaults_come_from_the_schema():
    config = {}
    configcheck.validate_config(config)
    assert config["cell"] == ["basic_lstm"]
    assert config["fetches"] == ["loss"] and config["parallel_iterations"] == ["batch_size"]
    assert config["intra_op_parallelism_threads"] == [1] and config["hook_every"] == 100
    assert config["device"] == "cpu"


@pytest.mark.parametrize("bad, fragment", [
    ({"batch_size": [-4]}, "-4 is less than the minimum"),
    ({"batch_size": [0]}, "batch_size"),
    ({"cell": ["lstmm"]}, "'lstmm' is not one of"),
    ({"batchsize": [8]}, "'batchsize' was unexpected); 'batchsize': did you mean 'batch_size'?"),
    ({"device": "tpu"}, "'tpu' is not one of"),
    ({"steps": 1}, "steps"),
    ({"sequence_length": [{"uniform": [3]}]}, "sequence_length.0.uniform: [3] is too short"),
    ({"max_len": []}, "max_len"),
    ({"fetches": ["hook"]}, "'hook' is not one of"),
    ({"parallel_iterations": ["batch"]}, "'batch'"),
    ({"parallel_iterations": [0]}, "0"),
    ({"intra_op_parallelism_threads": [2000]}, "2000 is greater than the maximum of 1024"),
    ({"tf_version": ["2.12", "2.12"]}, "non-unique elements"),
    ({"tf_version": []}, "tf_version"),
])
def test_schema_rejections_name_key_or_value(bad, fragment):
    with pytest.raises(ValueError) as error:
        configcheck.validate_config(bad)
    assert fragment in str(error.value)
    assert len(str(error.value).splitlines()) == 1  # one line, not the schema dump


@pytest.mark.parametrize("bad, fragment", [
    ({"max_len": [10, 25], "sequence_length": [20]}, "20 reaches 20 time steps, above max_len 10"),
    ({"max_len": [8], "sequence_length": [{"uniform": [2, 9]}]}, "above max_len 8"),
    ({"max_len": [8], "sequence_length": [{"uniform": [5, 2]}]}, "[5, 2]"),
    ({"batch_size": [64], "num_samples": 32}, "batch_size: 64 is above num_samples 32"),
    ({"sequence_length": [5, 5]}, "duplicate"),
    ({"batch_size": [4.0]}, "batch_size: 4.0 is not an integer"),
    ({"repeats": 1.0}, "repeats: 1.0 is not an integer"),
    ({"sequence_length": [{"uniform": [1.0, 2]}]}, "sequence_length.uniform: 1.0 is not an integer"),
    ({"repeats": 1_000_000}, "the grid asks for 12000000 training jobs"),
    ({"max_len": [10**9], "sequence_length": [2]}, "num_samples: 1000 sequences of max_len"),
    ({"fetches": ["loss", "hooks"], "warmup_steps": 0}, "hooks needs warmup_steps >= 1"),
])
def test_cross_field_rejections(bad, fragment):
    config = copy.deepcopy(bad)
    with pytest.raises(ValueError) as error:
        configcheck.validate_config(config)
    assert fragment in str(error.value)


def test_sequence_length_ids_and_bounds():
    assert axes.sequence_length_id(20) == "20"
    assert axes.sequence_length_id("max_len") == "full"
    assert axes.sequence_length_id({"uniform": [5, 20]}) == "u5-20"
    assert axes.sequence_length_bounds("max_len", 30) == (30, 30)
    assert axes.sequence_length_bounds({"uniform": [5, 20]}, 30) == (5, 20)
    with pytest.raises(ValueError, match="True"):
        axes.sequence_length_id(True)


def test_tensorflow_versions_name_their_cells_and_share_datasets():
    config = default_config(max_len=[10], sequence_length=[5], api=["compat_v1", "keras"],
                            tf_version=["2.12", "2.21"], meta_optimizer=["on", "off"])
    cells = grid_cells.cells(config)
    assert sorted(cells) == sorted(
        f"basic_lstm_bs32_ml10_sl5_nu64_in16{api}{version}{mo}"
        for api in ("", "_keras") for version in ("_tf2.12", "") for mo in ("", "_nomo"))
    # the version follows the api and precedes the ablations; the venv's version adds nothing
    assert cells["basic_lstm_bs32_ml10_sl5_nu64_in16_keras_tf2.12_nomo"]["tf_version"] == "2.12"
    assert len(grid_cells.datasets(config)) == 1
    # an ablated cell's reference is at its own version
    name = "basic_lstm_bs32_ml10_sl5_nu64_in16_keras_tf2.12_nomo"
    value = grid_cells.Cell.of(cells[name], {"meta_optimizer"})
    assert value.id == name and value.reference_id == name.removesuffix("_nomo")
    # its twin in compat_v1 and itself in the venv's TensorFlow, from its axes
    assert value.compat_v1_id == "basic_lstm_bs32_ml10_sl5_nu64_in16_tf2.12_nomo"
    assert value.default_tf_id == "basic_lstm_bs32_ml10_sl5_nu64_in16_keras_nomo"


def test_cells_cover_the_product_and_share_datasets():
    config = default_config(batch_size=[8, 16], max_len=[10, 20], sequence_length=[5, "max_len"],
                            cell=["basic_lstm", "gru"])
    cells = grid_cells.cells(config)
    assert len(cells) == 2 * 2 * 2 * 2
    assert "gru_bs16_ml20_slfull_nu64_in16" in cells
    # cell type and batch_size do not change the data: 2 max_len x 2 sequence_length datasets
    datasets = grid_cells.datasets(config)
    assert len(datasets) == 4
    assert {c["dataset"] for c in cells.values()} == set(datasets)
    assert datasets["ml10_sl5_in16_cls64_n1000_seed0"]["num_classes"] == 64


def test_ablations_name_their_cells_and_skip_the_redundant_one():
    config = default_config(max_len=[10], sequence_length=[5], loop_bound=["batch_max", "max_len"],
                            pass_sequence_length=[True, False], meta_optimizer=["on", "off"])
    cells = grid_cells.cells(config)
    # 2 x 2 x 2 minus the 2 cells looping to max_len without sequence_length (the same runs)
    assert len(cells) == 6
    base = "basic_lstm_bs32_ml10_sl5_nu64_in16"
    assert set(cells) == {base, f"{base}_nomo", f"{base}_lbmaxlen", f"{base}_lbmaxlen_nomo",
                          f"{base}_nosl", f"{base}_nosl_nomo"}
    assert cells[f"{base}_lbmaxlen_nomo"]["loop_bound"] == "max_len"
    assert cells[f"{base}_lbmaxlen_nomo"]["meta_optimizer"] == "off"
    assert len({c["dataset"] for c in cells.values()}) == 1  # ablations share the data
    # without ablations the ids are those of earlier versions
    assert list(grid_cells.cells(default_config(max_len=[10], sequence_length=[5]))) == [base]


def test_new_ablation_axes_name_their_cells_and_threads():
    config = default_config(max_len=[10], sequence_length=[5], fetches=["loss", "hooks_cold"],
                            parallel_iterations=["batch_size", 1], swap_memory=[False, True],
                            intra_op_parallelism_threads=[1, 2])
    cells = grid_cells.cells(config)
    assert len(cells) == 16
    base = "basic_lstm_bs32_ml10_sl5_nu64_in16"
    name = f"{base}_fhookscold_pi1_swap_intra2"
    assert name in cells and base in cells
    cell = cells[name]
    assert grid_cells.Cell.of(cell).reference_id == base and grid_cells.Cell.of(cells[base]).reference_id == base
    assert grid_cells.ablation_label(cell) == ("hook fetches not warmed up, parallel_iterations 1, "
                                         "swap_memory, 2 intra-op threads")
    assert grid_cells.ablated_axes(cell) == ["fetches", "parallel_iterations", "swap_memory",
                                       "intra_op_parallelism_threads"]
    assert plan.job_threads(cell) == 2 and plan.job_threads(cells[base]) == 1
    assert plan.charted_ablation_axes(list(cells.values())) == [
        "fetches", "parallel_iterations", "swap_memory", "intra_op_parallelism_threads"]
    # an axis at one non-default value everywhere has no reference to chart against
    only = grid_cells.cells(default_config(max_len=[10], sequence_length=[5],
                                     intra_op_parallelism_threads=[2]))
    assert plan.charted_ablation_axes(list(only.values())) == []


@pytest.mark.slow
def test_one_at_a_time_varies_each_ablation_alone():
    config = default_config(max_len=[10, 20], sequence_length=[5], ablation_design="one_at_a_time",
                            fetches=["loss", "hooks", "hooks_cold"], swap_memory=[False, True],
                            meta_optimizer=["on", "off"])
    cells = grid_cells.cells(config)
    # per max_len: the reference, 2 fetches, 1 swap_memory, 1 meta_optimizer ablation
    assert len(cells) == 2 * 5
    assert all(len(grid_cells.ablated_axes(cell)) <= 1 for cell in cells.values())
    assert "basic_lstm_bs32_ml20_sl5_nu64_in16_fhookscold" in cells
    with pytest.raises(ValueError, match=r"swap_memory: an ablation axis with several values "
                                         r"must list its reference False.*\[True, 'x'\]"):
        configcheck.check_cross_fields({**default_config(), "swap_memory": [True, "x"]})
    # the job count bound follows the design: 1000 parallel_iterations alone are 2010 jobs,
    # crossed with the other axes 32000, which is refused
    many = {"max_len": [10], "sequence_length": [5], "repeats": 1,
            "parallel_iterations": ["batch_size", *(n for n in range(1, 1001) if n != 32)],
            "swap_memory": [False, True],
            "fetches": ["loss", "train_op", "hooks", "hooks_cold"], "meta_optimizer": ["on", "off"]}
    default_config(**many, ablation_design="one_at_a_time")
    with pytest.raises(ValueError, match="32000 training jobs"):
        default_config(**many)


@pytest.mark.parametrize("old, fragment", [
    ({"threads": 2}, "threads: 2: removed; a training job's threads follow"),
    ({"fetch_loss": False}, "fetch_loss: False: removed; use fetches: [loss]"),
    ({"intra_op_parallelism_threads": 2}, "intra_op_parallelism_threads: 2: now a list"),
    ({"meta_optimizer": [True, False]}, 'quote "on" and "off"'),
    ({"loop_bound": ["max_len", "batch_max"], "meta_optimizer": ["off"],
      "swap_memory": [True, False]}, None),
    ({"meta_optimizer": ["off", "x"]}, "'x' is not one of"),
    ({"tf_version": [2.10, "2.21"]}, "tf_version: [2.1, '2.21']: quote each version"),
    ({"tf_version": 2.12}, "tf_version: 2.12: a list of quoted versions"),
    ({"tf_version": ["2.21.0"]}, "tf_version: '2.21.0' is not a TensorFlow major.minor version"),
])
def test_old_keys_and_yaml_traps_get_a_hint(old, fragment):
    if fragment is None:  # varied axes listing their reference, in any order: fine
        default_config(**old)
        return
    with pytest.raises((ValueError, WorkflowError)) as error:
        configcheck.validate_config(dict(old))
    assert fragment in str(error.value)


def test_a_varied_axis_needs_its_reference_and_an_empty_grid_is_refused():
    with pytest.raises(ValueError, match="fetches: an ablation axis with several values must "
                                         "list its reference 'loss'"):
        default_config(fetches=["train_op", "hooks"])
    with pytest.raises(ValueError, match=r"the grid has no cell: .*api keras has no "
                                         r"loop_bound setting"):
        default_config(api=["keras"], loop_bound=["max_len"])
    with pytest.raises(ValueError, match=r"the grid has no cell: .*api jax_scan has no "
                                         r"meta_optimizer setting"):
        default_config(api=["jax_scan"], meta_optimizer=["off"])
    with pytest.raises(ValueError, match=r"the grid has no cell: .*jax_scan .* tf_version 2\.21"):
        default_config(api=["jax_scan"], tf_version=["2.12"])
    # keras_jax: Keras on JAX, the same rules as jax_scan, and no unroll factor
    with pytest.raises(ValueError, match=r"the grid has no cell: .*api keras_jax has no "
                                         r"meta_optimizer setting"):
        default_config(api=["keras_jax"], meta_optimizer=["off"])
    with pytest.raises(ValueError, match=r"the grid has no cell: .*keras_jax .* tf_version"):
        default_config(api=["keras_jax"], tf_version=["2.12"])
    with pytest.raises(ValueError, match=r"the grid has no cell: .*api keras_jax has no "
                                         r"unroll factor"):
        default_config(api=["keras_jax"], unroll=[4])
    cells = grid_cells.cells(default_config(api=["keras_jax", "jax_scan"], unroll=["max_len", 2],
                                      sequence_length=[2]))
    # unroll 2 is jax_scan's alone; keras_jax's cells carry their own id suffix
    assert {cell_id.split("_in16")[1] for cell_id in cells} == {"_kerasjax", "_jaxscan",
                                                                 "_jaxscan_u2"}


def test_an_unroll_at_or_above_max_len_is_the_full_unroll():
    # measured once, as unroll max_len, where the grid has that reference
    config = default_config(api=["jax_scan"], max_len=[4, 8], unroll=["max_len", 2, 4],
                            sequence_length=[2])
    unrolls = sorted((c["max_len"], str(c["unroll"])) for c in grid_cells.cells(config).values())
    assert unrolls == [(4, "2"), (4, "max_len"), (8, "2"), (8, "4"), (8, "max_len")]
    assert ("1 combination of the grid's axes left out: an unroll at or above max_len is "
            "unroll max_len (the scan unrolls fully)") in configcheck.config_warnings(config)
    assert not any("dynamic's own loop" in w for w in configcheck.config_warnings(config))
    # unroll 1 alone: static runs dynamic's loop, a comparison of one program with itself
    alone = default_config(api=["jax_scan"], max_len=[4], unroll=[1], sequence_length=[2])
    assert ("unroll: 1 is dynamic's own loop (lax.scan's unroll=1): those jax_scan cells compare "
            "one program with itself, their ratios 1 but for noise; list max_len or a factor "
            "above 1 to measure unrolling") in configcheck.config_warnings(alone)


def test_config_warnings():
    config = default_config(api=["compat_v1", "keras"], fetches=["loss", "hooks"], steps=50,
                            warmup_steps=10, hook_every=100, sequence_length=[2])
    warnings = configcheck.config_warnings(config)
    assert warnings[0] == ("3 combinations of the grid's axes left out: api keras has no "
                           "fetches setting (compat_v1 only)")
    assert "with hook_every 100 no measured step (steps 11 to 60)" in warnings[1]
    # a keras grid's ratio claims are judged in its cells (unroll=True in static's part): no
    # warning about them
    keras = default_config(api=["keras"], mode=["train", "inference"],
                           claims=[{"id": "a", "seed": "s", "statement": "s",
                                    "quantity": "setup_s", "direction": "static > dynamic"}])
    assert configcheck.config_warnings(keras) == []
    hooks = default_config(fetches=["loss", "hooks"], mode=["train", "inference"])
    assert ("6 combinations of the grid's axes left out: mode inference fetches the loss alone "
            "(fetches loss)") in configcheck.config_warnings(hooks)
    assert configcheck.config_warnings(default_config(fetches=["loss", "hooks"], hook_every=20)) == []
    assert configcheck.config_warnings(default_config(repeats=2)) == [
        "repeats: 2 is below 3, the fewest at which the 95 % intervals cover 95 % "
        "(docs/method.md, Intervals); verdicts from this grid are not to be trusted: use "
        "repeats >= 3"]


@pytest.mark.parametrize("text, fragment", [
    ("repeats: 3\nsteps: 500\nrepeats: 4\n", "line 3: repeats: the key appears twice"),
    ("claims:\n  - id: a\n    id: b\n", "line 3: claims.0.id: the key appears twice"),
    ("max_len: [07, 12]\n", "line 1: max_len.0: '07' is read by YAML 1.1 as 7"),
    ("max_len: [010]\n", "'010' is read by YAML 1.1 as 8"),
    ("steps: 1:30\n", "'1:30' is read by YAML 1.1 as 90"),
    ("claims:\n  - at: 3e3\n", r"line 2: claims.0.at: 3e3 is read by YAML 1.1 as the text "
                                r"'3e3' \(an exponent needs a dot before it and a sign\): "
                                r"write 3.0e\+3"),
    ("extrapolate: [1.5e3]\n", r"'1.5e3' .*: write 1.5e\+3"),
])
def test_yaml_that_reads_other_than_it_looks_is_refused(tmp_path, text, fragment):
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=fragment):
        configfiles.check_config_file(path)


def test_plain_config_files_pass_the_yaml_checks():
    """Every shipped config file; seed-claims.yaml, a claims_from list, with keys=False."""
    for path in [REPO / "config.yaml", *(REPO / "presets").glob("*.yaml")]:
        configfiles.check_config_file(path, keys=path.name != "seed-claims.yaml")


def test_check_notes_a_gpu_config_that_a_local_run_here_refuses(tmp_path, monkeypatch, capsys):
    """device: gpu on a machine without a GPU: the workflow refuses a local run and takes a
    cluster run (its nodes are not this machine); rnnbench check said nothing of it."""
    from rnnbench import cli
    from rnnbench.pipeline import hardware

    monkeypatch.setattr(hardware, "gpu_names", lambda *args, **kwargs: [])
    path = tmp_path / "gpu.yaml"
    path.write_text("device: gpu\n")
    assert cli.main(["check", str(path)]) == 0
    out = capsys.readouterr()
    assert "a local run here refuses it: device: 'gpu', but this machine shows no NVIDIA " \
           "GPU" in out.err and "training jobs" in out.out
    monkeypatch.setattr(hardware, "gpu_names", lambda *args, **kwargs: ["NVIDIA H200"])
    assert cli.main(["check", str(path)]) == 0 and "refuses" not in capsys.readouterr().err


def test_check_notes_a_tf_version_that_a_bare_run_here_refuses(tmp_path, capsys):
    """tf_version 2.12 without containers: the workflow refuses a bare run (the venv holds
    2.21) and takes a run in the images; rnnbench check said nothing of it."""
    from rnnbench import cli

    path = tmp_path / "old.yaml"
    path.write_text('tf_version: ["2.12"]\n')
    assert cli.main(["check", str(path)]) == 0
    err = capsys.readouterr().err
    # (without containers; on a Python without 2.12's images, that it has none)
    assert "a bare run here refuses it: tf_version ['2.12']: " in err
    path.write_text('tf_version: ["2.21"]\n')
    assert cli.main(["check", str(path)]) == 0 and "refuses" not in capsys.readouterr().err


@pytest.mark.parametrize("text, fragment", [
    ("", "holds no keys (it is empty, or comments only)"),
    ("# steps: 5\n", "holds no keys (it is empty, or comments only)"),
    ("- steps\n", "is not a mapping of keys at top level"),
])
def test_a_config_file_without_keys_is_refused_as_snakemake_refuses_it(tmp_path, text, fragment,
                                                                        capsys):
    """Snakemake stops on such a --configfile ("Config file must be given as JSON or YAML
    with keys at top level"); rnnbench check said it was fine (6 cells) before."""
    from rnnbench import cli

    path = tmp_path / "grid.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{path}: {fragment}")):
        configfiles.check_config_file(path)
    assert cli.main(["check", str(path)]) == 1 and fragment in capsys.readouterr().err
    if text:  # Snakemake's own answer, once (it reads every such file alike)
        return
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY))
    proc = snakemake(tmp_path, "-n", "--configfile", str(path), check=False)
    assert proc.returncode == 1
    assert "Config file must be given as JSON or YAML with keys at top level" in proc.stdout


@pytest.mark.parametrize("change, fragment", [
    ({"max_len": [8], "sequence_length": [8, "max_len"]},
     "sequence_length: 8 and 'max_len' make one cell at max_len 8"),
    ({"max_len": [8], "sequence_length": [{"uniform": [4, 4]}, 4]},
     "sequence_length: {'uniform': [4, 4]} and 4 make one cell"),
    ({"batch_size": [8], "parallel_iterations": ["batch_size", 8]},
     "parallel_iterations: 'batch_size' and 8 make one cell"),
    ({"extrapolate": {"num_units": [256]}},
     "extrapolate: num_units: [256]: the grid lists one num_units ([8])"),
])
def test_equivalent_axis_values_and_a_law_of_one_value_are_refused(change, fragment):
    """Two spellings of one value gave two cells measuring one thing twice; extrapolate along
    an axis of one value was accepted without a word. (An unroll at max_len beside max_len is
    merged already, with a word: cells.left_out.)"""
    config = {**copy.deepcopy(TINY), **change}
    with pytest.raises(ValueError, match=re.escape(fragment)):
        configcheck.validate_config(config)


def test_every_shipped_preset_passes_the_checks_its_run_makes():
    # snakemake --configfile PRESET: config.yaml, then the preset's keys over it, then the
    # checks before any job (claims against the grid included)
    import copy

    import yaml

    base = yaml.safe_load((REPO / "config.yaml").read_text())
    presets = sorted(p for p in (REPO / "presets").glob("*.yaml") if p.name != "seed-claims.yaml")
    assert len(presets) >= 8
    for path in presets:
        config = {**copy.deepcopy(base), **yaml.safe_load(path.read_text())}
        assert configcheck.check_config_files([path], config, None, REPO), path


def test_a_seed_numpy_cannot_take_is_refused():
    with pytest.raises(ValueError, match="seed: 4294967296 is greater than the maximum"):
        default_config(seed=2**32)


@pytest.mark.parametrize("override, fragment", [
    ({"warmup_steps": 5, "max_warmup_steps": 3}, "max_warmup_steps: 3 is below warmup_steps 5"),
    ({"min_measure_s": float("inf")}, "min_measure_s: inf is greater than the maximum of 86400"),
    ({"min_measure_s": float("nan")}, "min_measure_s: nan is not a finite number"),
])
def test_measurement_settings_that_cannot_run_are_refused(override, fragment):
    with pytest.raises(ValueError, match=fragment):
        default_config(**override)


def test_loop_bound_max_len_alone_keeps_the_full_length_cells():
    """Only with loop_bound batch_max in the grid is the full-length max_len cell redundant."""
    cells = grid_cells.cells(default_config(max_len=[10], sequence_length=[2, "max_len"],
                                      loop_bound=["max_len"]))
    assert sorted(cells) == ["basic_lstm_bs32_ml10_sl2_nu64_in16_lbmaxlen",
                             "basic_lstm_bs32_ml10_slfull_nu64_in16_lbmaxlen"]


def test_the_api_chart_is_planned_as_the_chart_counts_cells_without_ablations():
    """Every cell at 2 intra-op threads is no ablation: the api chart is still planned."""
    two_apis = default_config(max_len=[4], sequence_length=[2], api=["compat_v1", "keras"],
                              intra_op_parallelism_threads=[2])
    assert plan.charts_apis(list(grid_cells.cells(two_apis).values()))
    one_api = default_config(max_len=[4], sequence_length=[2], intra_op_parallelism_threads=[2])
    assert not plan.charts_apis(list(grid_cells.cells(one_api).values()))


def test_one_implementation_ablations_reuse_the_reference_runs():
    """loop_bound, parallel_iterations and swap_memory change dynamic_rnn only: their cells
    take the reference's static runs; loop_bound max_len is left out at full length."""
    config = default_config(max_len=[10], sequence_length=[2, "max_len"],
                            loop_bound=["batch_max", "max_len"], parallel_iterations=["batch_size", 1],
                            meta_optimizer=["on", "off"], ablation_design="one_at_a_time")
    cells = grid_cells.cells(config)
    base = "basic_lstm_bs32_ml10_sl2_nu64_in16"
    assert "basic_lstm_bs32_ml10_slfull_nu64_in16_lbmaxlen" not in cells
    assert grid_cells.shared_runs(cells) == {
        (f"{base}_lbmaxlen", "static"): base,
        (f"{base}_pi1", "static"): base,
        ("basic_lstm_bs32_ml10_slfull_nu64_in16_pi1", "static"):
            "basic_lstm_bs32_ml10_slfull_nu64_in16",
    }
    # Grappler off changes both: nothing shared
    assert (f"{base}_nomo", "static") not in grid_cells.shared_runs(cells)
    # in a product design, the loop-bound twin of a Grappler-off cell takes that cell's runs
    product = grid_cells.cells(default_config(max_len=[10], sequence_length=[2],
                                        loop_bound=["batch_max", "max_len"],
                                        meta_optimizer=["on", "off"]))
    assert grid_cells.shared_runs(product) == {(f"{base}_lbmaxlen", "static"): base,
                                         (f"{base}_lbmaxlen_nomo", "static"): f"{base}_nomo"}


def test_jobs_run_repeat_by_repeat_with_static_and_dynamic_side_by_side():
    config = default_config(max_len=[10], sequence_length=[2, "max_len"],
                            loop_bound=["batch_max", "max_len"], repeats=3)
    cells = grid_cells.cells(config)
    priorities = plan.job_priorities(cells, 3, grid_cells.shared_runs(cells))
    order = sorted(priorities, key=priorities.get, reverse=True)
    a, b = "basic_lstm_bs32_ml10_sl2_nu64_in16", "basic_lstm_bs32_ml10_slfull_nu64_in16"
    twin = f"{a}_lbmaxlen"
    assert (twin, "static", 1) not in priorities  # measured once, in its reference
    assert order[:5] == [(a, "static", 1), (a, "dynamic", 1), (twin, "dynamic", 1),
                         (b, "static", 1), (b, "dynamic", 1)]
    # the next repeat starts with dynamic, so neither side always runs second
    assert order[5:8] == [(a, "dynamic", 2), (a, "static", 2), (twin, "dynamic", 2)]
    assert [job[2] for job in order] == [1] * 5 + [2] * 5 + [3] * 5
    assert min(priorities.values()) >= 1


def test_an_axis_at_one_value_is_everyones_reference():
    """Every cell at 2 intra-op threads: the meta_optimizer twin still ablates its cell."""
    config = default_config(max_len=[10], sequence_length=[5], intra_op_parallelism_threads=[2],
                            meta_optimizer=["on", "off"])
    cells = list(grid_cells.cells(config).items())
    varied = grid_cells.varied_axes([cell for _, cell in cells])
    assert varied == {"meta_optimizer"}
    (ref, ref_cell), (twin, twin_cell) = cells
    assert twin == "basic_lstm_bs32_ml10_sl5_nu64_in16_nomo_intra2"
    assert grid_cells.Cell.of(twin_cell, varied).reference_id == ref
    assert grid_cells.ablation_label(twin_cell, varied) == "no Grappler"
    assert grid_cells.ablation_label(ref_cell, varied) == ""
    assert plan.charted_ablation_axes([c for _, c in cells]) == ["meta_optimizer"]


def test_protocol_id_changes_with_every_timing_setting():
    base = default_config()
    seen = {grid_cells.protocol_id(base)}
    for key, value in [("steps", 51), ("min_measure_s", 0.5), ("warmup_steps", 3),
                       ("max_warmup_steps", 99),
                       ("hook_every", 7), ("device", "gpu"), ("seed", 1), ("num_samples", 500),
                       ("grappler_alone", True)]:
        seen.add(grid_cells.protocol_id({**base, key: value}))
    assert len(seen) == 10
    assert grid_cells.protocol_id({**base, "log_every": 3}) == grid_cells.protocol_id(base)
    # one number, one folder: min_measure_s -0.0, 0 and 0.0 measure alike
    assert len({grid_cells.protocol_id({**base, "min_measure_s": v}) for v in (-0.0, 0, 0.0)}) == 1
    # runs in an image go to a folder of their own, named by the image
    in_image = grid_cells.protocol_id(base, image="rnnbench-cpu-0123456789abcdef")
    assert in_image == grid_cells.protocol_id(base) + "_rnnbench-cpu-0123456789abcdef"


def test_the_hook_warning_agrees_with_the_fetch_plan_and_takes_huge_step_counts():
    """config_warnings computes, rather than lists, whether a measured step fetches the hook
    set: the answer of fetch_plan (what bench does), also for 10^12 steps."""
    base = default_config(fetches=["loss", "hooks"])  # validated once: the schema is slow
    for every in (1, 3, 7, 100):
        for warmup in (1, 2, 6, 99, 100):
            for steps in (1, 5, 50, 200):
                config = {**base, "hook_every": every, "warmup_steps": warmup,
                          "max_warmup_steps": warmup, "steps": max(steps, 2)}
                plan = fetch_plan("hooks", every, warmup, config["steps"])
                warned = any("no measured step" in w for w in configcheck.config_warnings(config))
                assert warned == (not any(plan[1 + warmup:])), (every, warmup, steps)
    huge = default_config(fetches=["loss", "hooks"], hook_every=100, steps=10**7)
    assert not any("no measured step" in w for w in configcheck.config_warnings(huge))
    # no cell fetches hooks where every hooks cell is left out: not compat_v1, or inference
    for changes in ({"api": ["keras_jax"]}, {"mode": ["inference"]}):
        none = default_config(fetches=["loss", "hooks"], hook_every=1000, **changes)
        assert not any("no measured step" in w for w in configcheck.config_warnings(none)), changes


def test_schema_defaults_are_the_schemas_and_fill_a_config():
    """configcheck.schema_defaults: the schema's default of each top-level key (repeats 6,
    as config.yaml), the same values validate_config fills in."""
    defaults = configcheck.schema_defaults()
    assert defaults["repeats"] == 6 and defaults["steps"] == 500
    filled = default_config()
    assert {key: filled[key] for key in defaults if key not in ("batch_size", "num_units",
                                                                 "input_dim")} == {
        key: value for key, value in defaults.items()
        if key not in ("batch_size", "num_units", "input_dim")}


def jobs_of(config, cells):
    """The planned training jobs of a grid (plan.job_priorities at config's repeats)."""
    return plan.job_priorities(cells, config["repeats"], grid_cells.shared_runs(cells))


def test_check_files_returns_the_line_it_prints(tmp_path, monkeypatch):
    """configcheck.check_files (rnnbench check): the merged
    config, its cells and the line that names the files, cells and training jobs."""
    monkeypatch.chdir(REPO)
    config, cells, line = configcheck.check_files(["config.yaml", "tests/tiny.yaml"])
    jobs = plan.job_priorities(cells, config["repeats"], grid_cells.shared_runs(cells))
    assert line == (f"config: config.yaml + tests/tiny.yaml: {len(cells)} cells, "
                    f"{len(jobs)} training jobs")
    config, cells, line = configcheck.check_files([])
    more = plan.job_priorities(cells, config["repeats"] + config["more_repeats"],
                               grid_cells.shared_runs(cells))
    assert line.startswith("config: config.yaml: ") and line.endswith(
        f", and at most {len(more) - len(jobs_of(config, cells))} more where a step ratio is "
        "undecided (more_repeats)")
    bad = tmp_path / "bad.yaml"
    bad.write_text("repeats: 07\n")
    with pytest.raises(ValueError, match="bad.yaml, line 1: repeats: '07'"):
        configcheck.check_files([bad])
