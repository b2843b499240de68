"""The README's answer and the docs come from the committed reference run (docs/figures/),
and the layout page matches the tree."""

import re
import subprocess

import pytest

from conftest import REPO
from rnnbench.commands import reference
from rnnbench.report import readme as answer_page


def test_the_readme_answer_is_the_reference_runs():
    """Fails when the README's numbers differ from docs/figures/ (rerun rnnbench reference)."""
    readme = (REPO / "README.md").read_text()
    assert answer_page.ANSWER_BEGIN == "<!-- answer: written by rnnbench reference -->"
    assert answer_page.readme_answer(readme) == answer_page.expected_answer()
    # the choice is on the first screen (within the first 15 lines), the whole answer, with
    # Keras, JAX and the sweep, within 45
    first = answer_page.readme_answer(readme).splitlines()[1]
    assert first.startswith("**Use ") and first in readme.splitlines()[:15]
    assert readme.index(answer_page.ANSWER_END) < len("\n".join(readme.splitlines()[:45]))


def test_the_readme_answer_reads_in_short_sentences_that_start_with_the_choice():
    """A practitioner reads the choice first, in sentences of at most 35 words."""
    block = answer_page.readme_answer((REPO / "README.md").read_text())
    prose = block.split("\n", 1)[1].split("```")[0]
    sentences = [s for s in re.split(r"(?<=[.*])\s+", prose.strip()) if s]
    assert sentences[0].startswith("**Use ") and len(sentences) >= 4
    long = [s for s in sentences if len(s.split()) > 35]
    assert not long, long
    # the measured shape in words, the break-even in seconds, memory in MiB
    assert "a basic_lstm of 32 units, batch 32, 16 inputs, padded to max_len 24" in prose
    assert re.search(r"\d+ steps.{0,12}\d+ s of training here", prose)
    assert re.search(r"\(\d+ MiB against \d+ MiB at peak\)", prose)


def test_every_figure_and_link_of_the_readme_and_docs_exists():
    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_the_layout_page_matches_the_tree():
    """Every entry the layout names exists, and every tracked top-level entry and every
    module of the package is named."""
    text = (REPO / "docs" / "layout.md").read_text()
    block = text[text.index("```") + 3:text.rindex("```")]
    named = [line.split()[0] for line in block.splitlines()
             if line.strip() and not line.startswith(" ")]
    for entry in named:
        if "*" not in entry:
            assert (REPO / entry).exists(), entry
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    for top in {path.split("/")[0] for path in tracked}:
        assert any(name.rstrip("/").split("/")[0] == top for name in named), top
    package = REPO / "workflow/scripts/rnnbench"
    table = text[text.index("## The package"):text.index("## Where a change goes")]
    rows, layer = {}, "(top)"
    for line in table.splitlines():  # | `grid/` | `axes`, ... | ...  and  | | `cells`, ... |
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if len(cells) == 3 and not cells[1].startswith("-"):
            layer = cells[0].strip("`/") or layer
            rows.setdefault(layer, set()).update(re.findall(r"`([a-z_0-9/]+)`", cells[1]))
    for module in package.rglob("*.py"):  # each module in its layer's rows, by its name
        parts = module.relative_to(package).with_suffix("").parts
        if not module.stem.startswith("__"):  # __init__, __main__
            layer, name = (parts[0], "/".join(parts[1:])) if len(parts) > 1 else ("(top)", parts[0])
            assert name in rows.get(layer, set()), f"{layer}/{name}"


def test_each_reference_run_is_committed_with_its_findings_and_charts():
    """The runs for Keras and JAX and the max_len x length sweep each have their
    FINDINGS, summary, charts and run.json under docs/figures/, from the preset they name;
    the apis run measures config.yaml's shape, in each api its preset lists."""
    import yaml

    from rnnbench.results.load import read_table

    main = yaml.safe_load((REPO / "config.yaml").read_text())
    for name, (config, folder) in answer_page.REFERENCE_RUNS.items():
        figures = REPO / folder
        for part in ("FINDINGS.md", "summary.csv", "run.json", "cumulative_time.svg"):
            assert (figures / part).exists(), f"{folder}/{part}"
        run = __import__("json").loads((figures / "run.json").read_text())
        assert run.get("config", "config.yaml") == config, folder
        grid = yaml.safe_load((REPO / config).read_text())
        summary = read_table(figures / "summary.csv")
        assert set(summary["api"]) == set(grid.get("api", ["compat_v1"])), folder
        assert set(summary["max_len"]) == set(grid["max_len"]), folder
    apis = yaml.safe_load((REPO / "presets/reference-apis.yaml").read_text())
    for axis in ("cell", "batch_size", "max_len", "sequence_length", "num_units", "input_dim",
                 "steps", "repeats"):
        assert apis[axis] == main[axis], axis


def _cells(api, rows):
    """Summary rows of one api at max_len 24: (sequence_length, step ratio, its interval,
    break-even steps or None)."""
    import math

    import pandas as pd

    return pd.DataFrame([{
        "api": api, "cell": "basic_lstm", "max_len": 24, "sequence_length": length,
        "unroll": "max_len", "ablations": "", "ratio_median_step_s": ratio,
        "ratio_median_step_s_ci_low": low, "ratio_median_step_s_ci_high": high,
        "breakeven_steps": math.nan if steps is None else steps, "dynamic_setup_s": 1.0,
        "dynamic_median_step_s": 0.002} for length, ratio, low, high, steps in rows])


def test_the_choice_follows_the_intervals_in_each_apis_words():
    # unrolled faster at every length: use it past the fewest break-even steps
    keras = _cells("keras", [("2", 0.6, 0.5, 0.8, 625), ("full", 0.6, 0.4, 0.9, 683)])
    assert answer_page.choice(keras, 0.1) == (
        "Use unroll=True if you train past about 625 to 683 steps (2 s of training here), at "
        "both lengths measured; for fewer steps, unroll=False.")
    # faster at full length only (the other interval holds 1): the loop unless that length
    compat = _cells("compat_v1", [("2", 1.4, 1.3, 1.6, None), ("full", 0.8, 0.7, 0.9, 5000)])
    assert answer_page.choice(compat, 0.1) == (
        "Use dynamic_rnn, unless your sequences fill max_len and you train past about 5000 "
        "steps (11 s of training here): then static_rnn is faster overall.")
    # an interval across 1 is no win, whatever its break-even; a JAX scan's factor written out
    jax = _cells("jax_scan", [("2", 0.9, 0.7, 1.1, 300), ("full", 1.6, 1.4, 1.8, None)])
    assert answer_page.choice(jax, 0.1) == (
        "Use scan unroll=1: scan unroll=24 did not clearly pay back its setup here.")
    slower = _cells("jax_scan", [("2", 1.5, 1.4, 1.6, None), ("full", 1.6, 1.4, 1.8, None)])
    assert answer_page.choice(slower, 0.1) == (
        "Use scan unroll=1: scan unroll=24 never paid back its setup here.")
    # faster, but within the 10 % margin at every length: no practical difference
    within = _cells("compat_v1", [("2", 0.97, 0.95, 0.99, 9000), ("full", 1.0, 0.95, 1.05, None)])
    assert answer_page.choice(within, 0.1) == (
        "Use dynamic_rnn: static_rnn was within 10 % of it per step, too little to pay back its "
        "setup here.")
    # without a margin the first of them is a win
    assert answer_page.choice(within, 0.0).startswith("Use dynamic_rnn, unless your sequences "
                                                      "are 2 of 24 steps long")


def test_the_sweep_says_how_the_step_ratio_moves_and_where_static_wins():
    import pandas as pd

    rows = []
    for max_len, full, short in ((12, 0.9, 1.2), (24, 0.8, 1.5), (48, 0.7, 2.5)):
        for length, ratio in (("full", full), ("3", short)):
            low, high = (ratio * 0.9, ratio * 1.1) if max_len > 12 else (0.8, 1.3)
            rows.append({"max_len": max_len, "sequence_length": length, "ablations": "",
                         "ratio_median_step_s": ratio, "ratio_median_step_s_ci_low": low,
                         "ratio_median_step_s_ci_high": high})
    said = answer_page.sweep_sentences(pd.DataFrame(rows), 0.1)
    assert said[0] == ("With sequences that fill max_len, static's steps take 0.90, 0.80 and "
                       "0.70 of dynamic's at max_len 12, 24 and 48.")
    assert said[1] == ("With sequences of 3 steps, static's steps take 1.20, 1.50 and 2.50 of "
                       "dynamic's at max_len 12, 24 and 48.")
    # max_len 12's intervals hold 1: no win there
    assert said[2] == ("static_rnn's steps are faster by more than 10 % (the whole interval) "
                       "only at max_len 24 (sequences that fill max_len); at max_len 48 "
                       "(sequences that fill max_len); not elsewhere.")


def test_rnnbench_reference_names_each_run():
    """`rnnbench reference --run apis` reaches reference.main with the run's name (a --run
    argument once clashed with the command's own handler, and the command failed)."""
    from rnnbench import cli

    argv = ["reference", "--run", "apis", "--no-run"]
    args = cli.build_parser(argv).parse_args(argv)
    assert args._handler is reference.main and args.which == "apis" and args.no_run


def test_a_results_folder_of_another_grid_is_refused_before_anything_is_written(tmp_path):
    """`rnnbench reference --no-run --results DIR` checks DIR before it writes: missing files
    and another grid are named, and the committed run is left whole."""
    import shutil

    import pandas as pd

    with pytest.raises(ValueError, match=r"no FINDINGS.md, summary.csv, measurements.csv there"):
        reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")
    summary = pd.read_csv(REPO / "docs/figures/apis/summary.csv")
    (tmp_path / "FINDINGS.md").write_text("x\n")
    (tmp_path / "measurements.csv").write_text("x\n")
    summary.to_csv(tmp_path / "summary.csv", index=False)
    with pytest.raises(ValueError, match=r"its measurements.csv has no cell_id, impl, repeat"):
        reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")
    runs = pd.DataFrame([{"cell_id": c, "impl": i, "repeat": 1} for c in summary["cell_id"]
                         for i in ("static", "dynamic")])
    runs.iloc[1:].to_csv(tmp_path / "measurements.csv", index=False)  # one cell's static lost
    with pytest.raises(ValueError, match="lacks runs of both implementations for cell.s. "
                                         + summary["cell_id"].iloc[0]):
        reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")
    runs.to_csv(tmp_path / "measurements.csv", index=False)
    with pytest.raises(ValueError, match=r"no charts there \(plots/\*.svg\)"):
        reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "steps_per_s.svg").write_text("<svg/>")
    pd.concat([runs, runs.iloc[:1]]).to_csv(tmp_path / "measurements.csv", index=False)
    with pytest.raises(ValueError, match="holds a run twice"):
        reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")
    runs.to_csv(tmp_path / "measurements.csv", index=False)
    reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")  # its own: fits
    with pytest.raises(ValueError, match=r"api \['jax_scan', 'keras', 'keras_jax'\], but "
                                         r"presets/reference-sweep.yaml asks for \['compat_v1'\]"):
        reference.check_results(tmp_path, REPO / "presets/reference-sweep.yaml")
    summary.assign(max_len=8).to_csv(tmp_path / "summary.csv", index=False)
    with pytest.raises(ValueError, match=r"max_len \['8'\], but presets/reference-apis.yaml"):
        reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")
    summary.assign(static_repeats=2).to_csv(tmp_path / "summary.csv", index=False)
    with pytest.raises(ValueError, match=r"\[2\] repeats, but .* asks for 6"):
        reference.check_results(tmp_path, REPO / "presets/reference-apis.yaml")
    # through the command: refused with status 2 before any file of docs/figures/ changes
    before = {p: p.read_bytes() for p in (REPO / "docs/figures/apis").iterdir()}
    from rnnbench import cli

    assert cli.main(["reference", "--run", "apis", "--no-run", "--results", str(tmp_path)]) == 2
    # --results without --no-run would start a fresh run and leave DIR unread: refused
    assert cli.main(["reference", "--run", "apis", "--results", str(tmp_path)]) == 2
    assert {p: p.read_bytes() for p in (REPO / "docs/figures/apis").iterdir()} == before
    shutil.rmtree(tmp_path)


def test_the_main_reference_checks_its_folder_before_it_times_the_tests(tmp_path, monkeypatch,
                                                                         capsys):
    """`--run main --no-run --results DIR` times the test suite; an empty DIR is refused at
    once, not after the suite (whose Snakemake jobs a timeout would leave behind)."""
    from rnnbench import cli

    def tests_run(*args, **kwargs):
        raise AssertionError("the test suite started")

    monkeypatch.setattr(reference, "_timed", tests_run)
    assert cli.main(["reference", "--no-run", "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"rnnbench reference: --results {tmp_path}: no FINDINGS.md, summary.csv, measurements.csv "
        "there (run the workflow in it first, or leave out --no-run) (nothing written)\n")


def test_a_run_that_fails_while_it_is_written_leaves_everything_as_it_was(tmp_path):
    """A results folder that passes check_results but cannot be written through (the map's
    runs all flagged busy: no fit for docs/presets.md's block) is refused with status 2, and
    docs/figures/map/, the README and docs/presets.md are as they were (files.all_or_nothing)."""
    import shutil

    from rnnbench import cli
    from rnnbench.results.load import read_table

    for name in ("FINDINGS.md", "summary.csv"):
        shutil.copy(REPO / "docs/figures/map" / name, tmp_path / name)
    runs = read_table(REPO / "docs/figures/map/measurements.csv")
    runs.assign(busy=True).to_csv(tmp_path / "measurements.csv", index=False)
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "new_chart.svg").write_text("<svg/>")
    watched = [*(REPO / "docs/figures/map").iterdir(), REPO / "README.md",
               REPO / "docs/presets.md"]
    before = {p: p.read_bytes() for p in watched}
    assert cli.main(["reference", "--run", "map", "--no-run", "--results", str(tmp_path)]) == 2
    assert {p: p.read_bytes() for p in watched} == before
    assert sorted((REPO / "docs/figures/map").iterdir()) == sorted(watched[:-2])


def test_several_runs_are_pooled_and_one_run_removes_an_old_pool(tmp_path):
    """reference writes each run's summary and their pool beside the folder, refuses runs of
    two environments, and a later single run leaves no stale pool behind."""
    import pandas as pd

    summary = pd.read_csv(REPO / "docs/figures/summary.csv")
    folders = []
    for number, scale in enumerate((1.0, 1.1, 0.9)):
        folder = tmp_path / f"run{number}"
        folder.mkdir()
        summary.assign(ratio_median_step_s=summary["ratio_median_step_s"] * scale).to_csv(
            folder / "summary.csv", index=False)
        folders.append(folder)
    figures = tmp_path / "figures"
    figures.mkdir()
    reference._write_pooled(figures, folders)
    pooled = pd.read_csv(figures / "pooled.csv")
    assert sorted(p.name for p in (figures / "runs").iterdir()) == [
        "run1.csv", "run2.csv", "run3.csv"]
    assert set(pooled["runs"]) == {3} and "ratio_median_step_s_tau" in pooled
    reference._write_pooled(figures, folders[:1])
    assert not (figures / "pooled.csv").exists() and not (figures / "runs").exists()
    from rnnbench.results.load import check_folders_one_environment

    tables = [pd.DataFrame({"environment": [env]}) for env in ("cpu a", "cpu b")]
    with pytest.raises(ValueError, match="never pooled"):
        check_folders_one_environment(tables, folders[:2], "pooled")


def test_the_main_references_runs_end_its_findings_with_their_drift(tmp_path):
    """Several runs of the main reference: DRIFT.md beside them, and FINDINGS.md ends with how
    far they moved and what explains it, or what else does; a later single run removes it."""
    import pandas as pd

    from test_drift_command import a_run

    folders = [a_run(tmp_path / f"run{n}", scale=s)[0] for n, s in enumerate((1.0, 1.25, 0.8))]
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "FINDINGS.md").write_text("# Findings\n")
    tables = [pd.read_csv(folder / "measurements.csv") for folder in folders]
    assert reference._drift("apis", folders, tables) is None
    assert reference._drift("main", folders[:1], tables[:1]) is None
    reference._write_drift(figures, folders, reference._drift("main", folders, tables))
    findings = (figures / "FINDINGS.md").read_text()
    assert findings.startswith("# Findings\n\n## Between the runs")
    assert (figures / "DRIFT.md").read_text().startswith("# Drift between 3 runs")
    # dynamic_rnn's steps moved by a quarter, the probe and speed checks not at all
    assert "dynamic_rnn's step moved by 2" in findings
    assert "No measure the runs record explains half of that drift" in findings
    # static_rnn's did not move: within the noise, and the section says so
    assert "static_rnn's step moved by 0.0%" in findings
    assert "the noise between fresh processes" in findings
    reference._write_drift(figures, folders[:1], None)
    assert not (figures / "DRIFT.md").exists() and not (figures / "drift.csv").exists()


def test_a_run_taken_as_it_is_is_timed_from_its_own_snakemake_log(tmp_path):
    """--no-run --results reads each run's wall time and start from Snakemake's log beside
    it, and has none (not another run's) where there is no log."""
    import datetime

    log = tmp_path / "run" / ".snakemake" / "log" / "2026-12-05T082925.986412.snakemake.log"
    log.parent.mkdir(parents=True)
    log.write_text("SNAKEMAKE\n44 of 44 steps (100%) done\nElapsed time: 0:03:42.358457\n")
    timing = reference._logged_timings([tmp_path / "run" / "results"])
    start = datetime.datetime(2026, 12, 5, 8, 29, 25, 986412).timestamp()
    assert timing == [{"workflow_s": 222.4, "started_unix_s": round(start)}]
    assert reference._logged_timings([tmp_path / "elsewhere" / "results"]) is None
