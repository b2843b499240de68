"""Verdicts at the interval edges, and FINDINGS.md from a fixed set of result files
(rnnbench.report.findings)."""

import math
import re

import pytest

from conftest import make_result
from rnnbench.report import findings
from rnnbench.stats import formats, tables
from rnnbench.results import load
from rnnbench.stats.summary import summarize
from test_results import hand_made_runs, write_results

CLAIM = {"id": "steps", "seed": "000", "statement": "static trains faster",
         "quantity": "median_step_s", "direction": "static < dynamic", "figure": 0.266}


@pytest.mark.parametrize("direction, low, high, expected", [
    ("static > dynamic", 1.01, 2.0, "holds"),
    ("static > dynamic", 1.0, 2.0, "inconclusive"),  # the interval touches 1
    ("static > dynamic", 0.5, 0.99, "does not hold"),
    ("static > dynamic", 0.5, 1.0, "inconclusive"),
    ("static < dynamic", 0.5, 0.99, "holds"),
    ("static < dynamic", 0.5, 1.0, "inconclusive"),
    ("static < dynamic", 1.01, 2.0, "does not hold"),
    ("static < dynamic", math.nan, math.nan, "inconclusive"),  # one repeat: no interval
])
def test_verdict_at_the_interval_edges(direction, low, high, expected):
    assert tables.verdict(direction, low, high, 0.0) == expected


def test_an_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="'static = dynamic'"):
        tables.verdict("static = dynamic", 0.5, 0.9, 0.1)


def fixed_runs(tmp_path):
    """hand_made_runs (c1: static steps 0.01 s vs 0.02 s; c2: 0.06 s vs 0.03 s) plus c1 with
    Grappler off, where static's steps take 0.005 s (its ratio 0.25 against c1's 0.5) and
    its first step 0.5 s instead of 2 s; dynamic's setup is unchanged."""
    paths = hand_made_runs(tmp_path / "base")
    twins = []
    for impl, step, setup in (("static", 0.005, (1.0, 0.5, 0.5)), ("dynamic", 0.02, (0.2, 0.1, 0.2))):
        for repeat in (1, 2, 3):
            record = make_result(impl, "c1_nomo", repeat, step_s=(step,) * 3, setup=setup)
            record["cell"]["meta_optimizer"] = "off"
            twins.append(record)
    (tmp_path / "twin").mkdir()
    return load.load_results(paths + write_results(tmp_path / "twin", twins))


def test_claim_table_and_findings_from_fixed_results(tmp_path):
    (tmp_path / "base").mkdir()
    runs = fixed_runs(tmp_path)
    summary = summarize(runs)
    table = tables.claim_table(summary, [CLAIM], 0.1).set_index("cell_id")
    assert table.loc["c1", "verdict"] == "holds"  # 0.5 [0.5, 0.5]: identical repeats
    assert table.loc["c2", "verdict"] == "does not hold"  # static slower: 2.0
    assert table.loc["c1_nomo", "ablations"] == "no Grappler"
    assert not table.loc["c1", "figure_in_interval"]  # 0.266 is outside [0.5, 0.5]

    text = findings.findings_markdown(summary, runs, [CLAIM],
                                      {"margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert "### steps: static trains faster" in text
    marked = {**CLAIM, "statement": "static <b>trains</b> faster & leaner"}  # config text
    text_marked = findings.findings_markdown(summary, runs, [marked], {
        "margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert "### steps: static &lt;b&gt;trains&lt;/b&gt; faster &amp; leaner" in text_marked
    assert "<b>" not in text_marked
    # runs measured from an edited working tree: said, with their count (they are pooled:
    # an edited config.yaml makes the tree dirty)
    assert "git dirty" not in text
    edited = runs.assign(git_dirty=[True, True] + [False] * (len(runs) - 2))
    text_edited = findings.findings_markdown(summary, edited, [CLAIM], {
        "margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert (f" 2 of {len(runs)} runs were measured with uncommitted changes to the workflow's "
            "tracked files (git dirty; an edited config.yaml counts)") in text_edited
    # the bottom line first, a sentence per claim over the reference cells
    assert text.index("## Bottom line") < text.index("## Where this was measured")
    # the claim's source, then its verdicts per api, counted over the cells without an
    # ablation (the table beside it has three rows: the third is an ablation)
    assert ("- **steps**: seed 000 says \"static trains faster\".\n"
            "  - In compat_v1 (static_rnn / dynamic_rnn), it holds in 1 and does not hold in 1 "
            "of 2 cells without an ablation (0.50 to 2.00).\n"
            "  - The claim's 0.27 lies outside every interval.\n") in text
    assert "What was measured: a basic_lstm of 8 units, batch 4, 3 inputs, padded to " \
           "max_len 10 or 20." in text
    # the method after the results
    assert text.index("## Break-even") < text.index("## Method") < text.index("## Cells")
    # cells named by what varies (max_len and sequence_length here), ids in the last table
    assert tables.cell_labels(summary) == {
        "c1": "max_len 10, sequences of 5 steps", "c2": "max_len 20, sequences that fill max_len",
        "c1_nomo": "max_len 10, sequences of 5 steps, no Grappler"}
    assert re.search(r"\| max_len 20, sequences that fill max_len +\| 2.00 \[2.00, 2.00\] +\| "
                     r"dynamic faster by more than 10 % +\| does not hold +\|", text)
    assert re.search(r"\| max_len 20, sequences that fill max_len +\| `c2` +\|", text)
    share = (math.log(0.25) - math.log(0.5)) / (math.log(0.266) - math.log(0.5))
    assert (f"- max_len 10, sequences of 5 steps with no Grappler: ratio 0.25 [0.25, 0.25] (holds), against 0.50 "
            f"[0.50, 0.50] (holds) without; it closes {100 * share:.0f} % of the log-ratio "
            f"gap to the claim's 0.27.") in text
    assert "TensorFlow 2.21.0; no container (bare run); on cpu" in text
    assert re.search(r"\| max_len 10, sequences of 5 steps +\| 301 \[301, 301\] +\|", text)
    assert re.search(r"\| max_len 20, sequences that fill max_len +\| never +\|", text)
    assert "leaving out one repeat moves a ratio's interval to the other side of 1, or onto " \
           "it; the ratios named): 0 of 3 cells." in text
    # what the ablation does to each implementation: static's steps halve, dynamic's do not
    effects = tables.ablation_effects(runs).set_index(["cell_id", "impl", "metric"])
    assert effects.loc[("c1_nomo", "static", "median_step_s"), "ratio"] == pytest.approx(0.5)
    assert effects.loc[("c1_nomo", "dynamic", "median_step_s"), "ratio"] == pytest.approx(1.0)
    assert effects.loc[("c1_nomo", "static", "setup_s"), "base_cell_id"] == "c1"
    assert re.search(r"\| max_len 10, sequences of 5 steps \| no Grappler +\| 0.57 \[0.57, 0.57\] "
                     r"\| 0.50 \[0.50, 0.50\] +\| 0.50 \[0.50, 0.50\] +\| 1.00 \[1.00, 1.00\]",
                     text)
    # where the setup goes: static's first step loses 1.5 s without Grappler, a third of its
    # time to the 100th step (3.5 s setup + 99 x 0.01 s)
    split = tables.setup_split(runs).set_index("impl")
    assert split.loc["static", "optimisation_s"] == pytest.approx(1.5)
    assert split.loc["static", "optimisation_share_of_first_100"] == pytest.approx(1.5 / 4.49)
    assert split.loc["dynamic", "optimisation_s"] == pytest.approx(0.0)
    assert re.search(r"\| max_len 10, sequences of 5 steps \| static +\| +1 +\| +0.5 +\| +2 +\| "
                     r"+0.5 +\| +1.5 +\| +4.49 +\| 33 %", text)


def test_a_grid_where_every_cell_is_ablated_has_reference_cells(tmp_path):
    """Every cell at 2 intra-op threads: no cell without ablations, so each is its own
    reference (counted in the claims), and no ablation effect is reported."""
    records = [make_result(impl, "c1_intra2", repeat, intra_op_parallelism_threads=2,
                           step_s=(step,) * 3)
               for impl, step in (("static", 0.01), ("dynamic", 0.02)) for repeat in (1, 2)]
    runs = load.load_results(write_results(tmp_path, records))
    summary = summarize(runs)
    assert tables.claim_table(summary, [CLAIM], 0.1)["reference"].all()
    assert tables.ablation_effects(runs).empty
    text = findings.findings_markdown(summary, runs, [CLAIM],
                                      {"margin": 0.1, "repeats": 2, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert "In compat_v1 (static_rnn / dynamic_rnn), it holds in the one cell (0.50)." in text
    assert "No cell of this grid ablates another (the ablation axes at one value each): " \
           "no cause is isolated here." in text
    assert "No cell of this grid ablates another" in text
    assert "Not isolated: no cell of this grid has a twin with Grappler off" in text


def test_a_jax_grid_is_not_told_to_turn_grappler_off(tmp_path):
    records = [make_result(impl, f"c1_{api}", repeat, api=api, step_s=(step,) * 3)
               for api in ("keras_jax", "jax_scan")
               for impl, step in (("static", 0.01), ("dynamic", 0.02)) for repeat in (1, 2)]
    runs = load.load_results(write_results(tmp_path, records))
    text = findings.findings_markdown(summarize(runs), runs, [CLAIM],
                                      {"margin": 0.1, "repeats": 2, "steps": 3, "warmup_steps": 1,
                                       "max_warmup_steps": 1})
    assert "Not isolated by Grappler: the grid's apis run on JAX, which has none" in text
    assert "twin with Grappler off" not in text
    # keras_jax's setup in its own words, and in For Keras users
    assert "times the setup of unroll=False (tracing and lowering, XLA compilation + first " \
           "call, model setup)" in text


def test_the_cold_fetch_pitfall_is_reported(tmp_path):
    records = [make_result(impl, "c1_fhookscold", repeat, fetches="hooks_cold",
                           step_s=(2.0,) + (0.01,) * 9)
               for impl in ("static", "dynamic") for repeat in (1, 2)]
    runs = load.load_results(write_results(tmp_path, records))
    text = findings.findings_markdown(summarize(runs), runs, [],
                                      {"margin": 0.1, "repeats": 2, "steps": 10, "warmup_steps": 1, "max_warmup_steps": 1})
    # mean (2 + 9 x 0.01) / 10 = 0.209 s against the median 0.01 s
    assert ("- `c1_fhookscold` static: the hook fetch set's first run, inside the timed loop, "
            "took 2.000 s against a median step of 0.0100 s (200x); over 10 measured steps the "
            "mean step is 20.90x the median.") in text


def test_the_versions_section_lists_each_cell_per_tensorflow_version(tmp_path):
    records = [make_result(impl, cell_id, repeat, tf_version=version,
                           step_s=(0.01 if impl == "static" else step,) * 3)
               for cell_id, version, step in (("c1", "2.21", 0.02), ("c1_tf2.12", "2.12", 0.005),
                                              ("c2", "2.21", 0.02))
               for impl in ("static", "dynamic") for repeat in (1, 2)]
    runs = load.load_results(write_results(tmp_path, records))
    summary = summarize(runs)
    table = tables.version_table(summary, runs)
    assert table["cell_id"].tolist() == ["c1_tf2.12", "c1"]  # c2 ran in one version only
    assert table["stem"].tolist() == ["c1", "c1"]
    text = findings.findings_markdown(summary, runs, [], {"margin": 0.1, "repeats": 2, "steps": 3,
                                                         "warmup_steps": 1, "max_warmup_steps": 1})
    assert "TensorFlow 2.12.0, TensorFlow 2.21.0; no container (bare run)" in text
    assert "## Across TensorFlow versions" in text
    # static steps 0.01 s against dynamic 0.005 s in 2.12, 0.02 s in 2.21
    # the cell named without its version (a column of its own)
    assert re.search(r"\| max_len 10, sequences of 5 steps \(c1\) \| 2.12.0 +\| 3.50 / 3.50 +\| "
                     r"1.00 \[1.00, 1.00\] +\| 10.00 / 5.00 +\| 2.00 \[2.00, 2.00\] +\|", text)
    assert re.search(r"\| max_len 10, sequences of 5 steps \(c1\) \| 2.21.0 +\| 3.50 / 3.50 +\| "
                     r"1.00 \[1.00, 1.00\] +\| 10.00 / 20.00 +\| 0.50 \[0.50, 0.50\] +\|", text)
    one = findings.findings_markdown(*_one_version(tmp_path), [], {"margin": 0.1, "repeats": 2, "steps": 3,
                                                                  "warmup_steps": 1, "max_warmup_steps": 1})
    assert "Across TensorFlow versions" not in one


def _one_version(tmp_path):
    (tmp_path / "one").mkdir()
    runs = load.load_results(hand_made_runs(tmp_path / "one"))
    return summarize(runs), runs


def test_claims_are_judged_in_keras_cells(tmp_path):
    """A keras grid: unroll=True plays static_rnn's part, unroll=False dynamic_rnn's."""
    records = [make_result(impl, "c1_keras", repeat, api="keras",
                           step_s=(0.01 if impl == "static" else 0.02,) * 3)
               for impl in ("static", "dynamic") for repeat in (1, 2)]
    runs = load.load_results(write_results(tmp_path, records))
    text = findings.findings_markdown(summarize(runs), runs, [CLAIM],
                                      {"margin": 0.1, "repeats": 2, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert "  - In keras (unroll=True / unroll=False), it holds in the one cell (0.50)." in text
    assert "unroll=True against unroll=False (keras)" in text
    assert "## For Keras users" in text and "### steps" in text


def test_no_claims_and_an_unknown_quantity(tmp_path):
    runs = load.load_results(hand_made_runs(tmp_path))
    summary = summarize(runs)
    text = findings.findings_markdown(summary, runs, [], {"margin": 0.1, "repeats": 3, "steps": 3,
                                                          "warmup_steps": 1, "max_warmup_steps": 1})
    assert "The config lists no claims" in text
    with pytest.raises(ValueError, match="quantity 'speed'"):
        tables.claim_table(summary, [{**CLAIM, "quantity": "speed"}], 0.1)


def test_interval_text_shows_an_interval_that_is_not_a_point():
    assert formats.interval_text(1.4851, 1.1606, 1.9003) == "1.49 [1.16, 1.90]"
    assert formats.interval_text(1.2224, 1.2218, 1.2231) == "1.222 [1.222, 1.223]"
    assert formats.interval_text(0.5, 0.5, 0.5) == "0.50 [0.50, 0.50]"
    # a bound from 2 repeats 1000x apart: not 21 digits
    assert formats.interval_text(24.04, 0.0, 2.986e20) == "24.04 [0.00, 2.99e+20]"
    # a claim's own ratio: never 0.00 for a tiny one
    assert [formats.figure_text(f) for f in (4.0, 0.25, 1e-300, 0.004)] == [
        "4.00", "0.25", "1e-300", "0.004"]


def test_a_verdict_one_process_decides_is_marked(tmp_path):
    """Static's steps slower by 2-7 % in five pairs, 1.9x faster in one: the cell is
    unstable, and its step-time claim row says one process decides it."""
    records = []
    for repeat in range(1, 7):
        records.append(make_result("static", "c1", repeat,
                                   step_s=(0.0200 * (1.01 + 0.01 * repeat),) * 3))
        records.append(make_result("dynamic", "c1", repeat, step_s=(0.0200,) * 3))
    records[10]["timings"]["median_step_s"] = 0.0105  # static, repeat 6
    runs = load.load_results(write_results(tmp_path, records))
    summary = summarize(runs)
    table = tables.claim_table(summary, [CLAIM, {**CLAIM, "id": "memory",
                                                   "quantity": "peak_rss_mb"}], 0.1)
    assert table.set_index("claim").loc["steps", "fragile"]
    assert not table.set_index("claim").loc["memory", "fragile"]
    text = findings.findings_markdown(summary, runs, [CLAIM], {
        "margin": 0.1, "repeats": 6, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert ("| inconclusive (the interval holds 1 and reaches past the 10 % margin) (one process "
            "decides it) |") in text
    assert "*One process decides it*: leaving out one repeat" in text


def test_findings_name_every_environment_and_host(tmp_path):
    records = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic")
               for repeat in (1, 2)]
    records[1]["metadata"]["hostname"] = "node2"
    runs = load.load_results(write_results(tmp_path, records))
    text = findings.findings_markdown(summarize(runs), runs, [], {
        "margin": 0.1, "repeats": 2, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert ("environments (each cell's runs come from one, never pooled across them; hosts of one environment may share a cell): cpu (2 CPUs), CPU, "
            "TensorFlow 2.21.0 (CPU build), Python 3.11, bare, host(s) h, node2: 4 runs") in text


def test_a_fixed_warm_up_is_not_called_settled(tmp_path):
    """With max_warmup_steps below 40 no settle test runs (warmup_settled empty): FINDINGS
    says the warm-up was fixed."""
    runs = load.load_results(hand_made_runs(tmp_path))
    text = findings.findings_markdown(summarize(runs), runs, [], {
        "margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert "a fixed warm-up of 1 steps (max_warmup_steps 1 leaves no room for the settle " \
           "test, which needs 40)" in text
    assert "went on until the step times had settled" not in text


def test_a_disturbed_stretch_is_counted_over_the_runs_long_enough_to_show_one():
    """steady.block_spread needs two 50-step blocks: runs of fewer measured steps are not
    counted as undisturbed (a breaker found '0 of the 12 runs' for runs of 20 steps)."""
    import pandas as pd

    from rnnbench.report.sections import _disturbed_count

    runs = pd.DataFrame({"block_spread": [0.05, 0.30, None, None],
                         "disturbed": [False, True, False, False]})
    assert _disturbed_count(runs) == ("1 of the 2 runs long enough to tell (2 of 4 measured "
                                      "fewer than 100 steps) had a disturbed stretch")
    assert _disturbed_count(runs.iloc[:2]) == "1 of the 2 runs measured had a disturbed stretch"
    assert _disturbed_count(runs.iloc[2:]) == ("No run measured the 100 steps it takes to tell "
                                               "a disturbed stretch")


def _findings_of(tmp_path, records, repeats=2):
    runs = load.load_results(write_results(tmp_path, records))
    return findings.findings_markdown(summarize(runs), runs, [],
                                      {"margin": 0.1, "repeats": repeats, "steps": 3,
                                       "warmup_steps": 1, "max_warmup_steps": 1})


def test_an_inference_grid_is_not_said_to_train(tmp_path):
    """An inference-only JAX grid's FINDINGS described 'a jit-compiled train step, TF1's
    Adam': the Method and For JAX users now say what its steps ran, forward pass alone."""
    records = [make_result(impl, "c1_jaxscan_inference", repeat, api="jax_scan",
                           mode="inference", step_s=(step,) * 3)
               for impl, step in (("static", 0.01), ("dynamic", 0.02)) for repeat in (1, 2)]
    text = _findings_of(tmp_path, records)
    assert "Adam" not in text and "train step" not in text
    method = text.split("## Method")[1]
    assert ("What a measured step runs (jax_scan, mode inference): one call of a jit-compiled "
            "step: the jax.lax.scan forward pass and loss alone, no gradient or optimizer."
            in method)
    assert "(api jax_scan; mode inference: one call of a jit-compiled step" in text


def test_the_method_says_what_each_api_and_mode_ran(tmp_path):
    records = [make_result(impl, f"c1_{api}_{mode}", repeat, api=api, mode=mode,
                           step_s=(step,) * 3)
               for api in ("compat_v1", "keras") for mode in ("train", "inference")
               for impl, step in (("static", 0.01), ("dynamic", 0.02)) for repeat in (1, 2)]
    method = _findings_of(tmp_path, records).split("## Method")[1]
    assert "What a measured step runs, per api and mode:" in method
    assert ("- compat_v1, mode train: one Session.run of the TF1 graph: the forward pass, the "
            "loss, the backward pass and TF1's Adam (tf.compat.v1.train.AdamOptimizer)."
            in method)
    assert "- compat_v1, mode inference: one Session.run of the TF1 graph's forward pass" in method
    assert "- keras, mode train: one call of a tf.function" in method
    assert "- keras, mode inference: one call of a tf.function: the layer's forward pass" in method


def test_a_grid_with_too_few_runs_says_why_it_has_no_cost_model(tmp_path):
    """Two cells of one repeat each identify the model's terms but cannot fit them: FINDINGS
    had no Why section and no word on why; it now names the runs short of the terms."""
    records = [make_result(impl, cell, 1, max_len=max_len, sequence_length=length,
                           step_s=(step * max_len,) * 3)
               for cell, max_len, length in (("a", 10, 5), ("b", 20, 10))
               for impl, step in (("static", 0.002), ("dynamic", 0.001))]
    text = _findings_of(tmp_path, records, repeats=1)
    assert "## Why: the cost model" in text
    assert ("Not fitted: too few runs." in text
            and "here compat_v1, basic_lstm, static: 2 runs for 2 terms" in text)


def test_the_probes_of_rule_peak_are_said_once_each_and_none_without():
    """Where this was measured gives each probe's unit costs (sections.probe_lines), naming
    its TensorFlow where there are several; a GPU's peak (no probe) or an older record
    says nothing."""
    from rnnbench.report.sections import probe_lines

    probe = {"unit_costs": {"while_iteration_s": 4e-6, "loop_op_pair_s": 7e-7,
                            "op_pair_s": 5e-7, "cond_skipped_s": 1.6e-6,
                            "graph_construction_s_per_node": 3e-4,
                            "session_setup_s_per_node": 1.3e-4},
             "matmul": [{"forward_flop_per_s": 15e9}, {"forward_flop_per_s": 124e9}]}
    peak = {"probe": probe, "tf_version": "2.21",
            "metadata": {"intra_op_parallelism_threads": 1}}
    line, = probe_lines([peak, {"probe": None}, {"peak": {}}])
    assert ("a while_loop iteration 4 µs; a multiply-add pair 0.7 µs in the loop and 0.5 µs "
            "unrolled; a skipped cond 1.6 µs; 300 µs of graph construction and 130 µs of "
            "Session setup per node; matmul forward 15 to 124 GFLOP/s") in line
    busy = {**probe, "unit_costs": {**probe["unit_costs"], "while_iteration_s": -6e-7}}
    assert "a while_loop iteration not resolved (slope <= 0);" in probe_lines(
        [{**peak, "probe": busy}])[0]
    two = probe_lines([peak, {**peak, "tf_version": "2.12"}])
    assert len(two) == 2 and "(TensorFlow 2.12, 1 intra-op threads)" in two[1]


def test_runs_of_several_snakemake_runs_are_said_so(tmp_path):
    """Cells measured in two invocations were compared under 'the spread between fresh
    processes within this one run' without a word."""
    records = [make_result(impl, cell, repeat, step_s=(step,) * 3)
               for cell in ("c1", "c2") for impl, step in (("static", 0.01), ("dynamic", 0.02))
               for repeat in (1, 2)]
    for record in records:
        record["metadata"]["snakemake_run"] = "2026-12-06T07:00:00Z-1"
    for name in ("one", "two", "three"):
        (tmp_path / name).mkdir()
    one = _findings_of(tmp_path / "one", records)
    assert "Snakemake runs" not in one and "within this one run." in one
    records[-1]["metadata"]["snakemake_run"] = "2026-12-06T07:10:00Z-2"  # c2 resumed later
    for record in records[:4]:
        record["metadata"]["snakemake_run"] = None  # c1 measured by hand
    text = _findings_of(tmp_path / "two", records)
    assert ("- **Measured in 2 Snakemake runs** (and 4 runs that record none): 1 of 2 cells "
            "mix results of more than one, and cells measured in different ones are compared "
            "here.") in text
    assert "within a run (these come from several: see the bottom line)." in text
    assert findings.snakemake_runs(load.load_results(write_results(tmp_path / "three",
                                                                   records))) == (2, 4, 1)


def test_repeats_too_few_to_disagree_are_not_said_to_agree(tmp_path):
    """With 2 repeats 1000x apart, Stability said 'Repeats that disagree ...: none.'"""
    records = [make_result(impl, "c1", repeat, step_s=(step * (1000 if repeat == 2 else 1),) * 3)
               for impl, step in (("static", 0.01), ("dynamic", 0.02)) for repeat in (1, 2)]
    (tmp_path / "two").mkdir()
    text = _findings_of(tmp_path / "two", records)
    assert ("rest on few processes): none found, but 1 of 1 cells were not tested (fewer than 3 "
            "repeats of an implementation).") in text
    records += [make_result(impl, "c1", 3, step_s=(step,) * 3)
                for impl, step in (("static", 0.01), ("dynamic", 0.02))]
    for record in records:  # three that agree
        record["timings"]["step_s"] = [record["timings"]["step_s"][0] / (
            1000 if record["repeat"] == 2 else 1)] * 3
        record["timings"]["median_step_s"] = record["timings"]["step_s"][0]
    (tmp_path / "three").mkdir()
    assert "rest on few processes): none." in _findings_of(tmp_path / "three", records, 3)
