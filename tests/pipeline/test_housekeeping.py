"""What the workflow does to the results tree outside its jobs (rnnbench.pipeline.housekeeping,
and failures' terminal reports), on temporary folders, without Snakemake: what is moved, what
is said, and that a command that runs no job leaves every file as it was."""

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from conftest import make_result
from rnnbench.grid import layout
from rnnbench.pipeline import failures, housekeeping

RESULT = "results/runs/p/c1/static/repeat1.json"
COLUMNS = ["cell", "max_len", "protocol"]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory for the workflow (its paths are relative, as Snakemake's)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path, text=""):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    return str(path)


def tree(folder="results"):
    """{path: sha256} of every file below ``folder``: what a dry run must leave as it was."""
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(Path(folder).rglob("*")) if path.is_file()}


def tables(columns=COLUMNS, listed=()):
    """A measurements.csv with ``columns`` listing ``listed``, and the other tables and a chart."""
    rows = "".join(f"{path},{',' * len(columns)}\n" for path in listed)
    write(layout.MEASUREMENTS, f"{','.join(['path', 'sha256', *columns])}\n{rows}")
    for name in ("summary", "cumulative", "findings"):
        write(layout.TABLES[name], f"{name}\n")
    write(layout.TABLES["costmodel"], "{}\n")
    write(layout.chart_path("setup_time"), "<svg/>")


def test_a_blocked_training_job_is_left_out_and_named(workdir):
    write("results/runs/p/c1")  # a file where the cell's folder goes
    jobs = [(RESULT, "results/logs/p/c1/static/repeat1.log", "results/benchmarks/p/c1.tsv"),
            ("results/runs/p/c2/static/repeat1.json", "l2", "b2")]
    said = []
    blocked = housekeeping.blocked_results(jobs, [layout.MEASUREMENTS], said.append)
    assert blocked == {RESULT: "results/runs/p/c1 is a file where a folder must be"}
    assert said == [
        f"results: 1 training job(s) cannot write their result, log or benchmark and are left "
        f"out, e.g. {RESULT} (results/runs/p/c1 is a file where a folder must be); the rest of "
        "the grid is measured, then results/partial/ lists what is missing. Move that file away "
        "and run again."]


def test_a_blocked_table_stops_the_run(workdir):
    Path(layout.FINDINGS).mkdir(parents=True)
    with pytest.raises(housekeeping.Refused) as refused:
        housekeeping.blocked_results([], [layout.MEASUREMENTS, layout.FINDINGS], print)
    assert str(refused.value) == (
        "results: 1 output(s) cannot be written, e.g. results/FINDINGS.md: results/FINDINGS.md "
        "is a folder where a file must be; move it away (or mend the link) and run again")


def test_nothing_blocked_says_nothing(workdir):
    said = []
    assert housekeeping.blocked_results([(RESULT, "l", "b")], [layout.FINDINGS], said.append) == {}
    assert said == []


def test_why_tables_are_stale(workdir):
    assert housekeeping.stale_tables({}, COLUMNS) == []  # no tables: nothing to set aside
    tables()
    assert housekeeping.stale_tables({}, COLUMNS) == []
    assert housekeeping.stale_tables({RESULT: "gone", "r2": "changed"}, COLUMNS) == [
        f"{RESULT} is gone", "r2 changed since it was aggregated"]
    assert housekeeping.stale_tables({}, [*COLUMNS, "unroll", "jax_version"]) == [
        "results/measurements.csv has no column unroll, jax_version (an older workflow's)"]
    # a table cut short (a row with fewer fields than its header), or a JSON table that is
    # not one: set aside and rebuilt (every later run failed in the rule that reads it)
    write(layout.TABLES["summary"], "cell_id,ratio\nc1,0.5\nc2,")
    write(layout.TABLES["costmodel"], '{"fits": [')
    assert housekeeping.stale_tables({}, COLUMNS) == [
        f"{layout.TABLES['summary']} is cut short or not a table of this workflow",
        f"{layout.TABLES['costmodel']} is cut short or not a table of this workflow"]
    tables()
    os.remove(layout.TABLES["costmodel"])
    os.remove(layout.MEASUREMENTS)
    assert housekeeping.stale_tables({}, COLUMNS) == [
        "results/measurements.csv is missing (a failed aggregation?)"]


def test_a_damaged_result_is_only_named_by_a_dry_run(workdir):
    write(RESULT, '{"cut short')
    before = tree()
    said = []
    changed, damaged = housekeeping.set_aside_damaged_results(
        [RESULT], {RESULT: None}, {RESULT: "changed"}, True, said.append)
    assert tree() == before and changed == {RESULT: "changed"} and damaged == [RESULT]
    assert len(said) == 1 and said[0].startswith(f"results: {RESULT} is not a valid result (not JSON")
    assert said[0].endswith(f": a run moves it to results/stale/{RESULT} and measures it again "
                            "(this command runs no job: nothing moved)")


def test_a_damaged_result_is_moved_aside_and_its_listing_gone(workdir):
    damaged = write(RESULT, '{"cut short')
    valid = write("results/runs/p/c1/dynamic/repeat1.json", json.dumps(make_result("dynamic")))
    record = write("results/runs/p/c2/static/repeat1.json", json.dumps({"not": "a result"}))
    said = []
    changed, moved = housekeeping.set_aside_damaged_results(
        [damaged, valid, record, "results/runs/p/c3/static/repeat1.json"], {damaged: "x"},
        {damaged: "changed"}, False, said.append)
    assert changed == {damaged: "gone"}  # the unlisted one stays out of it
    assert moved == [damaged, record]
    assert not Path(damaged).exists() and not Path(record).exists() and Path(valid).exists()
    assert Path("results/stale", damaged).read_text() == '{"cut short'  # kept, as it was
    assert Path("results/stale", record).exists()
    assert said[1] == (f"results: {record} was not a valid result (JSON, but no result record "
                       f"(no schema_version)): moved to results/stale/{record}; it is measured "
                       "again")
    peak = write("results/runs/p/peak_intra1_tf2.21.json", '{"kind": "probe"}')
    whole = write("results/runs/p/peak_intra2_tf2.21.json", json.dumps(
        {"peak": 1.0, "probe": {}, "tf_version": "2.21", "metadata": {}}))
    said.clear()
    changed, moved = housekeeping.set_aside_damaged_results([], {}, {}, False, said.append,
                                                            peaks=[peak, whole])
    assert moved == [peak] and Path(whole).exists()  # rule peak makes it again
    assert changed == {peak: "gone"}  # the tables were built with it: stale
    assert said == [f"results: {peak} was not a valid result (JSON, but no peak record (no peak, "
                    f"probe, tf_version, metadata)): moved to results/stale/{peak}; it is "
                    "measured again"]
    write(damaged, '{"cut again')  # damaged again: the first stays
    housekeeping.set_aside_damaged_results([damaged], {}, {}, False, said.append)
    assert Path("results/stale", damaged).read_text() == '{"cut short'
    assert Path("results/stale", damaged).with_name("repeat1.2.json").read_text() == '{"cut again'


def test_stale_tables_are_only_named_by_a_dry_run(workdir):
    tables(listed=[RESULT])
    before = tree()
    said = []
    assert housekeeping.set_aside_stale_tables({RESULT: "gone"}, COLUMNS, True, said.append)
    assert tree() == before and not Path(layout.STALE).exists()
    assert said == [
        f"results: the tables no longer describe the results on disk (1: {RESULT} is gone): a "
        "run moves them and the charts to results/stale/, measures what is missing and "
        "rebuilds them (this command runs no job: nothing moved)"]


def test_stale_tables_and_charts_are_moved_aside(workdir):
    tables(listed=[RESULT])
    said = []
    assert not housekeeping.set_aside_stale_tables({RESULT: "gone"}, COLUMNS, False, said.append)
    assert sorted(tree()) == ["results/stale/FINDINGS.md", "results/stale/costmodel.json",
                              "results/stale/cumulative_time.csv",
                              "results/stale/measurements.csv", "results/stale/plots/setup_time.svg",
                              "results/stale/summary.csv"]
    assert said == [
        f"results: the tables no longer describe the results on disk (1: {RESULT} is gone): they "
        "and the charts are moved to results/stale/; the tables are rebuilt, after anything "
        "missing is measured"]
    # a second set-aside keeps the first's tables and charts beside its own
    first = {path: Path(path).read_text() for path in tree()}
    tables(listed=[RESULT])
    said.clear()
    assert not housekeeping.set_aside_stale_tables({RESULT: "gone"}, COLUMNS, False, said.append)
    assert {path: Path(path).read_text() for path in first} == first
    assert {"results/stale/measurements.2.csv", "results/stale/plots/setup_time.2.svg"} <= set(
        tree())
    assert "(as results/stale/measurements.2.csv, ...: an earlier set-aside's are kept)" in said[0]
    # a run narrowed by --until may not rebuild them: it says which run does (it said
    # "the tables rebuilt")
    tables(listed=[RESULT])
    said.clear()
    housekeeping.set_aside_stale_tables({RESULT: "gone"}, COLUMNS, False, said.append,
                                        narrowed=("--until",))
    assert said[0].endswith("; a run without --until measures what is missing and rebuilds them")


def test_tables_that_describe_the_results_stay(workdir):
    tables(listed=[RESULT])
    write(RESULT, "{}")
    before, said = tree(), []
    assert not housekeeping.set_aside_stale_tables({}, COLUMNS, False, said.append)
    assert tree() == before and said == []


def test_a_file_where_the_stale_tables_go_stops_the_run(workdir):
    tables(columns=["cell"])
    write(layout.STALE, "in the way")
    with pytest.raises(housekeeping.Refused, match="results/stale is a file where the stale "
                                                   "tables must go: move it away"):
        housekeeping.set_aside_stale_tables({}, COLUMNS, False, print)
    assert Path(layout.MEASUREMENTS).exists()


def test_findings_settings_are_written_when_they_change(workdir):
    config = {"claims": [{"id": "c"}], "extrapolate": 10, "margin": 0.1, "steps": 5}
    assert not housekeeping.write_findings_settings(config, False, print)
    path = Path(layout.FINDINGS_SETTINGS)
    assert json.loads(path.read_text()) == {"claims": [{"id": "c"}], "extrapolate": 10,
                                            "margin": 0.1}
    written = path.stat().st_mtime_ns
    time.sleep(0.01)
    housekeeping.write_findings_settings({**config, "steps": 6}, False, print)  # not a setting
    assert path.stat().st_mtime_ns == written
    assert housekeeping.findings_settings(False) == layout.FINDINGS_SETTINGS


def test_a_dry_run_writes_no_findings_settings(workdir):
    assert housekeeping.findings_settings(False) == layout.FINDINGS_SETTINGS  # a run writes it
    said = []
    assert not housekeeping.write_findings_settings({"claims": []}, True, said.append)
    assert not Path("results").exists() and said == []
    assert housekeeping.findings_settings(True) == []  # not an input the dry run lacks
    write(layout.FINDINGS_SETTINGS, "{}\n")
    assert housekeeping.write_findings_settings({"claims": []}, True, said.append)
    assert Path(layout.FINDINGS_SETTINGS).read_text() == "{}\n"
    assert said == ["results: the claims, extrapolate or margin changed since FINDINGS.md was written: a "
                    "run rewrites results/findings_settings.json and FINDINGS.md (this command "
                    "runs no job: nothing written)"]
    assert housekeeping.findings_settings(True) == layout.FINDINGS_SETTINGS


def test_a_report_under_other_findings_settings_is_refused(workdir):
    """--report embeds FINDINGS.md as it is: under another margin it would show verdicts of
    the earlier margin (it only said that a run rewrites it)."""
    config = {"claims": [{"id": "c"}], "extrapolate": 10, "margin": 0.1}
    housekeeping.write_findings_settings(config, False, print)
    assert not housekeeping.write_findings_settings(config, True, print, report=True)
    with pytest.raises(housekeeping.Refused) as refused:
        housekeeping.write_findings_settings({**config, "margin": 0.2, "claims": []}, True,
                                             print, report=True)
    assert str(refused.value) == (
        "results: FINDINGS.md was written under other settings than this config's (claims "
        "changed, margin: 0.1 -> 0.2): a report would hold it as it is; run the same command "
        "without --report first")
    write(layout.FINDINGS_SETTINGS, '{"cut')
    with pytest.raises(housekeeping.Refused, match="results/findings_settings.json is not "
                                                   "readable JSON"):
        housekeeping.write_findings_settings(config, True, print, report=True)


def test_a_planned_step_is_a_placeholder_input():
    steps = ["set_aside_stale_tables"]
    assert housekeeping.planned("set_aside_stale_tables", steps) == [
        "results/.dry-run/set_aside_stale_tables"]
    assert housekeeping.planned("write_findings_settings", steps) == []


def test_a_report_of_an_unfinished_run_or_another_grid_is_refused(workdir):
    results = [RESULT, "results/runs/p/c1/dynamic/repeat1.json"]
    Path(layout.PARTIAL).mkdir(parents=True)
    with pytest.raises(housekeeping.Refused) as refused:
        housekeeping.check_report_grid(results)
    assert str(refused.value).startswith(
        "report: the run of this config did not finish: 2 of 2 training results are missing "
        "(e.g. results/runs/p/c1/dynamic/repeat1.json); results/partial/ says why, and "
        "summarises what was measured. Run the same command again")
    for result in results:
        write(result, "{}")
    with pytest.raises(housekeeping.Refused, match="results/measurements.csv does not exist; run "
                                                   "the same command without --report"):
        housekeeping.check_report_grid(results)
    tables(listed=[RESULT, "results/runs/q/c9/static/repeat1.json"])
    with pytest.raises(housekeeping.Refused) as refused:
        housekeeping.check_report_grid(results)
    assert "holds the results of another grid than this config's: 1 of its 2 runs are not " \
           "this config's (e.g. results/runs/q/c9/static/repeat1.json); 1 of this config's 2 " \
           "runs are not in it (e.g. results/runs/p/c1/dynamic/repeat1.json). Build the report" \
           in str(refused.value)
    tables(listed=results)
    assert housekeeping.check_report_grid(results) is None
    os.remove(layout.FINDINGS)  # a run stopped before it (or --until): the tool's own line
    with pytest.raises(housekeeping.Refused, match="results/FINDINGS.md does not exist; run the "
                                                   "same command without --report"):
        housekeeping.check_report_grid(results)


def test_the_estimate_counts_what_is_missing(workdir, monkeypatch):
    calls = []
    monkeypatch.setattr(housekeeping.estimate, "run_line",
                        lambda *args: calls.append(args) or "time: about 1 min")
    # each job's modelled seconds, worked out once for the plan and the line
    monkeypatch.setattr(housekeeping.estimate, "scaled_job_seconds",
                        lambda cells, jobs, *rest: ({job: 60.0 for job in jobs}, 1.0, 0))
    write(RESULT, "{}")
    write("results/data/d1.npz")
    jobs = [("c1", "static", RESULT), ("c1", "dynamic", "results/runs/p/c1/dynamic/repeat1.json")]
    others = {"dataset": ["results/data/d1.npz", "results/data/d2.npz"], "peak": ["peak.json"]}
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3) == "time: about 1 min"
    cells, pending, config, counts, measurements, _, more, _, scaled = calls[0]
    assert more == []  # no second look asked for
    assert scaled == ({("c1", "dynamic"): 60.0}, 1.0, 0)  # handed on, not read again
    assert pending == [("c1", "dynamic")] and measurements == layout.MEASUREMENTS
    assert counts == {"dataset": 1, "peak": 1, "aggregate": 1, "findings": 1, "chart": 3}
    # a run (not a dry run) writes its plan, which another run's estimate reads
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3, plan=".snakemake")
    plan = json.loads(Path(".snakemake", housekeeping.estimate.PLAN).read_text())
    assert list(plan["jobs"]) == [jobs[1][2]] and plan["snakemake_pid"] == os.getpid()
    write(layout.FINDINGS)
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3) is not None  # a result
    write(jobs[1][2], "{}")
    os.remove(layout.FINDINGS)
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3) is not None  # FINDINGS
    write(layout.FINDINGS)
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3) is None  # nothing to run
    # a damaged result a dry run left in place is measured again: counted (it was not)
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3, damaged=[RESULT])
    assert calls[-1][1] == [("c1", "static")]
    # --forcerun or --until runs other jobs than the missing ones: the line says what it
    # counts, and says so where nothing is missing (it said nothing, or a wrong count)
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3, damaged=[RESULT],
                                      narrowed=("--until",)) == (
        "time: about 1 min (counted for all of the workflow's missing jobs: with --until this "
        "command runs only some of them, which -n lists)")
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3, damaged=[RESULT],
                                      narrowed=("a named target",), forced=("-R",)) == (
        "time: about 1 min (counted for all of the workflow's missing jobs: with a named target "
        "this command runs only some of them; with -R also jobs whose output exists, which -n "
        "lists)")
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3,
                                      narrowed=("a named target",), forced=("--forcerun",)) == (
        "time: not estimated: nothing of the whole workflow is missing, and with --forcerun this "
        "command runs jobs again, which -n lists")
    assert housekeeping.estimate_line({"c1": {}}, jobs, {}, others, 3,
                                      narrowed=("--until",)) is None  # nothing runs


def test_a_success_removes_the_partial_report_and_old_charts(workdir):
    write(f"{layout.PARTIAL}/missing.csv", "cell_id\n")
    for chart in ("setup_time", "ablation_loop_bound"):
        for ext in layout.CHART_FORMATS:
            write(layout.chart_path(chart, ext))
    removed = housekeeping.after_success([RESULT], ["ablation_loop_bound", "api"])
    assert Path(layout.PARTIAL).exists()  # a result is missing: it stays
    assert sorted(map(str, removed)) == ["results/plots/ablation_loop_bound.html",
                                         "results/plots/ablation_loop_bound.svg"]
    assert sorted(tree(layout.PLOTS)) == ["results/plots/setup_time.html",
                                          "results/plots/setup_time.svg"]
    write(RESULT, "{}")
    assert housekeeping.after_success([RESULT], []) == []
    assert not Path(layout.PARTIAL).exists()


def test_missing_runs_are_listed_and_said(workdir):
    present = [write(f"results/runs/p/c1/{impl}/repeat1.json", json.dumps(make_result(impl)))
               for impl in ("static", "dynamic")]
    write("results/logs/c2s.log", "Traceback\nValueError: no luck\n")
    jobs = [("c1", "static", 1, present[0], "l1"), ("c1", "dynamic", 1, present[1], "l2"),
            ("c2", "static", 1, "results/runs/p/c2/static/repeat1.json", "results/logs/c2s.log"),
            ("c2", "dynamic", 1, "results/runs/p/c2/dynamic/repeat1.json", "none.log"),
            ("c3", "static", 1, "results/runs/p/c3/static/repeat1.json", "none.log")]
    said = []
    missing = failures.report_missing(jobs, said.append)
    assert len(missing) == 3 and Path(layout.PARTIAL, "missing.csv").exists()
    assert said == ["3 of 5 training results are missing:",
                    "  c2 static repeat 1: ValueError: no luck",
                    f"  2 other run(s): {failures.NOT_STARTED}",
                    "Listed in results/partial/missing.csv, with the logs; cells that completed "
                    "are summarised in results/partial/summary.csv."]


def test_missing_runs_none_started_none_completed(workdir):
    said = []
    failures.report_missing([("c1", "static", 1, RESULT, "none.log")], said.append,
                            blocked={RESULT: "results/runs is a file where a folder must be"})
    assert said == ["1 of 1 training results are missing:",
                    "  c1 static repeat 1: results/runs is a file where a folder must be",
                    "Listed in results/partial/missing.csv, with the logs; no cell has "
                    "completed yet."]
    said.clear()
    write(RESULT, json.dumps(make_result()))
    assert len(failures.report_missing([("c1", "static", 1, RESULT, "l")], said.append)) == 0
    assert said == []


def test_a_rerun_that_completes_the_missing_runs_drops_the_stale_listing(workdir):
    """A rerun that measured every result the partial report listed, then failed later (a
    chart, the aggregation) or was interrupted: the earlier listing, which still called the
    runs 'stopped without an error of its own', goes with the tables beside it."""
    jobs = [("c1", "static", 1, RESULT, "results/logs/c1s.log")]
    write("results/logs/c1s.log", "step 3\n")  # the first run was stopped after this line
    said = []
    failures.after_failure(jobs, said.append)
    listed = Path(layout.PARTIAL, "missing.csv").read_text()
    assert failures.STOPPED_FROM_OUTSIDE in listed and said[0].startswith("1 of 1")
    write(f"{layout.PARTIAL}/summary.csv", "cell_id\nc0\n")  # an earlier grid's
    write(RESULT, json.dumps(make_result()))
    said.clear()
    assert failures.after_failure(jobs, said.append) is None
    assert not Path(layout.PARTIAL).exists() and said == []


def test_a_partial_report_keeps_no_table_of_an_earlier_failure(workdir):
    """write_partial rewrites missing.csv; a summary.csv or measurements.csv it does not write
    this time (no cell complete now) is an earlier failure's and goes, so report_missing does
    not point to it."""
    write(f"{layout.PARTIAL}/summary.csv", "cell_id\nc0\n")
    write(f"{layout.PARTIAL}/measurements.csv", "cell_id\nc0\n")
    said = []
    failures.report_missing([("c1", "static", 1, RESULT, "none.log")], said.append)
    assert sorted(path.name for path in Path(layout.PARTIAL).iterdir()) == ["missing.csv"]
    assert said[-1].endswith("no cell has completed yet.")


def test_a_failed_rule_is_named_with_its_logs_cause(workdir):
    steps = failures.rule_steps(["setup_time"], [("results/logs/p/peak.log", "results/runs/p/"
                                                  "peak_intra1_tf2.21.json")], ["d1"])
    assert steps == {
        "aggregate": ("results/logs/aggregate.log", "results/measurements.csv"),
        "findings": ("results/logs/findings.log", "results/FINDINGS.md"),
        "plot setup_time": ("results/logs/plot/setup_time.log", "results/plots/setup_time.svg"),
        "peak peak_intra1_tf2.21": ("results/logs/p/peak.log",
                                    "results/runs/p/peak_intra1_tf2.21.json"),
        "make_data d1": ("results/logs/make_data/d1.log", "results/data/d1.npz")}
    write("results/logs/findings.log", "old\nValueError: an earlier run's\n")
    started = time.time() + 1
    os.utime("results/logs/findings.log", (started - 10, started - 10))
    write("results/logs/aggregate.log", "Traceback\nValueError: runs of two environments\n")
    write("results/logs/plot/setup_time.log", "ValueError: but the chart exists\n")
    write("results/plots/setup_time.svg")
    write("results/logs/make_data/d1.log")  # empty: killed before its first line
    for log in ("results/logs/aggregate.log", "results/logs/plot/setup_time.log",
                "results/logs/make_data/d1.log"):
        os.utime(log, (started, started))
    said = []
    lines = failures.report_failed_tables(steps, started, said.append)
    assert said == lines == ["aggregate failed: ValueError: runs of two environments (its log: "
                             "results/logs/aggregate.log)",
                             f"make_data d1 failed: {failures.STOPPED_EARLY} (its log: "
                             "results/logs/make_data/d1.log)"]


def test_a_report_names_each_chart_it_is_built_without_and_why(workdir, monkeypatch):
    """A chart job that failed leaves the report without that chart, not without a report:
    missing_charts names each chart one of whose files is missing, with its log's cause;
    the report's description gets each as a line of reStructuredText."""
    for chart in ("setup_time", "api"):
        for ext in layout.CHART_FORMATS:
            write(layout.chart_path(chart, ext))
    write(layout.chart_path("roofline", "html"))  # its SVG never came
    write(layout.rule_log("plot", "roofline"), "Traceback\nValueError: no *peak* for |x|\n")
    write(layout.rule_log("plot", "ratio_max_len"), "\n#\n# Fatal process out of memory: "
                                                    "Oilpan: CagedHeap reservation.\n#\n")
    write(layout.rule_log("plot", "steps_per_s"))
    charts = ["setup_time", "api", "roofline", "ratio_max_len", "steps_per_s", "crossover"]
    monkeypatch.setattr(failures, "address_space_limit", lambda: "unlimited")
    missing = failures.missing_charts(charts)
    assert missing == {
        "roofline": "ValueError: no *peak* for |x| (its log: results/logs/plot/roofline.log)",
        "ratio_max_len": f"{failures.ADDRESS_SPACE_THEN} (its log: "
                         "results/logs/plot/ratio_max_len.log)",
        "steps_per_s": f"{failures.STOPPED_EARLY} (its log: results/logs/plot/steps_per_s.log)",
        "crossover": failures.CHART_NOT_STARTED}
    said = []
    lines = failures.report_missing_charts(missing, len(charts), said.append)
    assert said[0] == ("report: built without 4 of the 6 charts, which are missing (the "
                       "tables and FINDINGS need none); its description names them:")
    assert said[1] == f"  roofline: {missing['roofline']}"
    assert lines[0] == (r"roofline\: ValueError\: no \*peak\* for \|x\| (its log\: "
                        r"results/logs/plot/roofline.log)")
    from docutils.core import publish_parts

    html = publish_parts("\n".join(f"- {line}" for line in lines), writer="html")["body"]
    assert "<li>roofline: ValueError: no *peak* for |x| (its log: results/logs/plot/" in html
    assert failures.report_missing_charts({}, 6, said.append) == [] and len(said) == 5


@pytest.mark.slow
def test_a_chart_renderer_stopped_by_an_address_space_limit_is_named_with_its_fix(
        tmp_path, monkeypatch):
    """Under ``ulimit -v`` vl-convert's V8 dies before any Python line ("Fatal process out of
    memory: Oilpan: CagedHeap reservation."): plot.py's log gets the crash (its stderr file
    descriptor is the log's), and error_line names the limit and how to lift it; read where
    no limit is set (a report, later), it says the limit was the run's."""
    import subprocess
    import sys

    from rnnbench.pipeline.failures import ADDRESS_SPACE_THEN, error_line

    log = tmp_path / "plot.log"
    script = ("import os, sys\n"
              f"sys.stderr = open({str(log)!r}, 'w')\n"
              "os.dup2(sys.stderr.fileno(), 2)\n"
              "import vl_convert\n"
              "vl_convert.vegalite_to_svg({'mark': 'point', 'data': {'values': [{'a': 1}]}})\n")
    done = subprocess.run(["bash", "-c", f'ulimit -v 4000000; exec "{sys.executable}" -c "$0"',
                           script], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    monkeypatch.setattr(failures, "address_space_limit", lambda: "4000000")  # the run's
    line = error_line(log.read_text().splitlines())
    assert line.startswith("the chart renderer (vl-convert's V8) could not reserve its "
                           "address space: an address-space limit is set (ulimit -v "
                           "4000000); lift it (ulimit -v unlimited)"), line
    monkeypatch.setattr(failures, "address_space_limit", lambda: "unlimited")
    assert error_line(log.read_text().splitlines()) == ADDRESS_SPACE_THEN


def test_a_damaged_dataset_is_remade_from_its_seed_and_its_results_kept(workdir):
    """A dataset file changed since it was made (cut short): Snakemake alone would measure
    again, deleting first, every result that reads it (the file is newer than them); here it is
    remade in place with its sidecar's time, the damaged bytes kept under results/stale/."""
    from rnnbench.measure.data import make_dataset, sha256_file, write_dataset

    params = {"max_len": 4, "sequence_length": 2, "input_dim": 3, "num_classes": 2,
              "num_samples": 5, "seed": 0}
    npz, sidecar = "results/data/d.npz", "results/data/d.json"
    Path("results/data").mkdir(parents=True)
    good = write_dataset(make_dataset(**params), params, npz, sidecar)["sha256"]
    os.utime(sidecar, ns=(10**18, 10**18))
    said = []
    datasets = {"d": (params, npz, sidecar)}
    assert housekeeping.remake_damaged_datasets(datasets, False, said.append) == []  # intact
    Path(npz).write_bytes(Path(npz).read_bytes()[:100])
    assert housekeeping.remake_damaged_datasets(datasets, True, said.append) == [npz]
    assert len(Path(npz).read_bytes()) == 100 and "nothing moved" in said[-1]  # a dry run
    assert housekeeping.remake_damaged_datasets(datasets, False, said.append) == [npz]
    assert sha256_file(npz) == good and os.stat(npz).st_mtime_ns == 10**18
    assert len(Path("results/stale/results/data/d.npz").read_bytes()) == 100
    assert said[-1].startswith(f"results: {npz} was changed since it was made (sha256): moved "
                               "to results/stale/results/data/d.npz and remade from its seed")
    # a sidecar that records other bytes than its seed makes: named, with the fix, not remade
    Path(sidecar).write_text(json.dumps({"sha256": "0" * 64}))
    with pytest.raises(housekeeping.Refused, match=f"remade from its seed it has another "
                                                   f"\\({good[:12]}\\): move {npz} and"):
        housekeeping.remake_damaged_datasets(datasets, False, said.append)
    assert sorted(os.listdir("results/data")) == ["d.json", "d.npz"]  # no remade file left


def test_a_file_in_the_way_of_the_set_aside_folder_is_named_in_one_line(workdir):
    """results/stale made a file (or a folder below it), and a damaged result to move there:
    one refusal naming the file (was a NotADirectoryError traceback), in a dry run too."""
    write(RESULT, '{"impl": "sta')  # cut short
    for blocking in ("results/stale", "results/stale/results"):
        Path("results/stale").unlink(missing_ok=True)
        if Path("results/stale").is_dir():
            import shutil

            shutil.rmtree("results/stale")
        write(blocking, "x")
        for dry_run in (True, False):
            with pytest.raises(housekeeping.Refused, match=f"results: {blocking} is a file "
                                                           "where a folder must be"):
                housekeeping.set_aside_damaged_results([RESULT], {}, {}, dry_run, print)
    assert Path(RESULT).read_text() == '{"impl": "sta'  # nothing moved
