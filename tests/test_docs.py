"""Docs that stay true: every path, file name and command the pages name exists or
runs, every example cell id is a cell of a shipped grid, the pages' statements about the
committed preset runs (machine, busy flags, durations) match those runs, and no page points
outside the repository, to "above"/"below" another page, or to the project's tracker."""

import functools
import re
import shlex

import pytest
import yaml

from conftest import REPO
from rnnbench import cli
from rnnbench.grid import configcheck

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "results/README.md"]
PRESETS = sorted((REPO / "presets").glob("*.yaml"))
TEXTS = {path: path.read_text() for path in [*PAGES, *PRESETS]}
ROOTS = ("workflow/", "docs/", "presets/", "tests/", "envs/", "containers/", "profiles/",
         ".ci/", ".venv/bin/", "install.sh", "config.yaml", "Snakefile", "pyproject.toml")
"""A token that starts with one of these names a file of the repository (or of the venv)."""


def _name(path):
    return str(path.relative_to(REPO))


def _code_spans(text):
    """Backticked spans and the lines of sh code blocks."""
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return inline + [line for block in blocks for line in block.splitlines()]


def _paths_in(span):
    words = shlex.split(span.split("#")[0], posix=True) if span.count("'") % 2 == 0 else []
    for word in words or span.split():
        word = word.strip(".,;:()").removesuffix("'s")
        if word.startswith(ROOTS) and not any(ch in word for ch in "*<>{}[]$"):
            yield word.split("::")[0].split(":")[0]


def test_every_repository_path_the_pages_name_exists():
    missing = [f"{_name(page)}: {path}" for page, text in TEXTS.items()
               for span in _code_spans(text) + re.findall(r"^#.*$", text, re.M)
               for path in _paths_in(span) if not (REPO / path).exists()]
    assert not missing, missing


def test_no_page_points_outside_the_repository_or_to_the_tracker():
    outside = [f"{_name(page)}: {found}" for page, text in TEXTS.items()
               for found in re.findall(r"(?<![\w.])\.\./[\w./-]+", text)
               if not (page.parent / found).exists()
               or not (page.parent / found).resolve().is_relative_to(REPO)]
    tracker = [f"{_name(page)}: {found}" for page, text in TEXTS.items()
               for found in re.findall(r"\bissue \d+\b", text)]
    assert not outside and not tracker, outside + tracker


POINTER = re.compile(r"\bsee [\w ]{0,25}\b(?:above|below)\b|\((?:above|below)\)"
                     r"|\b(?:command|grid|table|section|list) (?:above|below)\b")


def test_pages_link_instead_of_pointing_above_or_below():
    """'see above' sends a reader who came by a link to another page, or by search, nowhere."""
    found = [f"{_name(page)}: {match}" for page in PAGES
             for match in POINTER.findall(TEXTS[page])]
    assert not found, found


def _commands(prefix):
    return sorted({(page, line.strip()) for page in PAGES
                   for line in _code_spans(TEXTS[page])
                   if re.search(rf"(?:^|\s){re.escape(prefix)}\s", line)})


@pytest.mark.parametrize("subcommand", sorted(cli.COMMANDS))
def test_each_rnnbench_command_answers_help(subcommand, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([subcommand, "--help"])
    assert done.value.code == 0 and "usage" in capsys.readouterr().out


def test_each_rnnbench_command_the_pages_give_is_a_command():
    given = {line.split("rnnbench", 1)[1].split()[0] for _, line in _commands("rnnbench")
             if line.split("rnnbench", 1)[1].split()} - {"<command>"}
    assert given and given <= set(cli.COMMANDS), given - set(cli.COMMANDS)


def test_each_script_command_the_pages_give_takes_its_arguments():
    """A `python3 -m rnnbench.pipeline.container ARGS` line runs as given: its argument count
    is one the module accepts (build_arguments takes four)."""
    from rnnbench.pipeline import container

    for page, line in _commands("python3"):
        words = shlex.split(line.split("#")[0])
        if "rnnbench.pipeline.container" in words:
            args = words[words.index("rnnbench.pipeline.container") + 1:]
            assert len(args) == container.build_arguments.__code__.co_argcount, (page, line)


def _snakemake_lines():
    """Every Snakemake command line the pages and the presets' comments give, as words after
    the word snakemake (up to a shell comment, a pipe or an &&)."""
    found = set()
    comments = []  # a preset's comment lines joined (a command may wrap), cut at ')' or ';'
    for path in PRESETS:
        text = " ".join(line.lstrip("# ") for line in TEXTS[path].splitlines()
                        if line.startswith("#"))
        comments += [(path.name, re.split(r"[();]|\s{2,}", "snakemake " + part)[0])
                     for part in text.split("snakemake ")[1:]]
    for page, line in [*_commands("snakemake"), *comments]:
        try:
            words = shlex.split(line.split("#")[0].replace("\\", " "), posix=True)
        except ValueError:  # a span cut inside quotes: not a whole command line
            continue
        for i, word in enumerate(words):
            if word.endswith("snakemake") and i + 1 < len(words):
                rest = words[i + 1:]
                for stop in ("&&", "|", ";"):
                    rest = rest[:rest.index(stop)] if stop in rest else rest
                prose = [k for k, w in enumerate(rest) if re.fullmatch(r"[A-Za-z]+[,.]?", w)
                         and not (k and rest[k - 1] in ("--cores", "-c", "--sdm", "--profile"))]
                rest = rest[:prose[0]] if prose and str(page).endswith(".yaml") else rest
                found.add((str(page), tuple(rest)))
    return sorted(found)


def test_each_snakemake_command_line_the_pages_give_parses_as_snakemake_reads_it():
    """Each line parses with Snakemake's own argument parser, and each --configfile it gives
    is a config file (a target after --configfile is read as a config file: this was
    presets/calibrate-resources.yaml's documented command)."""
    from snakemake.cli import get_argument_parser

    parser = get_argument_parser()
    lines = _snakemake_lines()
    assert len(lines) > 10
    for page, words in lines:
        try:
            args = parser.parse_args(list(words))
        except SystemExit:
            pytest.fail(f"{page}: snakemake {' '.join(words)} does not parse")
        for path in args.configfile or []:
            assert str(path).endswith((".yaml", ".yml", ".json")), (page, words, str(path))


def test_each_configfile_the_pages_give_is_a_valid_grid():
    for page, line in _commands("snakemake"):
        words = shlex.split(line.split("#")[0])
        for i, word in enumerate(words[:-1]):
            if word == "--configfile" and "/" in words[i + 1] and "F" != words[i + 1]:
                configcheck.check_files([REPO / words[i + 1]])


CELL_ID = re.compile(r"\b(?:basic_lstm|lstm|gru|basic_rnn)_bs\d+_ml\d+_sl\w+?_nu\d+_in\d+"
                     r"(?:_[a-z0-9]+)*\b")


@functools.lru_cache(maxsize=None)
def _grid_ids(path):
    config = yaml.safe_load(path.read_text())
    if not isinstance(config, dict) or config.get("cell") is None:  # claims only
        return set()
    return set(configcheck.check_files([path])[1])


def test_example_cell_ids_are_cells_of_the_main_job_or_of_the_preset_named_beside_them():
    main = _grid_ids(REPO / "config.yaml")
    stale = []
    for page in PAGES:
        for paragraph in TEXTS[page].split("\n\n"):
            named = re.findall(r"presets/[\w-]+\.yaml", paragraph)
            ids = set(main).union(*(_grid_ids(REPO / name) for name in named))
            stale += [f"{_name(page)}: {found}" for found in CELL_ID.findall(paragraph)
                      if found not in ids]
    assert not stale, stale


def test_a_preset_said_to_run_the_default_cell_has_config_yamls_shape():
    from rnnbench.grid.axes import SHAPE_AXES

    main = yaml.safe_load((REPO / "config.yaml").read_text())
    said = {path for path in PRESETS if re.search(r"default (grid's )?cell", TEXTS[path])}
    for page in PAGES:
        for sentence in re.split(r"(?<=[.;])\s", TEXTS[page]):
            if re.search(r"default (grid's )?cell", sentence):
                said |= {REPO / name for name in re.findall(r"presets/[\w-]+\.yaml", sentence)}
    for path in said:
        preset = yaml.safe_load(path.read_text())
        differ = {axis: preset[axis] for axis in SHAPE_AXES[:6]
                  if axis in preset and preset[axis] != main.get(axis, preset[axis])}
        assert not differ, (_name(path), differ)


def _pattern(name):
    """results/README.md's way of naming files (``<cell_id>``, ``<static\\|dynamic>``,
    ``...``) as a regular expression."""
    parts = re.split(r"(<[^>]+>|\.\.\.)", name.replace("\\|", "|"))
    return re.compile("".join(
        ("[^/]+" if part.startswith("<") else ".*") if part in ("...",) or part.startswith("<")
        else re.escape(part) for part in parts) + "$")


WRITTEN_ELSEWHERE = {
    "report.html": "--report's",
    "runs/<protocol>/first_look.json": "more_repeats' only: tests/e2e/test_workflow.py, "
                                       "test_more_repeats_go_where_the_step_ratio_is_undecided",
}
"""results/README.md's files that the tiny grid's run does not write, and who writes them."""


def test_results_file_names_are_the_workflows(finished_run):
    """The first column of results/README.md's table names what the workflow writes (each
    matches a file the tiny grid wrote; report.html is --report's), and every file name its
    text gives is one of those, or a file of the repository."""
    text = TEXTS[REPO / "results/README.md"]
    names = re.findall(r"^\| `([^`]+)`", text, re.M)
    written = [str(path.relative_to(finished_run / "results"))
               for path in (finished_run / "results").rglob("*") if path.is_file()]
    unmatched = [name for name in names if name not in WRITTEN_ELSEWHERE
                 and not any(_pattern(name).match(path) for path in written)]
    assert names and not unmatched, unmatched
    basenames = [_pattern(name.split("/")[-1].split(", ")[0]) for name in names
                 if name.split("/")[-1] != "..."]
    repo_files = {path.name for path in REPO.rglob("*") if ".venv" not in path.parts}
    stray = [token for token in re.findall(r"`([\w.<>-]+\.(?:json|csv|svg|html|tsv|npz))`",
                                           text)
             if token not in repo_files and not any(p.match(token) for p in basenames)]
    assert not stray, stray


def _preset_minutes(path):
    found = re.search(r"About (\d+(?:\.\d+)?) minutes", " ".join(
        line.lstrip("# ") for line in path.read_text().splitlines() if line.startswith("#")))
    return float(found.group(1)) if found else None


def test_presets_page_agrees_with_the_presets_and_their_runs():
    text = TEXTS[REPO / "docs/presets.md"]
    # durations: the page's comment beside each command is the preset's own
    for name, minutes in re.findall(r"--configfile presets/(case-[\w-]+)\.yaml\s+# (?:about )?"
                                    r"(\d+(?:\.\d+)?) min", text):
        assert float(minutes) == _preset_minutes(REPO / f"presets/{name}.yaml"), name
    # the machine the page names is the one each run's FINDINGS names
    for findings in (REPO / "docs/presets").glob("*/FINDINGS.md"):
        machine = re.search(r"\b(Intel|AMD)(?:\(R\))? (\w+)", findings.read_text())
        assert machine and f"{machine.group(1)} {machine.group(2).replace('(R)', '')}" in text, \
            findings
    assert "EPYC" not in text or all("EPYC" in f.read_text()
                                     for f in (REPO / "docs/presets").glob("*/FINDINGS.md"))
    # a count of busy cells, where the page gives one, is the run's
    for name, busy, total in re.findall(r"(case-[\w-]+): (\d+) of (\d+) cells? flagged busy",
                                        text):
        findings = (REPO / f"docs/presets/{name}/FINDINGS.md").read_text()
        assert f"{busy} of {total}" in findings, name
    assert "every FINDINGS flags" not in text


def test_the_readme_reproducibility_figures_are_the_committed_benchmarks():
    """README's decision count, coverage and wall times are docs/figures/reproducibility.md's."""
    readme = (REPO / "README.md").read_text().replace("\n", " ")
    table = (REPO / "docs/figures/reproducibility.md").read_text()
    same = re.search(r"Identical decisions: (\d+) of (\d+)", table).groups()
    covered = re.search(r"covering the other run's estimate: (\d+) of (\d+)", table).groups()
    times = re.search(r"Wall time of the runs: (\d+) s, (\d+) s", table).groups()
    assert f"gave {same[0]} of {same[1]} decisions alike" in readme
    contradictory = re.search(r"contradictory: (\d+)", table).group(1)
    assert (contradictory == "0") == ("none contradictory" in readme)
    assert f"other's 95 % intervals {covered[0]} of {covered[1]} times" in readme
    assert f"({times[0]} s and {times[1]} s each;" in readme


def test_the_my_model_example_is_its_committed_run():
    """docs/config.md's 'Your own model': every figure it quotes is in the committed run's
    FINDINGS (docs/figures/my-model/), and that run measured presets/my-model.yaml's shape."""
    text = TEXTS[REPO / "docs/config.md"]
    section = text[text.index("## Your own model"):]
    findings = (REPO / "docs/figures/my-model/FINDINGS.md").read_text()
    quoted = re.findall(r"\d+\.\d+(?: \[\d+\.\d+, \d+\.\d+\]| to \d+\.\d+)?|\d+ \[\d+, \d+\]",
                        section.split("Its FINDINGS")[1])
    assert len(quoted) >= 7  # setup, steps, break-even and memory figures
    for figure in quoted:
        assert figure in findings, figure
    preset = yaml.safe_load((REPO / "presets/my-model.yaml").read_text())
    assert (f"a {preset['cell'][0]} of {preset['num_units'][0]} units, batch "
            f"{preset['batch_size'][0]}, {preset['input_dim'][0]} inputs, padded to max_len "
            f"{preset['max_len'][0]}") in findings
