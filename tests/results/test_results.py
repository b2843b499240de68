"""Aggregation arithmetic on hand-made results with known answers (rnnbench.results.load,
rnnbench.stats.summary, rnnbench.stats.intervals)."""

import json
import os
import math

import numpy as np
import pandas as pd
import pytest

from conftest import make_result
from rnnbench.stats import intervals
from rnnbench.results import load
from rnnbench.measure.metadata import cpu_simd
from rnnbench.stats.summary import (breakeven_of, cumulative_time, disagreeing_repeats,
                                    fragile_metrics, ratio_of, summarize, whole_steps)


def breakeven_steps(static_setup_s: float, static_step_s: float, dynamic_setup_s: float,
                    dynamic_step_s: float) -> int | None:
    """Training steps after which static's total time (setup_s + n step_s) stays below
    dynamic's, from one pair of setups and step times (seconds); None for never (its step is
    not faster and its setup dearer, or it is ahead at first and overtaken later): the same
    point as summary.breakeven_of's estimate (intervals.breakeven_ci), in whole steps."""
    steps = whole_steps(intervals.breakeven_ci(np.array([static_setup_s - dynamic_setup_s]),
                                               np.array([dynamic_step_s - static_step_s]))[0])
    return None if math.isinf(steps) else int(steps)


@pytest.mark.parametrize("static_setup, static_step, dynamic_setup, dynamic_step, expected", [
    (10.0, 1.0, 2.0, 2.0, 9),       # gap 8 s, gain 1 s/step: equal at 8, below from 9
    (10.0, 1.0, 2.0, 3.0, 5),       # gap 8, gain 2: equal at 4, below from 5
    (10.5, 1.0, 2.0, 3.0, 5),       # gap 8.5, gain 2: 4.25 -> 5
    (1.0, 1.0, 2.0, 3.0, 0),        # cheaper setup and faster steps: from the start
    (10.0, 3.0, 2.0, 2.0, None),    # slower steps, dearer setup: never
    (10.0, 2.0, 2.0, 2.0, None),    # equal steps, dearer setup: never
    (1.0, 2.0, 2.0, 2.0, 0),        # equal steps, cheaper setup: from the start
    (1.0, 3.0, 2.0, 2.0, None),     # ahead at first, overtaken later: not for good
])
def test_breakeven_steps(static_setup, static_step, dynamic_setup, dynamic_step, expected):
    assert breakeven_steps(static_setup, static_step, dynamic_setup, dynamic_step) == expected


def test_breakeven_is_where_totals_cross():
    n = breakeven_steps(20.0, 0.03, 0.7, 0.04)
    static = lambda k: 20.0 + k * 0.03  # noqa: E731
    dynamic = lambda k: 0.7 + k * 0.04  # noqa: E731
    assert static(n) < dynamic(n) and static(n - 1) >= dynamic(n - 1)


def write_results(tmp_path, records):
    paths = []
    for i, record in enumerate(records):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(record))
        paths.append(path)
    return paths


def hand_made_runs(tmp_path):
    """Cell c1: static setup 3.5 s (1 + 0.5 + 2) and 0.01 s steps, dynamic setup 0.5 s and
    0.02 s steps, identical over 3 repeats: break-even after (3.5 - 0.5) / 0.01 + 1 steps."""
    records = []
    for repeat in (1, 2, 3):
        records.append(make_result("static", "c1", repeat, setup=(1.0, 0.5, 2.0),
                                   step_s=(0.01, 0.01, 0.01)))
        records.append(make_result("dynamic", "c1", repeat, setup=(0.2, 0.1, 0.2),
                                   step_s=(0.02, 0.02, 0.02)))
        records.append(make_result("static", "c2", repeat, max_len=20, sequence_length="max_len",
                                   setup=(4.0, 1.0, 5.0), step_s=(0.05, 0.06, 0.07)))
        records.append(make_result("dynamic", "c2", repeat, max_len=20,
                                   sequence_length="max_len", setup=(0.2, 0.1, 0.2),
                                   step_s=(0.02, 0.03, 0.04)))
    return write_results(tmp_path, records)


def test_load_results_is_tidy(tmp_path):
    runs = load.load_results(hand_made_runs(tmp_path))
    assert len(runs) == 12
    assert set(runs["impl"]) == {"static", "dynamic"}
    assert runs.loc[0, "setup_s"] == pytest.approx(runs.loc[0, "graph_construction_s"]
                                                   + runs.loc[0, "init_s"]
                                                   + runs.loc[0, "first_step_s"])
    assert set(runs["sequence_length"]) == {"5", "full"}
    assert not runs.duplicated(["cell_id", "impl", "repeat"]).any()


def test_load_results_names_a_bad_file(tmp_path):
    record = make_result()
    del record["timings"]["step_s"]
    (bad,) = write_results(tmp_path, [record])
    with pytest.raises(ValueError, match=r"r0.json: not a valid result \(schema_version 6\): "
                                         r".*'step_s'"):
        load.load_results([bad])
    record = make_result()
    record["schema_version"] = 5  # another version's fields: the version is named
    (bad,) = write_results(tmp_path, [record])
    with pytest.raises(ValueError, match=r"r0.json: not a valid result \(schema_version 5\): "):
        load.load_results([bad])
    with pytest.raises(ValueError, match="no result files"):
        load.load_results([])


def test_summarize_known_answers(tmp_path):
    summary = summarize(load.load_results(hand_made_runs(tmp_path)))
    c1 = summary.set_index("cell_id").loc["c1"]
    assert c1["static_setup_s"] == pytest.approx(3.5)
    assert c1["dynamic_setup_s"] == pytest.approx(0.5)
    assert c1["ratio_setup_s"] == pytest.approx(7.0)
    assert c1["ratio_median_step_s"] == pytest.approx(0.5)
    assert c1["static_repeats"] == 3
    assert c1["breakeven_steps"] == 301  # (3.5 - 0.5) / 0.01 = 300: equal there, below after
    c2 = summary.set_index("cell_id").loc["c2"]
    assert c2["static_median_step_s"] == pytest.approx(0.06)
    assert pd.isna(c2["breakeven_steps"])  # static steps slower and setup dearer: never
    assert c2["ratio_median_step_s"] == pytest.approx(2.0)
    # identical repeats: the interval is the point; never stays never
    assert (c1["breakeven_steps_ci_low"], c1["breakeven_steps_ci_high"]) == (301, 301)
    assert c2["breakeven_steps_ci_low"] == c2["breakeven_steps_ci_high"] == math.inf
    # hand-made runs: too few steps for block spreads, no outlier, a quiet machine
    assert not c1["unstable"] and not c1["busy"] and not c1["warmup_capped"]
    assert c1["ratio_paired"]


def test_fraction_of_peak(tmp_path):
    runs = load.load_results(hand_made_runs(tmp_path))
    # hand-made results: 1e6 FLOP per step; c1's static steps take 0.01 s, dynamic 0.02 s
    c1 = runs[runs["cell_id"] == "c1"].set_index("impl")["achieved_flop_per_s"]
    assert c1["static"].tolist() == pytest.approx([1e8] * 3)
    summary = summarize(runs, peak_flop_per_s={(1, "2.21"): 1e9}).set_index("cell_id")
    assert summary.loc["c1", "static_fraction_of_peak"] == pytest.approx(0.1)
    assert summary.loc["c1", "dynamic_fraction_of_peak"] == pytest.approx(0.05)
    assert "static_fraction_of_peak" not in summarize(runs)  # no peak measured


def test_each_tensorflow_version_is_compared_with_its_own_peak(tmp_path):
    records = [make_result(impl, cell_id, 1, tf_version=version)
               for cell_id, version in (("c1", "2.21"), ("c1_tf2.12", "2.12"))
               for impl in ("static", "dynamic")]
    runs = load.load_results(write_results(tmp_path, records))
    assert runs.set_index("cell_id")["tensorflow_version"].to_dict() == {
        "c1": "2.21.0", "c1_tf2.12": "2.12.0"}
    summary = summarize(runs, peak_flop_per_s={(1, "2.21"): 1e9, (1, "2.12"): 2e9})
    # 1e6 FLOP per 0.01 s step: 1e8 FLOP/s
    assert summary.set_index("tf_version")["static_fraction_of_peak"].to_dict() == {
        "2.21": pytest.approx(0.1), "2.12": pytest.approx(0.05)}
    with pytest.raises(ValueError, match=r"\(1, '2.12'\)"):
        summarize(runs, peak_flop_per_s={(1, "2.21"): 1e9})


def test_what_flags_a_cell(tmp_path):
    """unstable: leaving out one repeat moves a ratio's interval across 1; busy: steal over
    2 % or a load above the CPUs; warmup_capped: a warm-up still falling at its cap; and the
    counts of disturbed runs (50-step blocks differing by more than 15 %) and outliers (a
    median step over 1.5x its cell's median run)."""
    def summary_row(edit, repeats=6):
        records = [make_result(impl, "c1", repeat, step_s=[0.01 if impl == "static" else 0.02] * 3)
                   for impl in ("static", "dynamic") for repeat in range(1, repeats + 1)]
        for record in records:  # every pair a little different: intervals of some width
            record["timings"]["median_step_s"] *= 1 + 0.01 * record["repeat"]
        edit(records)
        return summarize(load.load_results(write_results(tmp_path, records))).iloc[0]

    def flags(edit):
        row = summary_row(edit)
        return ({flag for flag in ("unstable", "busy", "warmup_capped") if row[flag]},
                row["disturbed_runs"], row["outlier_runs"])

    assert flags(lambda r: None) == (set(), 0, 0)
    assert flags(lambda r: r[0]["timings"].update(block_spread=0.16)) == (set(), 1, 0)
    assert flags(lambda r: r[0]["timings"].update(block_spread=0.15)) == (set(), 0, 0)
    assert flags(lambda r: r[0]["timings"].update(median_step_s=0.0161)) == (set(), 0, 1)
    assert flags(lambda r: r[1]["noise"].update(steal_share=0.03)) == ({"busy"}, 0, 0)
    assert flags(lambda r: r[1]["noise"].update(load_average_after=[2.5, 1, 1])) == (
        {"busy"}, 0, 0)
    assert flags(lambda r: r[7]["timings"].update(warmup_settled=False)) == (
        {"warmup_capped"}, 0, 0)

    def one_pair_decides(records):
        """static's steps slower than dynamic's in 5 pairs by 1-5 %, but 1.9x faster in one:
        the ratio's interval lies across 1 with that pair and above 1 without it."""
        for record in records:
            timings = record["timings"]
            if record["impl"] == "static":
                timings["median_step_s"] = 0.0200 * (1.01 + 0.01 * record["repeat"])
        records[5]["timings"]["median_step_s"] = 0.0105
    row = summary_row(one_pair_decides)
    assert row["unstable"] and row["fragile"] == "first_100_steps_s, median_step_s"


def test_a_shared_reference_serves_its_twin(tmp_path):
    """A loop_bound twin takes its reference's static runs (cells.shared_runs): its static
    rows are those runs under the twin's id, and its ratios pair them with its own dynamic
    runs by repeat."""
    records = []
    for repeat in (1, 2, 3):
        records.append(make_result("static", "c1", repeat, step_s=[0.010] * 3))
        records.append(make_result("dynamic", "c1", repeat, step_s=[0.020] * 3))
        records.append(make_result("dynamic", "c1_lbmaxlen", repeat, step_s=[0.040] * 3,
                                   loop_bound="max_len"))
    runs = load.share_runs(load.load_results(write_results(tmp_path, records)),
                           {("c1_lbmaxlen", "static"): "c1"})
    twin = runs[runs["cell_id"] == "c1_lbmaxlen"]
    assert sorted(twin["impl"]) == ["dynamic"] * 3 + ["static"] * 3
    static = twin[twin["impl"] == "static"]
    assert set(static["measured_in"]) == {"c1"} and set(static["loop_bound"]) == {"max_len"}
    assert set(static["base_cell_id"]) == {"c1"} and set(static["ablations"]) == {
        "dynamic loops to max_len"}
    row = summarize(runs).set_index("cell_id").loc["c1_lbmaxlen"]
    assert row["ratio_median_step_s"] == pytest.approx(0.25) and row["ratio_paired"]
    assert row["static_measured_in"] == "c1" and row["dynamic_measured_in"] == "c1_lbmaxlen"
    # a partial run without the twin's own runs adds nothing
    alone = load.load_results(write_results(tmp_path, records[:2]))
    assert len(load.share_runs(alone, {("c1_lbmaxlen", "static"): "c1"})) == 2


def test_runs_of_different_environments_are_never_pooled(tmp_path):
    """A result copied in from a machine with another CPU (its metadata edited): the cell is
    refused, naming both environments and a file of each; another host with the same
    fingerprint (a cluster's identical nodes) pools."""
    records = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic")
               for repeat in (1, 2, 3)]
    records[1]["metadata"]["hostname"] = "node2"  # same kind of machine: pooled
    (tmp_path / "ours").mkdir()
    summarize(load.load_results(write_results(tmp_path / "ours", records)))
    records[4]["metadata"]["cpu_model"] = "Another CPU"
    (tmp_path / "theirs").mkdir()
    paths = write_results(tmp_path / "theirs", records)
    with pytest.raises(ValueError, match=r"cell c1: its runs come from 2 environments, which "
                                         r"are never pooled: Another CPU \(2 CPUs\).*r4\.json.*"
                                         r"cpu \(2 CPUs\).*r[0-35]\.json"):
        summarize(load.load_results(paths))


def test_two_cpus_of_one_model_name_but_other_vector_units_are_never_pooled(tmp_path):
    """A VM's model name may hide its CPU ("AMD EPYC" with and without AVX-512): the widest
    vector instruction set (metadata.cpu_simd, read from /proc/cpuinfo's flags) is part of
    the fingerprint, so such runs are refused like another model's."""
    assert cpu_simd("processor: 0\nflags\t: fpu sse4_2 avx avx2 fma avx512f avx512bw\n") \
        == "avx512f"
    assert cpu_simd("flags : fpu sse4_2 avx avx2 fma\n") == "avx2"
    assert cpu_simd("model name : a CPU without a flags line\n") is None
    records = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic")
               for repeat in (1, 2, 3)]
    for record in records:
        record["metadata"]["cpu_simd"] = "avx512f"
    records[4]["metadata"]["cpu_simd"] = "avx2"
    with pytest.raises(ValueError, match=r"2 environments.*cpu \(avx2, 2 CPUs\).*"
                                         r"cpu \(avx512f, 2 CPUs\)"):
        summarize(load.load_results(write_results(tmp_path, records)))


def test_runs_without_address_space_randomisation_are_never_pooled_with_others(tmp_path):
    """A process run under ``setarch -R`` (every process in one layout: its repeats agree far
    more closely) has its own fingerprint; a result that predates the record (no ``aslr``)
    keeps the fingerprint it had."""
    records = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic")
               for repeat in (1, 2, 3)]
    records[0]["metadata"]["aslr"] = True
    runs = load.load_results(write_results(tmp_path, records))
    assert runs["environment"].nunique() == 1 and runs["aslr"].tolist().count(True) == 1
    records[4]["metadata"]["aslr"] = False
    (tmp_path / "mixed").mkdir()
    with pytest.raises(ValueError, match=r"2 environments.*bare, without ASLR"):
        summarize(load.load_results(write_results(tmp_path / "mixed", records)))


def test_breakeven_interval_over_repeats():
    def runs(setups, steps):
        return pd.DataFrame({"repeat": range(1, len(setups) + 1), "setup_s": setups,
                             "median_step_s": steps})

    # static: setup 10 s, steps 0.01 s; dynamic: setup 1 s, steps 0.019-0.021 s by repeat:
    # mean gap 9 s, mean gain 0.01 s a step: equal at 900 steps, static ahead from the 901st
    static = runs([10.0, 10.0, 10.0], [0.01, 0.01, 0.01])
    dynamic = runs([1.0, 1.0, 1.0], [0.02, 0.021, 0.019])
    point, low, high = map(whole_steps, breakeven_of(static, dynamic))
    assert point == 901 and 0 <= low < point < high < math.inf
    # a step gain that may be nothing: the interval reaches 'never'
    dynamic = runs([1.0, 1.0, 1.0], [0.02, 0.005, 0.02])
    point, low, high = breakeven_of(static, dynamic)
    assert high == math.inf
    _, low, high = breakeven_of(static.iloc[:1], dynamic.iloc[:1])  # one repeat
    assert math.isnan(low) and math.isnan(high)


def test_summarize_names_a_cell_missing_an_implementation(tmp_path):
    runs = load.load_results(write_results(tmp_path, [make_result("static", "lonely")]))
    with pytest.raises(ValueError, match="cell lonely: no dynamic runs"):
        summarize(runs)


def test_cumulative_time_and_csv_round_trip(tmp_path):
    summary = summarize(load.load_results(hand_made_runs(tmp_path)))
    cumulative = cumulative_time(summary)
    c1 = cumulative[cumulative["cell_id"] == "c1"]
    assert c1["steps"].max() == 602  # twice the break-even
    at_zero = c1[c1["steps"] == 0].set_index("impl")["total_s"]
    assert at_zero["static"] == pytest.approx(3.5) and at_zero["dynamic"] == pytest.approx(0.5)
    assert cumulative[cumulative["cell_id"] == "c2"]["steps"].max() == 100  # never: 100 steps
    summary.to_csv(tmp_path / "summary.csv", index=False)
    again = load.read_table(tmp_path / "summary.csv")
    assert again["breakeven_steps"].tolist()[0] == 301 and pd.isna(again["breakeven_steps"][1])
    assert again["sequence_length"].tolist() == ["5", "full"]


def test_fastjsonschema_and_jsonschema_judge_records_alike():
    """The aggregation validates with fastjsonschema (draft 7) where the training images
    validate with jsonschema (draft 2020-12): the same records pass and fail."""
    import copy

    import fastjsonschema
    import jsonschema
    import yaml

    from rnnbench.measure import schema

    spec = yaml.safe_load(schema.RESULT_SCHEMA.read_text())
    fast = fastjsonschema.compile({k: v for k, v in spec.items() if k != "$schema"})
    slow = jsonschema.Draft202012Validator(spec)
    good = make_result()
    edits = [
        lambda r: r["timings"].pop("step_s"), lambda r: r.update(impl="both"),
        lambda r: r["timings"].update(median_step_s="fast"), lambda r: r.update(repeat=0),
        lambda r: r.update(schema_version=4), lambda r: r["cell"].update(max_len=-1),
        lambda r: r.update(extra=1), lambda r: r["metadata"].pop("hostname"),
        lambda r: r["noise"].update(steal_share="x"), lambda r: r.update(cell_id=7),
        lambda r: r["timings"].update(step_s=[]), lambda r: r["memory"].update(peak_rss_mb=None),
    ]
    verdicts = []
    for edit in [lambda r: None, *edits]:
        record = copy.deepcopy(good)
        edit(record)
        try:
            fast(record)
            passed_fast = True
        except fastjsonschema.JsonSchemaException:
            passed_fast = False
        assert passed_fast == slow.is_valid(record)
        verdicts.append(passed_fast)
    assert verdicts[0] and sum(verdicts) < len(verdicts) - 6  # the edits mostly fail


def test_a_truncated_or_misplaced_result_is_named_with_the_fix(tmp_path):
    path = tmp_path / "c1" / "dynamic" / "repeat1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(make_result("static", "c1", 1)))  # static's run, copied here
    with pytest.raises(ValueError, match=r"repeat1.json: records cell c1, static, repeat 1, "
                                         r"not what its path says \(c1, dynamic, 1\): the file "
                                         r"was copied or moved; delete it"):
        load.load_results([path])
    path.write_text(json.dumps(make_result("dynamic", "c1", 1))[:300])  # cut short
    with pytest.raises(ValueError, match=r"repeat1.json: not a valid result \(not JSON: .*\): "
                                         r"delete it, and the command that wrote it \(the "
                                         r"workflow, or rnnbench jax\) measures it anew"):
        load.load_results([path])


def test_repeats_that_fall_into_groups_are_named_with_their_values():
    repeats = np.array([1, 2, 3])
    # two of three at 330 ms against one at 131 ms: one far from the rest
    assert disagreeing_repeats(repeats, np.array([0.330, 0.331, 0.131])) == \
        "repeat 3: 131 ms | repeats 1, 2: 330, 331 ms"
    # the 7-16 % by which fresh processes differ: they agree
    assert disagreeing_repeats(repeats, np.array([0.100, 0.108, 0.116])) == ""
    # bimodal: two groups of two, 2x apart
    assert disagreeing_repeats(np.array([1, 2, 3, 4]),
                                       np.array([0.01, 0.0205, 0.0101, 0.02])) == \
        "repeats 1, 3: 10, 10.1 ms | repeats 4, 2: 20, 20.5 ms"
    assert disagreeing_repeats(np.array([1, 2]), np.array([0.01, 0.1])) == ""


def test_a_cell_with_disagreeing_repeats_is_flagged_in_summary_and_findings(tmp_path):
    from rnnbench.report import findings

    records = [make_result(impl, "c1", repeat, step_s=(step,) * 3)
               for impl in ("static", "dynamic")
               for repeat, step in ((1, 0.330), (2, 0.331), (3, 0.131))]
    runs = load.load_results(write_results(tmp_path, records))
    summary = summarize(runs)
    assert summary["disagreeing_repeats"].iloc[0].startswith("static: repeat 3: 131 ms | ")
    text = findings.findings_markdown(summary, runs, [], {
        "margin": 0.1, "repeats": 3, "steps": 3, "warmup_steps": 1, "max_warmup_steps": 1})
    assert "- Repeats that disagree (their median steps fall into groups more than 1.5x " \
           "apart" in text and "(static: repeat 3: 131 ms | repeats 1, 2: 330, 331 ms" in text


def test_schema_5_and_schema_6_results_give_the_same_rows(tmp_path):
    """A result of schema 6 (timings.init_s, optimisation_s) and the same result of schema 5
    (session_setup_s, graph_optimisation_s, written by the workflow before) load into the
    same row, under init_s and optimisation_s (optimisation None: NaN)."""
    new = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic") for repeat in (1, 2)]
    assert {record["schema_version"] for record in new} == {6}
    new[1]["timings"]["optimisation_s"] = None
    old = json.loads(json.dumps(new))
    for record in old:
        timings = record["timings"]
        record["schema_version"] = 5
        timings["session_setup_s"] = timings.pop("init_s")
        timings["graph_optimisation_s"] = timings.pop("optimisation_s")
    (tmp_path / "old").mkdir(), (tmp_path / "new").mkdir()
    runs = {name: load.load_results(write_results(tmp_path / name, records))
            for name, records in (("old", old), ("new", new))}
    assert "init_s" in runs["new"] and "session_setup_s" not in runs["new"]
    assert runs["new"]["optimisation_s"].isna().sum() == 1
    pd.testing.assert_frame_equal(runs["old"].drop(columns=["path", "sha256"]),
                                  runs["new"].drop(columns=["path", "sha256"]))


def test_shared_in_reads_the_shared_runs_rule_from_hand_made_ids(tmp_path):
    """Without a config, shared_in finds the runs a cell takes from another by the cells'
    axes (cells.shared_runs's rule), whatever their ids: the loop_bound twin without static
    runs takes its reference's; the parallel_iterations twin with its own takes none."""
    records = []
    for repeat in (1, 2):
        records += [make_result("static", "ref", repeat), make_result("dynamic", "ref", repeat),
                    make_result("dynamic", "twin", repeat, loop_bound="max_len"),
                    make_result("static", "own", repeat, parallel_iterations=2),
                    make_result("dynamic", "own", repeat, parallel_iterations=2)]
    runs = load.load_results(write_results(tmp_path, records))
    assert load.shared_in(runs) == {("twin", "static"): "ref"}


def test_busy_is_judged_on_the_cpus_a_run_may_use(tmp_path):
    """A job pinned to one quiet CPU while the machine's load average (1.4) exceeds that one
    CPU is not busy: other processes took 1 % of its CPU; where they took 30 %, it is. A
    result without the per-CPU record keeps the machine-wide rule (load above the CPUs)."""
    from rnnbench.measure import metadata

    records = []
    for repeat, others in enumerate((0.01, 0.3, None), start=1):
        record = make_result("static", "c1", repeat)
        record["metadata"]["cpu_affinity"] = 1
        record["noise"].update(load_average_before=[1.4, 1.2, 1.0],
                               load_average_after=[1.3, 1.2, 1.0], steal_share=0.001)
        if others is not None:
            record["noise"].update(others_share=others, own_cpus_steal_share=0.0)
        records.append(record)
    runs = load.load_results(write_results(tmp_path, records))
    assert runs["busy"].tolist() == [False, True, True]
    # the counters: only the CPUs of this process's affinity, less its own time
    cpus = sorted(os.sched_getaffinity(0))
    lines = ["cpu  900 0 100 1000 0 0 0 0 0 0"]
    lines += [f"cpu{n} 100 0 50 800 50 0 0 10 0 0" for n in cpus] + ["cpu999 5000 0 0 0 0 0 0 0"]
    ticks = metadata.own_cpu_ticks(lines)
    assert ticks["total"] == 1010 * len(cpus) and ticks["busy"] == 160 * len(cpus)
    assert ticks["steal"] == 10 * len(cpus) and ticks["own"] > 0
    before = {"ticks": None, "load_average": None, "cpu_governor": None, "cpu_mhz": None,
              "own_cpus": {"total": 0, "busy": 0, "steal": 0, "own": 0}}
    after = {**before, "own_cpus": {"total": 1000, "busy": 900, "steal": 0, "own": 850}}
    assert metadata.noise(before, after)["others_share"] == 0.05


def test_a_run_with_other_settings_than_its_cell_is_refused_naming_the_setting(tmp_path):
    """Only the environment's fingerprint was compared before: a run whose recorded threads
    or cell axes are not its cell's was summarised with the others."""
    def refused(record, cells=None):
        (tmp_path / "r0.json").write_text(json.dumps(record))
        with pytest.raises(ValueError) as error:
            load.load_results([tmp_path / "r0.json"], cells=cells)
        return str(error.value)

    record = make_result("static", "c1", 1, intra_op_parallelism_threads=2)
    load.load_results(write_results(tmp_path, [record]))  # as made: its settings are its cell's
    tampered = json.loads(json.dumps(record))
    tampered["metadata"]["intra_op_parallelism_threads"] = 1
    assert "r0.json: ran with intra_op_parallelism_threads 1, while its cell asks for 2, so " \
           "its timing is not its cell's and is never pooled" in refused(tampered)
    planned = {"c1": {**record["cell"], "max_len": 20}}
    assert "ran with max_len 10, while its cell c1 asks for 20" in refused(record, planned)
    load.load_results(write_results(tmp_path, [record]), cells={"c1": record["cell"]})


@pytest.mark.parametrize("key, value", [("steps", 500), ("warmup_steps", 7), ("seed", 3),
                                        ("min_measure_s", 2.0), ("hook_every", 1),
                                        ("max_warmup_steps", 99), ("grappler_alone", False)])
def test_a_run_of_another_protocol_than_its_folders_is_refused(tmp_path, key, value):
    """A result recording other steps, warm-up, seed, ... than the protocol its folder plans
    was summarised with the others, without a word: it is refused, naming the setting."""
    from conftest import TINY_PROTOCOL

    planned = {k: TINY_PROTOCOL[k] for k in load.PROTOCOL_KEYS}
    record = make_result("static", "c1", 1)
    load.load_results(write_results(tmp_path, [record]), protocol=planned)  # its own: read
    load.load_results(write_results(tmp_path, [record]),  # 0 and 0.0 s are one setting
                      protocol={**planned, "min_measure_s": float(planned["min_measure_s"])})
    record["protocol"][key] = value
    with pytest.raises(ValueError, match=rf"ran with {key} {value!r}, while its protocol "
                                         rf"\(steps4-0\.0s_.*\) asks for "):
        load.load_results(write_results(tmp_path, [record]), protocol=planned)


def test_the_cumulative_time_file_is_the_long_tables_csv(tmp_path):
    """write_cumulative_time writes what cumulative_time(...).to_csv writes, byte for byte:
    for hand-made runs (a break-even and a never), for text that needs quoting, for text across
    lines (written from the long table), and for no cells."""
    from rnnbench.stats.summary import write_cumulative_time

    summary = summarize(load.load_results(hand_made_runs(tmp_path)))
    quoted = summary.assign(ablations=['a, "b"', ""])
    across = summary.assign(ablations=["two\nlines", ""])
    unmeasured = summary.assign(static_setup_s_amean=[math.nan, 1e-20],
                                dynamic_median_step_s_amean=[1e17, 0.1])  # no total, exponents
    for number, table in enumerate((summary, quoted, across, unmeasured, summary.iloc[:0])):
        write_cumulative_time(table, tmp_path / f"fast{number}.csv")
        cumulative_time(table).to_csv(tmp_path / f"long{number}.csv", index=False)
        assert ((tmp_path / f"fast{number}.csv").read_bytes()
                == (tmp_path / f"long{number}.csv").read_bytes())


def test_summarize_answers_each_cell_as_alone(tmp_path):
    """summarize computes cells alike in their repeats together: each cell's flags and ratios
    are those of the cell summarised alone, with repeats that differ between cells (a cell
    with a missing repeat: unpaired), a fragile ratio, and repeats that disagree."""
    records = []
    for cell, repeats in (("c1", (1, 2, 3, 4)), ("c2", (1, 2, 3, 4)), ("c3", (1, 2, 4))):
        for impl in ("static", "dynamic"):
            for repeat in repeats if impl == "static" or cell != "c3" else (1, 2, 3, 4):
                slow = 3.0 if (cell, impl, repeat) == ("c2", "static", 4) else 1.0
                step = (0.010 if impl == "static" else 0.011) * (1 + 0.02 * repeat) * slow
                records.append(make_result(impl, cell, repeat, step_s=(step, step, step)))
    runs = load.load_results(write_results(tmp_path, records))
    together = summarize(runs)
    alone = pd.concat([summarize(runs[runs["cell_id"] == cell]) for cell in ("c1", "c2", "c3")],
                      ignore_index=True)
    pd.testing.assert_frame_equal(together, alone, check_exact=True)
    flags = together.set_index("cell_id")
    for cell, row in flags.iterrows():  # the scalar functions' answers, bit for bit
        static, dynamic = (runs[(runs["cell_id"] == cell) & (runs["impl"] == impl)]
                           for impl in ("static", "dynamic"))
        assert row["fragile"] == ", ".join(fragile_metrics(static, dynamic))
        assert (row["ratio_median_step_s"], row["ratio_median_step_s_ci_low"],
                row["ratio_median_step_s_ci_high"]) == ratio_of(static, dynamic, "median_step_s")
    assert not flags.loc["c3", "ratio_paired"] and flags.loc["c1", "ratio_paired"]
    assert flags.loc["c2", "disagreeing_repeats"].startswith("static: repeats 1, 2, 3: ")
    assert flags.loc["c2", "unstable"] and flags.loc["c2", "fragile"]


@pytest.mark.parametrize("edit, setting", [
    (lambda r: r["data"].update(sha256="f" * 64), "data_sha256"),
    (lambda r: r.update(initial_weights_sha256="e" * 64), "initial_weights_sha256"),
    (lambda r: r["metadata"].update(keras_version="3.0.0"), "keras_version"),
    (lambda r: r["metadata"].update(numpy_version="1.0.0"), "numpy_version"),
    (lambda r: r["metadata"]["git"].update(commit="0" * 40), "git_commit"),
    (lambda r: r["noise"].update(placement={
        "cpus": [0], "migrations": 0, "involuntary_switches": 0, "voluntary_switches": 0,
        "ld_preload": "/usr/lib/libtcmalloc.so.4"}), "ld_preload"),
    # oneDNN turned off for one run (TF_ENABLE_ONEDNN_OPTS=0): pooled unseen before
    (lambda r: r["noise"].update(placement={
        "cpus": [0], "migrations": 0, "involuntary_switches": 0, "voluntary_switches": 0,
        "ld_preload": None, "timing_env": {"TF_ENABLE_ONEDNN_OPTS": "0"}}), "timing_env"),
])
def test_runs_of_other_inputs_in_one_cell_are_never_pooled(tmp_path, edit, setting):
    records = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic")
               for repeat in (1, 2, 3)]
    edit(records[4])
    with pytest.raises(ValueError, match=rf"cell c1: its runs hold 2 values of {setting}, "
                                         r"which are never pooled: .*r4\.json"):
        summarize(load.load_results(write_results(tmp_path, records)))


@pytest.mark.parametrize("value", [1e308, 1e-300, float("nan"), float("inf")])
def test_a_median_step_no_run_can_have_is_refused_naming_the_file(tmp_path, value):
    records = [make_result(impl, "c1", repeat) for impl in ("static", "dynamic")
               for repeat in (1, 2)]
    records[1]["timings"]["median_step_s"] = value
    with pytest.raises(ValueError, match=r"r1\.json: not a valid result: timings\.median_step_s"):
        load.load_results(write_results(tmp_path, records))
