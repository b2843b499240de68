"""The README's answer, in words, from the committed reference runs under docs/figures/.

It gives the choice per api, the setup and step ratios with their intervals, how the answer
moves with max_len and length, and the cost model's why. ``rnnbench reference`` writes it
between ANSWER_BEGIN and ANSWER_END; tests/commands/test_reference.py holds it to the runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from rnnbench.grid.apis import APIS
from rnnbench.grid.configcheck import margin_of
from rnnbench.grid.configfiles import read_config
from rnnbench.grid.layout import REPO
from rnnbench.grid.vocabulary import API_WORDS
from rnnbench.report import machinepage, modelpages as modeldocs
from rnnbench.results.load import read_table
from rnnbench.stats.formats import (breakeven_text, catch_up_text, column_interval,
                                    margin_text, shape_words)
from rnnbench.stats.intervals import decide
from rnnbench.stats.tables import axis_words, claim_table, decided_gap_share
from rnnbench.grid.axes import value_of

FIGURES = REPO / "docs" / "figures"
REFERENCE_RUNS = {"main": ("config.yaml", "docs/figures"),
                  "apis": ("presets/reference-apis.yaml", "docs/figures/apis"),
                  "sweep": ("presets/reference-sweep.yaml", "docs/figures/sweep"),
                  "map": modeldocs.MAP, "heldout": modeldocs.HELDOUT,
                  "probe-map": ("presets/reference-map.yaml", "docs/figures/probe-map"),
                  "probe-heldout": ("presets/probe-heldout.yaml", "docs/figures/probe-heldout")}
"""Each reference run: its config and the folder its results are committed in (both
relative to the repository)."""
WITH_RUNS = ("map", "heldout", "probe-map", "probe-heldout")
"""The reference runs whose measurements.csv is committed too: the cost model is fitted to
the map's runs (rnnbench predict), and the held-out runs are its check."""
IN_ANSWER = ("apis", "sweep", "map")
"""The reference runs besides main that the README's answer reads."""
ANSWER_BEGIN = "<!-- answer: written by rnnbench reference -->"
ANSWER_END = "<!-- answer end -->"


def _ratio(cell: pd.Series, metric: str) -> str:
    return column_interval(cell, f"ratio_{metric}")


def _length_words(cell: pd.Series, clause: bool = False) -> str:
    """A cell's sequence lengths in words: 'sequences that fill max_len' ('sequences fill
    max_len' as a ``clause``), 'sequences of 2 of 24 steps' ('sequences are 2 of 24 steps
    long')."""
    value = str(cell["sequence_length"])
    if value == "full":
        return "sequences fill max_len" if clause else "sequences that fill max_len"
    length = value[1:].replace("-", " to ") if value.startswith("u") else value
    return (f"sequences are {length} of {int(cell['max_len'])} steps long" if clause
            else f"sequences of {length} of {int(cell['max_len'])} steps")


def _step_ms(cell: pd.Series) -> str:
    """The two median steps in ms: '2.6 against 3.3 ms'."""
    return (f"{1e3 * cell['static_median_step_s']:.2g} against "
            f"{1e3 * cell['dynamic_median_step_s']:.2g} ms")


def _breakeven_seconds(cell: pd.Series) -> float:
    """Seconds of training (setup included) at the break-even: dynamic's setup plus the
    break-even steps at dynamic's median step, where both lines meet."""
    return cell["dynamic_setup_s"] + cell["breakeven_steps"] * cell["dynamic_median_step_s"]


def _cause_sentences(summary: pd.DataFrame, claims: list[dict], margin: float) -> list[str]:
    """The cause the grid isolates, in two sentences: an ablation cell whose step verdict (on
    the first step claim with a seed figure) differs from its reference's, both conclusive,
    and its share of the log-ratio distance to that figure, where the intervals decide it
    (tables.decided_gap_share; verdicts at the practical ``margin``)."""
    table = claim_table(summary, [c for c in claims if c["quantity"] == "median_step_s"
                                  and c.get("figure") is not None][:1], margin)
    sentences = []
    for _, twin in table[~table["reference"]].iterrows():
        ref = table[table["cell_id"] == twin["base_cell_id"]].iloc[0]
        share = decided_gap_share(twin, ref, twin["figure"])
        if twin["verdict"] == ref["verdict"] or share is None:
            continue
        cell = summary.set_index("cell_id").loc[twin["cell_id"]]
        share *= 100
        sentences += [
            f"Why the blog post found static faster: up to TensorFlow 1.5, {twin['ablations']}."
            f" With that loop and {_length_words(cell)}, static's steps take "
            f"{_ratio(cell, 'median_step_s')} of dynamic's.",
            f"That old loop closes {share:.0f} % of the distance, on a log scale, between our "
            f"{ref['ratio']:.2f} and the post's own {twin['figure']:.2f} (its GPU, TF 1.x)."]
    return sentences


def _step_decision(cell: pd.Series, margin: float) -> str:
    """intervals.decide of a summary row's step ratio at the practical ``margin``."""
    return decide(cell["ratio_median_step_s_ci_low"], cell["ratio_median_step_s_ci_high"],
                  margin)


def _faster(cell: pd.Series, margin: float) -> bool:
    """Static's steps faster than dynamic's by more than ``margin`` (the 95 % interval)."""
    return _step_decision(cell, margin) == "below"


def impl_names(cell: pd.Series) -> tuple[str, str]:
    """Name what plays static's and dynamic's part in ``cell``'s api (vocabulary.API_WORDS).

    Args:
        cell: a summary row, with api, max_len and unroll.

    Returns:
        (static's name, dynamic's name), a JAX scan's unroll factor written out:
        ('scan unroll=24', 'scan unroll=1').
    """
    words = API_WORDS[cell["api"]]
    factor = str(value_of(cell, "unroll"))
    factor = str(int(cell["max_len"])) if factor in ("max_len", "nan") else factor
    return words["static"].replace("=k", f"={factor}"), words["dynamic"]


def choice(cells: pd.DataFrame, margin: float) -> str:
    """State the choice in one sentence, in the api's words (impl_names).

    The choice is the loop, unless some cell's unrolled steps are faster by more than
    ``margin`` (their interval below 1 / (1 + margin)) and pay back its setup. Then it gives
    the fewest break-even steps (and seconds of training) among such cells. It names their
    lengths, unless that holds at every length measured.

    Args:
        cells: summary rows of one api, without ablations.
        margin: the practical margin (intervals.decide).

    Returns:
        The sentence.
    """
    static, dynamic = impl_names(cells.iloc[0])
    faster = sorted((cell for _, cell in cells.iterrows()
                     if _faster(cell, margin) and not pd.isna(cell["breakeven_steps"])),
                    key=lambda cell: cell["breakeven_steps"])
    if not faster:
        decisions = {_step_decision(cell, margin) for _, cell in cells.iterrows()}
        said = ("never paid back its setup" if decisions == {"above"} else
                f"was within {margin_text(margin)} of it per step, too little to pay back "
                "its setup" if decisions == {"within"} else
                "did not clearly pay back its setup")
        return f"Use {dynamic}: {static} {said} here."
    best = faster[0]
    after = (f"past about {int(best['breakeven_steps'])} steps ({_breakeven_seconds(best):.0f} s"
             " of training here)")
    if len(faster) == len(cells) and len(cells) > 1:
        steps = _listed_range([int(cell["breakeven_steps"]) for cell in faster])
        seconds = _listed_range([round(_breakeven_seconds(cell)) for cell in faster])
        return (f"Use {static} if you train past about {steps} steps ({seconds} s of training "
                f"here), at {'both' if len(cells) == 2 else 'all'} lengths measured; for fewer "
                f"steps, {dynamic}.")
    return (f"Use {dynamic}, unless your {_length_words(best, clause=True)} and you train "
            f"{after}: then {static} is faster overall.")


def api_sentences(summary: pd.DataFrame, margin: float) -> list[str]:
    """Write the README's answer for Keras and JAX, from the apis reference run.

    Args:
        summary: the apis run's summary (docs/figures/apis/summary.csv); cells with ablations
            are left out.
        margin: the practical margin the choice is decided at.

    Returns:
        Per api, a paragraph: the choice, the setup ratio, and the step ratio (unrolled over
        the loop, 95 % interval) in each cell.
    """
    out = []
    for api, cells in summary[summary["ablations"].fillna("") == ""].groupby("api", sort=False):
        static, dynamic = impl_names(cells.iloc[0])
        steps = [f"{_ratio(cell, 'median_step_s')} (with {_length_words(cell)})"
                 for _, cell in cells.iterrows()]
        out.append(
            f"**{APIS[api].title}: {choice(cells, margin)}** "
            f"Setup takes {cells['ratio_setup_s'].mean():.1f} times as long with {static} "
            f"({cells['static_setup_s'].mean():.2g} s against "
            f"{cells['dynamic_setup_s'].mean():.2g} s). Each {static} step takes "
            + ", ".join(steps) + f" of {dynamic}'s.")
    return out


def sweep_sentences(summary: pd.DataFrame, margin: float) -> list[str]:
    """Say how the answer moves with max_len and the sequences' length, from the sweep run.

    Args:
        summary: the sweep run's summary (docs/figures/sweep/summary.csv); cells with
            ablations are left out.
        margin: the practical margin.

    Returns:
        Per sequence_length, a sentence on static's step ratio at each max_len; then one on
        where static's steps are faster by more than ``margin``.
    """
    cells = summary[summary["ablations"].fillna("") == ""].copy()
    cells["max_len"] = cells["max_len"].astype(int)
    out, wins = [], {}
    for length, group in cells.groupby(cells["sequence_length"].astype(str), sort=False):
        group = group.sort_values("max_len")
        words = axis_words("sequence_length", length)
        ratios = [f"{cell['ratio_median_step_s']:.2f}" for _, cell in group.iterrows()]
        out.append(f"With {words}, static's steps take {_listed(ratios)} of dynamic's at "
                   f"max_len {_listed([str(m) for m in group['max_len']])}.")
        for _, cell in group[[_faster(cell, margin) for _, cell in group.iterrows()]].iterrows():
            wins.setdefault(int(cell["max_len"]), []).append(words)
    out.append(f"static_rnn's steps are faster by more than {margin_text(margin)} (the whole "
               "interval) only " + "; ".join(
        f"at max_len {max_len} ({_listed(words)})" for max_len, words in sorted(wins.items()))
        + "; not elsewhere." if wins else
        f"static_rnn's steps are faster by more than {margin_text(margin)} in none of these "
        "cells.")
    return out


def _listed_range(numbers: list[int]) -> str:
    """'614' where they are one number, else '614 to 683'."""
    low, high = min(numbers), max(numbers)
    return f"{low}" if low == high else f"{low} to {high}"


def _listed(words: list[str]) -> str:
    """'12', '12 and 24', '12, 24 and 48'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def answer(summary: pd.DataFrame, measurements: pd.DataFrame, claims: list[dict],
           margin: float, main_job_s: float, tests_s: float | None = None, apis: pd.DataFrame | None = None,
           sweep: pd.DataFrame | None = None, machines: dict[str, str] | None = None,
           map: pd.DataFrame | None = None, validated: pd.DataFrame | None = None,
           in_machine_terms: str | None = None) -> str:
    """Write the README's answer, in short sentences, from the reference run's tables.

    In order: the choice as a recommendation; the machine and the shape in words; static /
    dynamic setup; per reference cell (compat_v1, no ablation) the step ratio with its 95 %
    interval and the break-even in steps and seconds; peak memory in MiB; the cause the grid
    isolates. Then the apis, sweep and map paragraphs where given, and the two commands with
    the measured times.

    Args:
        summary: docs/figures/summary.csv (summary.summarize), or pooled.csv of several runs
            (pooling.pooled_summary).
        measurements: the first rows of results/measurements.csv, for where it ran
            (device_name, tensorflow_version, threads, python_version).
        claims: the config's claims.
        margin: the config's practical margin (intervals.decide), for every decision.
        main_job_s: the main job's wall time, seconds.
        tests_s: the test suite's wall time, seconds (None: not measured).
        apis: the apis reference run's summary (api_sentences), or None.
        sweep: the sweep reference run's summary (sweep_sentences), or None.
        machines: the apis, sweep and map runs' device names (run.json), named where they
            differ from ``measurements``'.
        map: the map reference run's measurements (the cost model's runs), or None.
        validated: costmodel.check.validation of the held-out run, or None.
        in_machine_terms: machinepage.machine_paragraph's words, or None.

    Returns:
        The block, ANSWER_BEGIN and ANSWER_END included.
    """
    machines = machines or {}
    plain = summary[(summary["api"] == "compat_v1") & (summary["ablations"] == "")]
    run = measurements.iloc[0]
    setups = plain["ratio_setup_s"]
    sentences = [
        f"**{choice(plain, margin)}**",
        f"Measured on {run['device_name']} ({int(run['cpus'])} cores, TensorFlow "
        f"{run['tensorflow_version']}, {int(run['intra_op_parallelism_threads'])} thread) for "
        f"{shape_words(plain)}; " + _processes_words(plain) + " A step-time difference under "
        f"{margin_text(margin)} counts as none.",
        "static_rnn takes "
        + (f"{setups.min():.1f} to {setups.max():.1f} times (over the {len(plain)} lengths)"
           if len(plain) > 1 else f"{setups.iloc[0]:.1f} times")
        + f" as long to set up ({plain['static_setup_s'].mean():.1f} s against "
        f"{plain['dynamic_setup_s'].mean():.2f} s).",
    ]
    sentences += [_step_sentence(cell, margin) for _, cell in plain.iterrows()]
    sentences.append(
        f"static_rnn needs {plain['ratio_peak_rss_mb'].max():.2f} times the memory "
        f"({plain['static_peak_rss_mb'].max():.0f} MiB against "
        f"{plain['dynamic_peak_rss_mb'].max():.0f} MiB at peak).")
    sentences += _cause_sentences(summary, claims, margin)
    paragraphs = ["\n".join(sentences)]
    def where(machine: str | None) -> str:  # another run's machine, where it is another
        return "" if machine in (None, run["device_name"]) else f" (measured on {machine})"
    if apis is not None:
        paragraphs += [f"The same shape in Keras and JAX{where(machines.get('apis'))} "
                       "([its FINDINGS](docs/figures/apis/FINDINGS.md)).",
                       *api_sentences(apis, margin)]
    if sweep is not None:
        paragraphs.append(
            f"How the answer moves with max_len and length{where(machines.get('sweep'))}, "
            f"from {int(sweep['static_repeats'].iloc[0])} fresh processes per setting "
            "([its FINDINGS and 95 % intervals]"
            "(docs/figures/sweep/FINDINGS.md)).\n" + "\n".join(sweep_sentences(sweep, margin))
            + "\nFor your own shape, write it in a config and run it ([your own model]"
            "(docs/config.md#your-own-model)).")
    if map is not None:
        paragraphs.append(modeldocs.map_paragraph(map, validated, where(machines.get("map")))
                          + (f" {in_machine_terms}" if in_machine_terms else ""))
    return (ANSWER_BEGIN + "\n" + "\n\n".join(paragraphs) + "\n\n"
            "```sh\n"
            f"./install.sh && .venv/bin/snakemake --cores 1    # the main job: "
            f"{main_job_s / 60:.0f} min on the reference machine\n"
            "./install.sh && .venv/bin/pytest                 # the tests"
            + (f": {tests_s / 60:.0f} min there" if tests_s else "") + "\n"
            "```\n" + ANSWER_END)


def _processes_words(plain: pd.DataFrame) -> str:
    """How many processes, and runs where several were pooled (pooling.pooled_summary's
    ``runs``), stand behind each number, and what the intervals hold."""
    processes, most = int(plain["static_repeats"].min()), int(plain["static_repeats"].max())
    more = (f" A cell whose step ratio the first {processes} left undecided got {most}."
            if most > processes else "")
    runs = int(plain["runs"].iloc[0]) if "runs" in plain else 1
    if runs < 2:
        return f"{processes} fresh processes per setting, 95 % intervals in brackets.{more}"
    return (f"{processes} fresh processes per setting in each run.{more} Pooled from {runs} "
            "runs; the 95 % intervals in brackets hold the drift between runs.")


def _step_sentence(cell: pd.Series, margin: float) -> str:
    """A reference cell's step ratio (each run's too, where several were pooled), its
    decision at ``margin`` and its break-even."""
    ratio = _ratio(cell, "median_step_s") + (
        f" (runs: {', '.join(str(cell['ratio_median_step_s_runs']).split())})"
        if "ratio_median_step_s_runs" in cell else "")
    step = _step_decision(cell, margin)
    if step == "undecided":
        return (f"With {_length_words(cell)}, static's steps take {ratio} of dynamic's "
                f"({_step_ms(cell)}): undecided, so its setup may never pay back.")
    if step == "within":
        return (f"With {_length_words(cell)}, static's steps take {ratio} of dynamic's "
                f"({_step_ms(cell)}): no practical difference; static {catch_up_text(cell)}.")
    if pd.isna(cell["breakeven_steps"]) or step != "below":
        return (f"With {_length_words(cell)}, each static step takes {ratio} times dynamic's "
                f"({_step_ms(cell)}): static never catches up.")
    return (f"With {_length_words(cell)}, static's steps take {ratio} of dynamic's "
            f"({_step_ms(cell)}): it catches up after {breakeven_text(cell)} steps, about "
            f"{_breakeven_seconds(cell):.0f} s of training here.")


def readme_answer(readme: str) -> str:
    """Cut the answer block out of the README's text.

    Args:
        readme: README.md's text.

    Returns:
        The block, ANSWER_BEGIN and ANSWER_END included.

    Raises:
        ValueError: if the README has no such block.
    """
    start, end = readme.find(ANSWER_BEGIN), readme.find(ANSWER_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md: no block between {ANSWER_BEGIN!r} and {ANSWER_END!r}")
    return readme[start:end + len(ANSWER_END)]


def expected_answer(repo: Path = REPO) -> str:
    """Write answer() of the committed reference runs and the shipped config.

    Args:
        repo: the repository root. Read: docs/figures/ (pooled.csv where several runs were
            pooled, else summary.csv; run.json), the IN_ANSWER runs' folders where committed,
            the held-out run where committed, and config.yaml.

    Returns:
        The README's answer block, as it should read.
    """
    figures = repo / "docs" / "figures"
    run = json.loads((figures / "run.json").read_text())
    config = read_config([repo / "config.yaml"], repo)  # the seeds' claims: claims_from
    others, machines = {}, {}
    for name, (_, folder) in REFERENCE_RUNS.items():
        if name in IN_ANSWER and (repo / folder / "summary.csv").exists():
            others[name] = read_table(repo / folder / (
                "measurements.csv" if name in WITH_RUNS else "summary.csv"))
            machines[name] = json.loads((repo / folder / "run.json").read_text())["where"][
                "device_name"]
    heldout = repo / modeldocs.HELDOUT[1]
    if (heldout / "measurements.csv").exists():
        from rnnbench.costmodel.check import validation

        others["validated"] = validation(read_table(heldout / "predicted.csv"),
                                         read_table(heldout / "measurements.csv"))
    pooled = figures / "pooled.csv"  # several runs pooled (rnnbench reference --runs)
    return answer(read_table(pooled if pooled.exists() else figures / "summary.csv"),
                  pd.DataFrame([run["where"]]),
                  config["claims"], margin_of(config), run["workflow_s"], run.get("tests_s"),
                  **others, machines=machines,
                  in_machine_terms=machinepage.machine_paragraph(repo))
