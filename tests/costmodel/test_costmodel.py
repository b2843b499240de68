"""The cost model (rnnbench.costmodel.fit, rnnbench.report.why): it recovers known parameters from
synthetic runs, its 95 % intervals cover 95 %, it keeps only the terms a grid identifies, and
its laws along max_len choose their form by the data and never predict a negative time."""

import math

import numpy as np
import pandas as pd
import pytest

from rnnbench.costmodel import check as modelcheck, fit as costmodel
from rnnbench.stats import scaling
from rnnbench.report import why
from rnnbench.grid.flop import step_flop

TRUE = {"static": {"fixed": 2e-4, "per_passed": 3e-5, "per_computed": 5e-5, "per_flop": 1e-10},
        "dynamic": {"fixed": 4e-4, "per_passed": 9e-5, "per_flop": 1.2e-10}}
"""Parameters (s, s per time step, s per FLOP) of the synthetic machine."""


def map_design(batches=(16, 64), units=(32, 128), max_lens=(10, 20, 40), lengths=(3, None),
               repeats=3) -> pd.DataFrame:
    """Runs of presets/reference-map.yaml's design without their times: one row per
    (cell, implementation, repeat); a length None fills max_len."""
    rows = []
    for b in batches:
        for u in units:
            for m in max_lens:
                for length in lengths:
                    computed = float(m if length is None else length)
                    cell_id = f"b{b}u{u}m{m}l{length}"
                    for impl in ("static", "dynamic"):
                        for r in range(repeats):
                            rows.append({
                                "cell_id": cell_id, "base_cell_id": cell_id, "impl": impl,
                                "repeat": r + 1, "cell": "basic_lstm", "api": "compat_v1",
                                "environment": "synthetic", "mode": "train", "input_dim": 16,
                                "batch_size": b, "num_units": u, "max_len": m,
                                "sequence_length": "full" if length is None else str(length),
                                "time_steps_per_step": computed,
                                "train_step_flop": step_flop("basic_lstm", b, 16, u, computed)})
    return pd.DataFrame(rows)


def true_step(runs: pd.DataFrame) -> np.ndarray:
    """The synthetic machine's step seconds of each run."""
    columns = costmodel.design(runs.assign(computed=runs["time_steps_per_step"],
                                           flop=runs["train_step_flop"]))
    out = np.zeros(len(runs))
    for impl, params in TRUE.items():
        mine = (runs["impl"] == impl).to_numpy()
        out[mine] = sum(columns.loc[mine, term] * value for term, value in params.items())
    return out


def simulate(runs: pd.DataFrame, rng: np.random.Generator, spread: float = 0.1) -> pd.DataFrame:
    """``runs`` with log-normal step times about true_step (``spread``: one run's sd on the
    log scale, about the 7-16 % between fresh processes measured here)."""
    return runs.assign(median_step_s=true_step(runs) * np.exp(rng.normal(0, spread, len(runs))))


@pytest.mark.slow
def test_the_fit_recovers_the_parameters_and_its_intervals_cover_95_percent():
    """400 synthetic maps: each parameter's 95 % interval holds the true value, and the
    prediction interval of a new run at a shape off the map (batch 32, 64 units, max_len 30,
    length 12) holds that run, 93-97 % of the time."""
    rng = np.random.default_rng(0)
    design = map_design()
    new = costmodel.shape_rows("basic_lstm", 32, 64, 16, 30, 12)
    new_runs = pd.DataFrame({"impl": ["static", "dynamic"], "time_steps_per_step": 12.0,
                             "train_step_flop": new["flop"].item(), **{
                                 c: new[c].item() for c in ("cell", "batch_size", "num_units",
                                                            "input_dim", "max_len", "mode")}})
    truth = true_step(new_runs)
    held = {(impl, term): 0 for impl, params in TRUE.items() for term in params}
    predicted = 0
    sims = 400
    for _ in range(sims):
        runs = simulate(design, rng)
        for i, impl in enumerate(("static", "dynamic")):
            fit = costmodel.fit_impl(runs, impl)
            assert set(fit.terms) >= set(TRUE[impl])
            for term, value in TRUE[impl].items():
                _, low, high = fit.interval(term)
                held[impl, term] += low <= value <= high
            band = fit.predict(new).iloc[0]
            predicted += band["low"] <= truth[i] * math.exp(rng.normal(0, 0.1)) <= band["high"]
    coverage = {key: count / sims for key, count in held.items()}
    assert all(0.92 <= share <= 0.98 for share in coverage.values()), coverage
    assert 0.93 <= predicted / (2 * sims) <= 0.97


def test_the_estimates_are_the_true_parameters_without_noise():
    runs = map_design(repeats=1).assign(median_step_s=lambda r: true_step(r))
    for impl, params in TRUE.items():
        fit = costmodel.fit_impl(pd.concat([runs, runs.assign(repeat=2)]), impl)
        for term, value in params.items():
            assert fit.interval(term)[0] == pytest.approx(value, rel=1e-6)


def test_a_grid_keeps_only_the_terms_it_identifies():
    """One batch and width: no per-FLOP term (the work per time step is fixed, so it merges
    into the cost per time step); one max_len: static_rnn's conds merge into its fixed cost;
    dynamic_rnn passes what it computes: one term per loop iteration."""
    rng = np.random.default_rng(1)
    runs = simulate(map_design(batches=(32,), units=(32,), max_lens=(24,), lengths=(2, None),
                               repeats=6), rng)
    static, dynamic = (costmodel.fit_impl(runs, impl) for impl in ("static", "dynamic"))
    assert static.terms == ["fixed", "per_computed"]
    assert dynamic.terms == ["fixed", "per_passed"]
    assert "conds" in why.merged_words(static) and "work" in why.merged_words(dynamic)
    full = costmodel.fit_impl(simulate(map_design(), rng), "dynamic")
    assert full.terms[:3] == ["fixed", "per_passed", "per_flop"]


def test_one_cell_with_lengths_drawn_per_batch_identifies_no_cost_per_time_step():
    """One cell whose runs compute slightly different numbers of time steps (lengths drawn per
    batch, as sequence_length uniform gives): the per-run spread is no design, so only the
    fixed cost is identified, and FINDINGS' Why shows no number but what the grid lacks."""
    rng = np.random.default_rng(3)
    one = map_design(batches=(32,), units=(32,), max_lens=(24,), lengths=(12,), repeats=6)
    one["time_steps_per_step"] = 12 + rng.uniform(-0.3, 0.3, len(one))  # per-run draws
    runs = simulate(one, rng).assign(busy=False, environment="e", mode="train",
                                     api="compat_v1")
    assert costmodel.fit_impl(runs, "static").terms == ["fixed"]
    assert costmodel.fit_groups(runs) == []
    section = "\n".join(why.why_section(pd.DataFrame(), runs, {}))
    assert "Not fitted: in compat_v1, basic_lstm (1 cell) every cell computes as many" in section
    assert "a second max_len, or a second sequence_length" in section
    assert not any(char.isdigit() for char in section.split("(1 cell)")[1].split("(e.g.")[0])


@pytest.mark.slow
def test_throughput_that_grows_with_the_matmul_is_found_by_the_f_test():
    """A machine whose cost per FLOP falls 30 % per doubling of the matmul: the richer form
    is kept (p < 0.01); on the constant-throughput machine it is not, but in about 1 % of maps."""
    rng = np.random.default_rng(2)
    design = map_design()
    size = np.log2(design["train_step_flop"] / (3 * design["time_steps_per_step"]) / 1e6)
    bent = design.assign(median_step_s=(true_step(design) - 1e-10 * 0.3 * size
                                        * design["train_step_flop"])
                         * np.exp(rng.normal(0, 0.05, len(design))))
    fit = costmodel.fit_impl(bent, "static")
    assert "per_flop_log2_size" in fit.terms and fit.richer_p < costmodel.RICHER_ALPHA
    kept = sum("per_flop_log2_size" in costmodel.fit_impl(simulate(design, rng), "static").terms
               for _ in range(100))
    assert kept <= 4  # about 1 % of maps by chance


def test_leave_one_out_predicts_held_out_cells_of_the_synthetic_map():
    rng = np.random.default_rng(3)
    runs = simulate(map_design(), rng)
    pair = costmodel.fit_groups(runs)[0]
    table = modelcheck.leave_one_out(pair, runs)
    assert len(table) == 24
    assert table["ratio_error"].abs().median() < 0.1
    assert 0.85 <= table["runs_covered"].sum() / table["runs"].sum() <= 1.0
    assert "24 cells" in modelcheck.error_words(table)


def test_leave_one_out_passes_over_a_cell_whose_runs_of_one_implementation_were_all_busy():
    """A cell with nothing quiet measured for dynamic_rnn (every run flagged busy, so left out
    of the fit: model_runs) has nothing to predict against: it is left out, not an error."""
    rng = np.random.default_rng(4)
    runs = simulate(map_design(), rng).assign(busy=False)
    first = runs["cell_id"].iloc[0]
    runs.loc[(runs["cell_id"] == first) & (runs["impl"] == "dynamic"), "busy"] = True
    table = modelcheck.leave_one_out(costmodel.fit_groups(runs)[0], runs)
    assert len(table) == 23 and first not in set(table["cell_id"])


def test_the_loop_bound_ablation_agrees_with_the_model_or_says_by_how_much_it_does_not():
    """dynamic_rnn's loop run to max_len: the model, fitted without those runs, predicts the
    geometric mean of their steps (a cost per loop iteration); runs 1.5x slower than that
    are said to be 50 % more than it accounts for."""
    rng = np.random.default_rng(7)
    runs = simulate(map_design(), rng).assign(loop_bound="batch_max")
    base = runs[(runs["cell_id"] == "b64u32m40l3") & (runs["impl"] == "dynamic")]
    ablated = base.assign(cell_id="b64u32m40l3_lbmaxlen", loop_bound="max_len",
                          time_steps_per_step=40.0,
                          train_step_flop=step_flop("basic_lstm", 64, 16, 32, 40.0))
    ablated = ablated.assign(median_step_s=true_step(ablated) * np.exp(
        rng.normal(0, 0.1, len(ablated))))
    pair = costmodel.fit_groups(runs)[0]
    agrees = why.loop_bound_check(pair, pd.concat([runs, ablated]))
    assert len(agrees) == 1 and agrees[0].endswith(
        "it agrees with the model's account, a cost per loop iteration."), agrees
    busy = why.loop_bound_check(pair, pd.concat([runs, ablated.assign(busy=True)]))
    assert busy == ["The loop-bound ablation (`b64u32m40l3_lbmaxlen`) is not compared: none of "
                    "its runs is quiet and readable (flagged busy, or no positive step time)."]
    slower = ablated.assign(median_step_s=ablated["median_step_s"] * 1.5)
    said = why.loop_bound_check(pair, pd.concat([runs, slower]))[0]
    assert "more than a cost per loop iteration accounts for" in said
    share = int(said.split("ms: ")[1].split("%")[0])
    assert 35 <= share <= 65


def test_a_run_the_model_cannot_read_is_left_out_not_fatal():
    """A NaN input (time steps, FLOP) or an infinite step in one run leaves that run out of
    the fit (costmodel.finite_runs); before, one NaN failed the whole fit."""
    runs = simulate(map_design(), np.random.default_rng(8))
    runs.loc[0, "time_steps_per_step"] = np.nan
    runs.loc[1, "median_step_s"] = np.inf
    pair = costmodel.fit_groups(runs)[0]
    assert pair["static"].n + pair["dynamic"].n == len(runs) - 2


def test_a_grid_whose_runs_were_all_busy_says_why_it_is_not_explained():
    """The model is fitted to quiet runs only: where the busy flag leaves too few, FINDINGS'
    Why section says so, with the count, instead of vanishing."""
    runs = simulate(map_design(), np.random.default_rng(6)).assign(busy=True)
    section = why.why_section(pd.DataFrame(), runs, {})
    assert section[0] == "## Why: the cost model"
    assert f"Not fitted: {len(runs)} of {len(runs)} runs were flagged busy" in section[2]
    assert why.why_section(pd.DataFrame(), runs.assign(busy=False).iloc[:0], {}) == []


def test_a_prediction_is_never_negative_and_a_shape_off_the_map_is_said_to_extrapolate():
    rng = np.random.default_rng(5)
    pair = costmodel.fit_groups(simulate(map_design(), rng))[0]
    far = costmodel.shape_rows("basic_lstm", 512, 1024, 16, 400, 1)
    for fit in pair.values():
        band = fit.predict(far).iloc[0]
        assert band["step_s"] <= 0 or band["low"] > 0
        words = costmodel.extrapolates(fit, far)
        assert any("batch_size 512" in w for w in words) and any("max_len 400" in w for w in words)
    assert costmodel.extrapolates(pair["static"], costmodel.shape_rows(
        "basic_lstm", 32, 64, 16, 30, 12)) == []
    with pytest.raises(ValueError, match="length 50"):
        costmodel.shape_rows("basic_lstm", 32, 64, 16, 30, 50)


@pytest.mark.parametrize("form", ["linear", "power"])
def test_a_law_takes_the_form_of_the_data(form):
    """Compile time that grows as max_len^2 (as XLA's unrolled compile did in the public
    report: 5x to 54x from max_len 20 to 60) is a power law; a line stays a line. The power
    law's prediction is never negative."""
    rng = np.random.default_rng(6)
    x = np.repeat([20.0, 40.0, 60.0, 80.0], 3)
    truth = 0.5 + 0.1 * x if form == "linear" else 0.002 * x ** 2.2
    y = truth * np.exp(rng.normal(0, 0.05, len(x)))
    law = scaling.fit_law(x, y, at=[240.0])
    assert law["form"] == form
    _, estimate, low, high = law["predictions"][0]
    true_240 = 0.5 + 24 if form == "linear" else 0.002 * 240 ** 2.2
    assert low > 0 and low <= true_240 <= high


def synthetic_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """The summary columns the crossover chart reads, from synthetic runs."""
    medians = runs.groupby(["cell_id", "impl"])["median_step_s"].median().unstack()
    cells = runs.drop_duplicates("cell_id").set_index("cell_id")
    return cells.assign(ratio_median_step_s=medians["static"] / medians["dynamic"]
                        ).reset_index()


@pytest.mark.slow
def test_the_crossover_map_draws_the_model_and_the_measured_cells():
    from rnnbench.report.charts_model import FRACTIONS, crossover_chart, crossover_table

    rng = np.random.default_rng(7)
    runs = simulate(map_design(), rng)
    pair = costmodel.fit_groups(runs)[0]
    table = crossover_table(pair, synthetic_summary(runs))
    model = table[table["kind"] == "model"]
    assert set(model["shape"]) == {f"batch {b}, {u} units" for b in (16, 64) for u in (32, 128)}
    assert len(model) == 4 * len(FRACTIONS) * model["max_len"].nunique()
    assert model["max_len"].max() >= 2.5 * 40 - 1 and model["max_len"].min() <= 5
    measured = table[table["kind"] == "measured"]
    assert len(measured) == 24 and set(measured["fraction"]) == {3 / 10, 3 / 20, 3 / 40, 1.0}
    # the synthetic machine: static wins at full length and short max_len, loses at 3 of 40
    ratio = model.set_index(["shape", "max_len", "fraction"])["ratio"]
    assert ratio["batch 16, 32 units", model["max_len"].min(), 1.0] < 1
    one_max_len = runs[runs["max_len"] == 20]
    assert "does not vary max_len" in str(crossover_chart(synthetic_summary(one_max_len),
                                                          one_max_len).to_dict())


def test_the_fits_written_once_are_the_fits_every_reader_would_make(tmp_path):
    """Rule aggregate writes the run's fits (write_fits); FINDINGS' Why and the crossover
    chart read them (read_fits) and say exactly what fitting the runs again says."""
    runs = simulate(map_design(), np.random.default_rng(3))
    fits = costmodel.fit_groups(runs)
    costmodel.write_fits(fits, tmp_path / "costmodel.json")
    read = costmodel.read_fits(tmp_path / "costmodel.json")
    for pair, again in zip(fits, read, strict=True):
        for impl, fit in pair.items():
            assert again[impl].terms == fit.terms and again[impl].key == fit.key
            assert np.array_equal(again[impl].beta, fit.beta)
            assert np.array_equal(again[impl].cov, fit.cov)
            assert math.isnan(fit.richer_p) == math.isnan(again[impl].richer_p)
        assert why.parameter_table(again).equals(why.parameter_table(pair))
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="bad.json: not a cost model's fits"):
        costmodel.read_fits(tmp_path / "bad.json")
