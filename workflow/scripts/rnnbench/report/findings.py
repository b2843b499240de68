"""results/FINDINGS.md in Markdown, written only from measured tables.

Every number and verdict comes from summary.csv and measurements.csv through
rnnbench.stats.tables; nothing is written by hand. Claim verdicts are tables.verdict's, at the
config's practical margin (intervals.decide). The sections for one api or question are
rnnbench.report.sections'; numbers are written as rnnbench.stats.formats writes them.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone

import pandas as pd

from rnnbench.grid.axes import LABEL_AXES
from rnnbench.stats.claims import judge, unclear_reason
from rnnbench.report.sections import (busy_words, cold_fetch_lines, effects_section, jax_lines,
                                        keras_lines, overlapped, probe_lines, setup_section,
                                        stability_lines, version_section)
from rnnbench.stats.formats import (breakeven_text, decision_text, figure_text, margin_text,
                                    ratio_text, shape_words)
from rnnbench.stats.intervals import CONFIDENCE, MIN_REPEATS
from rnnbench.stats.scaling import scaling_section, scaling_table
from rnnbench.report.why import why_section
from rnnbench.measure.steady import SETTLE_BLOCK
from rnnbench.stats.tables import (QUANTITIES, ablation_effects, cell_labels, claim_table,
                             decided_gap_share, setup_split, version_table)
from rnnbench.grid.apis import APIS
from rnnbench.grid.vocabulary import API_WORDS


def statement(claim: dict) -> str:
    """A claim's statement as FINDINGS.md shows it: its own words, with HTML's <, > and &
    escaped (config text, shown as text: never as markup in a Markdown viewer)."""
    return html.escape(claim["statement"], quote=False)


def claim_source(claim: dict) -> str:
    """Say who made a claim, from its ``seed`` field.

    Args:
        claim: a config claim, with field ``seed``.

    Returns:
        "000, blog post 'X'" -> "the blog post 'X'"; words starting with an article as they
        are ("a user's claim"); a bare number "000" -> "seed 000"; empty: "an unnamed source".
    """
    seed = _one_line(claim["seed"])  # whatever the config held
    words = re.sub(r"^\d+(, )?", "", seed)
    if not seed:
        return "an unnamed source"
    if not words:
        return f"seed {seed}"
    return words if words.startswith(("a ", "an ", "the ")) else f"the {words}"


def _one_line(text) -> str:
    """A config's text on one line, its runs of white space one space (a newline in a seed
    or conditions would break FINDINGS' Markdown)."""
    return " ".join(str(text).split())


def _source_line(claim: dict) -> str:
    """'000, blog post X (its conditions)': a claim's seed and conditions, on one line."""
    return (_one_line(claim["seed"]) or "unnamed") + (
        f" ({_one_line(claim['conditions'])})" if claim.get("conditions") else "")


def _verb(verdict: str) -> str:
    """'holds', 'does not hold', 'is inconclusive': a verdict after 'it'."""
    return "is inconclusive" if verdict == "inconclusive" else verdict


def _unclear_reason(row: pd.Series, margin: float) -> str:
    """Why a claim_table row's verdict is inconclusive (tables.verdict): its interval reaches
    past the margin, or there is none (claims.unclear_reason, without the bounds the table
    gives)."""
    return unclear_reason(row["ci_low"], row["ci_high"], bounds=False, margin=margin)


def _why_inconclusive(row: pd.Series, margin: float) -> str:
    """A claim_table row's verdict, with the reason where it is inconclusive."""
    return (f"inconclusive ({_unclear_reason(row, margin).replace('95 % ', '')})"
            if row["verdict"] == "inconclusive" else row["verdict"])


def bottom_line(table: pd.DataFrame, claims: list[dict], labels: dict[str, str],
                margin: float) -> list[str]:
    """Write FINDINGS' first section, the bottom line of each ratio claim.

    Per claim: who claimed it (its figures are theirs, not ours). Then, per api: the verdicts
    over the cells without an ablation (counts, and the range of ratios: the unrolled variant
    over the loop, vocabulary.API_WORDS), and the claim's figure against our intervals. Then
    the cause where the grid isolates one: an ablation under which the verdict changes. Where
    the intervals decide it, the share of the log-ratio gap to the claim's figure it closes
    (tables.decided_gap_share).

    Args:
        table: tables.claim_table at ``margin``.
        claims: the config's ratio claims; a claim without rows in ``table`` is skipped.
        labels: cell id -> its name (tables.cell_labels).
        margin: the config's practical margin.

    Returns:
        Markdown list lines.
    """
    lines = []
    for claim in claims:
        rows = table[table["claim"] == claim["id"]]
        if rows.empty:
            continue
        lines.append(f"- **{claim['id']}**: {claim_source(claim)} says \"{statement(claim)}\""
                     + (" (its figures, not ours)." if re.search(r"\d", claim["statement"])
                        else "."))
        for api, in_api in rows.groupby("api", sort=False):
            lines += [f"  - {line}" for line in _api_sentences(claim, in_api, labels, api,
                                                                 margin)]
    return lines


def _busy_line(runs: pd.DataFrame) -> list[str]:
    """The bottom line's count of the runs measured on a busy machine (load_results'
    ``busy``), and what they do to the verdicts; none where no run was."""
    if "busy" not in runs:
        return []
    own = runs[runs["measured_in"] == runs["cell_id"]]  # a shared run counts once
    busy = int(own["busy"].astype(bool).sum())
    if not busy:
        return []
    return [f"- **Busy machine**: {busy} of {len(own)} runs were measured on a busy machine "
            f"({busy_words(runs)}). They stay in the intervals and the verdicts, whose spread "
            "they widen; the cost model leaves them out (Stability; Why: the cost model)."]


def snakemake_runs(runs: pd.DataFrame) -> tuple[int, int, int]:
    """Count the Snakemake runs a table's runs were measured in (load_results'
    ``snakemake_run``).

    Args:
        runs: load_results's table; a shared run counts once, in the cell that measured it.

    Returns:
        (Snakemake runs named, runs that name none (measured before it was recorded, or by
        hand), cells whose own runs come from more than one Snakemake run).
    """
    if "snakemake_run" not in runs:
        return 0, 0, 0
    own = runs[runs["measured_in"] == runs["cell_id"]]
    named = own["snakemake_run"].dropna()
    split = int((named.groupby(own.loc[named.index, "cell_id"]).nunique() > 1).sum())
    return int(named.nunique()), int(len(own) - len(named)), split


def _snakemake_runs_line(runs: pd.DataFrame, counts: tuple[int, int, int]) -> list[str]:
    """The bottom line's word where the runs come from several Snakemake runs
    (``counts``: snakemake_runs'): their drift is in the comparisons, not in the intervals."""
    named, unnamed, split = counts
    if not _several_runs(counts):
        return []
    cells = runs["cell_id"].nunique()
    unnamed_words = f" (and {unnamed} runs that record none)" if unnamed else ""
    return [f"- **Measured in {named} Snakemake runs**{unnamed_words}: {split} of {cells} cells "
            "mix results of more than one, and cells measured in different ones are compared "
            "here. The drift between runs (a few per cent on the same machine, more hours "
            "apart) is in those comparisons but not in the intervals, which cover the spread "
            "within a run; `rnnbench reproduce` measures it."]


def _several_runs(counts: tuple[int, int, int]) -> bool:
    """Whether the runs come from more than one Snakemake run (``counts``: snakemake_runs';
    those that name none count as one more)."""
    named, unnamed, _ = counts
    return named + (unnamed > 0) > 1


def _overlap_line(runs: pd.DataFrame) -> list[str]:
    """The bottom line's count of the runs another measuring job of this workflow measured
    beside (sections.overlapped), and what they do to the verdicts; none where no run was."""
    found = overlapped(runs)
    if found is None or not found[0]:
        return []
    hit, looked, folders = found
    return [f"- **Measured beside another run**: {hit} of {looked} runs were measured while "
            "another measuring job of this workflow measured on this machine under another "
            f"measuring lock (in {folders}), which may have slowed them. They stay in the "
            "intervals and the verdicts; measure again with one lock for all runs on this "
            "machine (Stability)."]


def _api_sentences(claim: dict, rows: pd.DataFrame, labels: dict[str, str],
                   api: str, margin: float) -> list[str]:
    """bottom_line's sentences for one api's rows of a claim."""
    static, dynamic = API_WORDS[api]["static"], API_WORDS[api]["dynamic"]
    base = rows[rows["reference"]]
    units = ("cell without an ablation", "cells without an ablation") if len(base) < len(
        rows) else ("cell", "cells")
    low, high = base["ratio"].min(), base["ratio"].max()
    span = f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"
    out = [f"In {api} ({static} / {dynamic}), {_count(base['verdict'], units)} ({span})."]
    unclear = base[base["verdict"] == "inconclusive"]
    out += [f"Inconclusive where {reason}." for reason in
            dict.fromkeys(_unclear_reason(row, margin) for _, row in unclear.iterrows())]
    figure = claim.get("figure")
    if figure is not None:
        inside = int(base["figure_in_interval"].sum())
        said = f"The claim's {figure_text(figure)} lies"
        out.append(f"{said} inside {inside} of these intervals." if inside
                   else f"{said} outside every interval.")
    for _, twin in rows[~rows["reference"]].iterrows():
        ref = rows[rows["cell_id"] == twin["base_cell_id"]]
        if ref.empty or ref.iloc[0]["verdict"] == twin["verdict"]:
            continue
        ref = ref.iloc[0]
        out.append(f"With {twin['ablations']}, it {_verb(twin['verdict'])} for "
                   f"{labels[ref['cell_id']]} ({ratio_text(twin)} against {ratio_text(ref)}).")
        share = decided_gap_share(twin, ref, figure)
        if share is not None:
            out.append(f"That closes {100 * share:.0f} % of the log-ratio gap to the claim's "
                       f"{figure_text(figure)}.")
    return out


def _other_claim_test(claim: dict) -> str:
    """What a between, trend or law claim tests, in words (rnnbench.stats.claims)."""
    kind, quantity = claim["kind"], QUANTITIES[claim["quantity"]]
    if kind == "between":
        return (f"{claim['impl']} {quantity} at {claim['axis']} {claim['values'][0]} against "
                f"{claim['values'][1]}, {claim['direction']} (Welch's 95 % interval of the ratio)")
    if kind == "trend":
        return (f"the static / dynamic ratio of the {quantity} along {claim['axis']}, "
                f"{claim['direction']} (the 95 % interval of the slope of its log)")
    if "form" in claim:
        return (f"{claim['impl']} {quantity} linear in {claim['axis']} (a line that fits the "
                "repeats, rising)")
    return (f"{claim['impl']} {quantity} reaches {claim['value']:g} at {claim['axis']} "
            f"{claim['at']:g} (within the 95 % prediction interval of the law the runs "
            "choose: a line, or a power law where the repeats reject the line)")


def _other_claim_line(claim: dict, verdicts: list[dict]) -> list[str]:
    """The bottom line of a between, trend or law claim: who claimed it, its verdicts, the
    first estimate, and why a verdict is inconclusive (claims.judge's reasons)."""
    head = f"- **{claim['id']}**: {claim_source(claim)} says \"{statement(claim)}\"."
    if not verdicts:
        return [head, "  - Not judged: no group of cells in this grid has what it needs."]
    said = _count(pd.Series([v["verdict"] for v in verdicts]),
                  ("group of cells", "groups of cells"))
    reasons = sorted({v["reason"] for v in verdicts if v.get("reason")})
    return [head, f"  - {said[0].upper()}{said[1:]}: {verdicts[0]['estimate']}"
            + (f" (and {len(verdicts) - 1} more: see its section)." if len(verdicts) > 1
               else "."),
            *(f"  - Inconclusive: {reason}." for reason in reasons)]


def _threads(runs: pd.DataFrame) -> str:
    """'1 intra-op and 1 inter-op thread(s)', or every combination the grid ran."""
    pairs = runs[["intra_op_parallelism_threads", "inter_op_parallelism_threads"]]
    pairs = sorted(set(map(tuple, pairs.to_numpy().tolist())))
    return " or ".join(f"{intra} intra-op and {inter} inter-op thread(s)" for intra, inter in pairs)


def _count(verdicts: pd.Series, units: tuple[str, str] = ("cell", "cells")) -> str:
    """The verdicts over ``units`` (singular, plural) in words: 'it holds in 1 and is
    inconclusive in 2 of 3 cells' where they differ; 'it holds in the one cell', '... in both
    cells', '... in all 4 cells', 'it does not hold in either cell' ('in any of the 4 cells')
    where they agree."""
    counts = verdicts.value_counts()
    n = len(verdicts)
    if len(counts) == 1 and counts.index[0] == "does not hold":
        every = ("the one", units[0]) if n == 1 else ("either", units[0]) if n == 2 else (
            f"any of the {n}", units[1])
        return f"it does not hold in {every[0]} {every[1]}"
    if len(counts) == 1:
        every = "the one" if n == 1 else "both" if n == 2 else f"all {n}"
        return f"it {_verb(counts.index[0])} in {every} {units[n != 1]}"
    said = [f"{_verb(label)} in {counts[label]}"
            for label in ("holds", "does not hold", "inconclusive") if counts.get(label, 0)]
    return "it " + ", ".join(said[:-1]) + " and " + said[-1] + f" of {n} {units[1]}"


def causes(table: pd.DataFrame, labels: dict[str, str] | None = None) -> list[str]:
    """Say what each ablation changes, per cell with ablation twins.

    A twin is a cell equal to a base cell (all ablations at TensorFlow's defaults) except its
    ablations. With a seed figure f, the share of the gap explained is
    (log r_twin - log r_base) / (log f - log r_base). 1 means the ablation alone moves our
    ratio to the claim's. It is given only where the intervals decide it
    (tables.decided_gap_share).

    Args:
        table: rows of tables.claim_table.
        labels: cell id -> its name (tables.cell_labels); None names cells by id.

    Returns:
        One Markdown list line per twin.
    """
    lines = []
    for _, twin in table[~table["reference"]].iterrows():
        stem = twin["base_cell_id"]
        ref = table[table["cell_id"] == stem].iloc[0]
        name = (labels or {}).get(stem, f"`{stem}`")
        line = (f"- {name} with {twin['ablations']}: ratio {ratio_text(twin)} ({twin['verdict']}), "
                f"against {ratio_text(ref)} ({ref['verdict']}) without")
        share = decided_gap_share(twin, ref, twin["figure"])
        if share is not None:
            line += (f"; it closes {100 * share:.0f} % of the log-ratio gap to the claim's "
                     f"{figure_text(twin['figure'])}")
        elif twin["figure"] is not None and not pd.isna(twin["figure"]):
            line += ("; the intervals are too wide to say how much of the gap to the claim's "
                     "figure it closes")
        lines.append(line + ".")
    return lines


def _warmup_text(config: dict, runs: pd.DataFrame) -> str:
    """How the runs warmed up: detected (steady.warm_up) or, without room for the settle test,
    a fixed number of steps."""
    if runs["warmup_settled"].isna().all():
        return (f"a fixed warm-up of {config['warmup_steps']} steps (max_warmup_steps "
                f"{config['max_warmup_steps']} leaves no room for the settle test, which needs "
                f"{2 * SETTLE_BLOCK})")
    return (f"a warm-up of at least {config['warmup_steps']} steps that went on until the step "
            f"times had settled (at most {config['max_warmup_steps']}; the longest needed "
            f"{int(runs['warmup_steps_run'].max())})")


def _hosts(runs: pd.DataFrame) -> str:
    """'host vm', or, where runs came from several environments or hosts, each environment
    (load.environment) with its hosts and run count."""
    own = runs.drop_duplicates("path") if "path" in runs else runs
    if own["environment"].nunique() == 1 and own["hostname"].nunique() == 1:
        return f"host {own['hostname'].iloc[0]}"
    return ("environments (each cell's runs come from one, never pooled across them; hosts "
            "of one environment may share a cell): ") + "; ".join(
        f"{env}, host(s) {', '.join(sorted(set(group['hostname'])))}: {len(group)} runs"
        for env, group in own.groupby("environment", sort=True))


def _software(runs: pd.DataFrame) -> str:
    """'TensorFlow 2.21.0 (Keras 3.15.1), JAX 0.10.2 (Keras 3.15.1)', one entry per release
    the runs used (JAX for the runs of axes.JAX_APIS, which import no TensorFlow; Keras
    where a keras api ran on it), and the Apptainer images' sha256 (or 'no container')."""
    parts = []
    for framework, column in (("TensorFlow", "tensorflow_version"), ("JAX", "jax_version")):
        for release, group in runs.groupby(column, sort=True):
            keras = sorted(set(group["keras_version"].dropna()))
            parts.append(f"{framework} {release}"
                         + (f" (Keras {', '.join(keras)})" if keras else ""))
    images = sorted(set(runs["image_sha256"].dropna()))
    where = ("no container (bare run)" if not images else "Apptainer image" + (
        "s" if len(images) > 1 else "") + " sha256 " + ", ".join(f"{i[:16]}..." for i in images))
    return ", ".join(parts) + "; " + where


def findings_markdown(summary: pd.DataFrame, runs: pd.DataFrame, claims: list[dict],
                      config: dict, fits: list | None = None,
                      peaks: list[dict] | None = None) -> str:
    """Write results/FINDINGS.md, all from the tables.

    Sections: the bottom line (a sentence per claim), where it was measured, each claim's
    verdicts with our ratios and intervals, what the ablations change, stability flags,
    break-even, the method, and the cells' ids. Cells are named by what tells them apart
    (tables.cell_labels); tables are pandas' to_markdown.

    Args:
        summary: summary.csv, one row per cell (summary.summarize).
        runs: measurements.csv, one row per run (load.load_results).
        claims: the config's claims.
        config: the workflow's config; uses margin, repeats, more_repeats, steps,
            min_measure_s, warmup_steps, max_warmup_steps and extrapolate.
        fits: the cost model's fits of the run (rule aggregate's costmodel.json); None fits
            ``runs`` here (why.why_section).
        peaks: rule peak's records, whose probes Where this was measured gives
            (sections.probe_lines); None: no probe.

    Returns:
        The file's Markdown text.
    """
    labels = cell_labels(summary)
    margin = config["margin"]
    table = claim_table(summary, claims, margin)
    out = [
        "# Findings",
        "",
        f"Written by rule `findings` from `results/summary.csv` and `results/measurements.csv` "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC); do not edit, re-run the workflow.",
        "",
        f"What was measured: {shape_words(summary)}. Each cell below is named by what sets it "
        "apart. In each api the unrolled variant plays static's part and the loop dynamic's: "
        + ", ".join(f"{API_WORDS[api]['static']} against {API_WORDS[api]['dynamic']} ({api})"
                    for api in dict.fromkeys(summary["api"])) + ".",
        "",
        "## Bottom line",
        "",
    ]
    if not claims:
        out += ["The config lists no claims (`claims:`)."]
    ratio_claims = [c for c in claims if c.get("kind", "ratio") == "ratio"]
    others = {c["id"]: judge(c, runs, margin) for c in claims
              if c.get("kind", "ratio") != "ratio"}
    out += bottom_line(table, ratio_claims, labels, margin)
    for claim in claims:
        if claim["id"] in others:
            out += _other_claim_line(claim, others[claim["id"]])
    counts = snakemake_runs(runs)  # the Snakemake runs the results come from
    out += _busy_line(runs)
    out += _overlap_line(runs)
    out += _snakemake_runs_line(runs, counts)
    if ratio_claims and table["reference"].all():
        out += ["", "No cell of this grid ablates another (the ablation axes at one value "
                "each): no cause is isolated here."]
    out += _where_measured(summary, runs, config)
    out += [line for probe in probe_lines(peaks or []) for line in (probe, "")]
    if claims:
        out += ["## Claims", ""]
    for claim in claims:
        out += (_other_claim_section(claim, others[claim["id"]]) if claim["id"] in others
                else _claim_section(claim, table[table["claim"] == claim["id"]], labels,
                                    margin))
    out += _user_sections(summary, runs, labels, margin)
    out += _ablation_sections(summary, runs, labels, config)
    out += why_section(summary, runs, labels, fits)
    breakeven = pd.DataFrame({
        "cell": summary["cell_id"].map(labels),
        "steps after which static's total time stays below dynamic's [95 % interval]":
            [breakeven_text(cell) or "never" for _, cell in summary.iterrows()]})
    ids = pd.DataFrame({"cell": summary["cell_id"].map(labels),
                        "cell id (results/runs/<protocol>/<id>/)": "`" + summary["cell_id"] + "`"})
    out += ["## Break-even", "", breakeven.to_markdown(index=False), "",
            *_method(config, summary, _several_runs(counts)), "## Cells", "",
            ids.to_markdown(index=False)]
    return "\n".join(out) + "\n"


def _where_measured(summary: pd.DataFrame, runs: pd.DataFrame, config: dict) -> list[str]:
    """FINDINGS' 'Where this was measured': software, device, threads, hosts, the protocol."""
    first = runs.iloc[0]
    return [
        "",
        "## Where this was measured",
        "",
        f"{_software(runs)}; on {first['device']} ({first['device_name']}"
        + (f", widest vector set {first['cpu_simd']}" if isinstance(first.get("cpu_simd"), str)
           else "") + "), "
        f"{_threads(runs)}, Python {first['python_version']}, " + _hosts(runs)
        + f". {len(summary)} cells, {config['repeats']} repeats per cell and implementation, "
        f"each a fresh process measuring at least {config['steps']} steps and at least "
        f"{config.get('min_measure_s', 0):g} s ({int(runs['n_steps'].min())} to "
        f"{int(runs['n_steps'].max())} steps) after " + _warmup_text(config, runs) + "."
        + _dirty_text(runs),
        "",
    ]


def _dirty_text(runs: pd.DataFrame) -> str:
    """' N of M runs were measured ... (git dirty) ...', or '' where none was (or none says)."""
    own = runs.drop_duplicates("path") if "path" in runs else runs
    dirty = int((own["git_dirty"].astype(str) == "True").sum()) if "git_dirty" in own else 0
    return (f" {dirty} of {len(own)} runs were measured with uncommitted changes to the "
            "workflow's tracked files (git dirty; an edited config.yaml counts): their commit "
            "does not name all the code that measured them." if dirty else "")


def _more_repeats(config: dict, summary: pd.DataFrame) -> list[str]:
    """FINDINGS' paragraph on the second look, where the summary's ratio intervals were made
    for two looks (``ratio_confidence`` above 95 %; none for older tables or one look)."""
    if "ratio_confidence" not in summary or not (summary["ratio_confidence"] > CONFIDENCE).any():
        return []
    more = summary[summary["static_repeats"] > config["repeats"]]["cell_id"]
    return [
        f"More repeats (config `more_repeats`: {config['more_repeats']}): after the first "
        f"{config['repeats']} repeats, each cell whose step ratio was still undecided got "
        f"{config['more_repeats']} more paired repeat{'s' * (config['more_repeats'] > 1)}, "
        "and so did the cells that share its "
        f"runs ({len(more)} of {len(summary)} cells here"
        + (f": {', '.join(f'`{cell}`' for cell in more)}" if len(more) else "") + "). "
        f"Every ratio's interval is then at {100 * summary['ratio_confidence'].max():g} % at "
        "each look, so that both looks together "
        "keep each wrong decision under 2.5 % and each interval's coverage at 95 % "
        "(Bonferroni; `docs/method.md`, More repeats).",
        "",
    ]


def _modes(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The modes (grid axis mode) each api of ``summary`` ran, in the apis' registry order;
    a table from before the mode axis ran train alone."""
    modes = summary["mode"] if "mode" in summary else pd.Series("train", summary.index)
    return {api: [mode for mode in ("train", "inference") if mode in set(modes[summary["api"]
                                                                               == api])]
            for api in APIS if api in set(summary["api"])}


def step_lines(summary: pd.DataFrame) -> list[str]:
    """Say what one measured step ran, per api and mode of the grid (rnnbench.grid.apis).

    Args:
        summary: summary.csv's rows (api, and mode where the table has it).

    Returns:
        FINDINGS' paragraph: one sentence for one api and mode, else a list, one line each.
    """
    said = [(api, mode, APIS[api].step[mode])
            for api, modes in _modes(summary).items() for mode in modes]
    if len(said) == 1:
        api, mode, words = said[0]
        return [f"What a measured step runs ({api}, mode {mode}): {words}.", ""]
    return ["What a measured step runs, per api and mode:", "",
            *(f"- {api}, mode {mode}: {words}." for api, mode, words in said), ""]


def _method(config: dict, summary: pd.DataFrame, several: bool = False) -> list[str]:
    """FINDINGS' 'Method': what a step ran, how the numbers were made, and what an interval
    covers (the spread between processes of this one run, not the drift between runs)."""
    return [
        "## Method",
        "",
        *step_lines(summary),
        "Each run gives one value (its setup seconds, the median of "
        "its measured step times, its peak RSS); a cell's figure is the geometric mean of its "
        "runs' values, and a static / dynamic ratio the ratio of geometric means, each with a "
        "95 % t-interval on the log scale over processes, paired by repeat (the workflow runs "
        "the static and dynamic runs of a repeat next to each other, which cancels the "
        "machine's drift; a resumed run, or one a cell shares with its reference, is paired "
        "by its repeat all the same); "
        "break-even intervals invert the paired t-test (Fieller). The method and its source "
        "(Kalibera and Jones, ISMM 2013; Welch 1947; Fieller 1954) are in "
        "`docs/method.md` (Intervals), and a simulation test shows its 95 % "
        "intervals cover 95 % at these repeats"
        + ("" if config["repeats"] >= MIN_REPEATS else
           f"; with {config['repeats']} repeats, below {MIN_REPEATS}, they do not") + ".",
        "",
        f"Each ratio is decided at a practical margin of {margin_text(config['margin'])} "
        "(config `margin`): larger or smaller by more than it where the whole interval lies "
        "past it, no practical difference where the whole interval lies within it, else "
        "undecided; a claim holds where the decision is its side, does not hold where it is "
        "the other side or no difference (each wrong decision at most 2.5 %; "
        "`docs/method.md`, Decisions).",
        "",
        *_more_repeats(config, summary),
        "What an interval covers: the spread between fresh processes within "
        + ("a run (these come from several: see the bottom line). " if several else
           "this one run. ") +
        "It does not cover the drift between two runs on the same machine, which can be "
        "larger. `rnnbench reproduce` runs the grid twice and counts how often one run's "
        "estimate falls inside the other's intervals.",
        "",
    ]


def _other_claim_section(claim: dict, judged: list[dict]) -> list[str]:
    """A between, trend or law claim's section: its source, its test and its verdicts
    (claims.judge)."""
    verdicts = pd.DataFrame(
        [{"scope": v["scope"], "estimate": v["estimate"],
          "verdict": v["verdict"] + (f" ({v['reason']})" if v.get("reason") else "")}
         for v in judged], columns=["scope", "estimate", "verdict"])
    return [f"### {claim['id']}: {statement(claim)}", "",
            f"Source: {_source_line(claim)}. "
            f"Tested: {_other_claim_test(claim)}.", "",
            verdicts.to_markdown(index=False) if len(verdicts) else
            "No group of cells in this grid has what the claim needs.", ""]


def _claim_section(claim: dict, rows: pd.DataFrame, labels: dict[str, str],
                   margin: float) -> list[str]:
    """A ratio claim's section: its source, what is tested, its decision and verdict per cell
    (``rows``: the claim's rows of tables.claim_table at ``margin``) and what the ablations
    change."""
    smaller = "smaller" if claim["quantity"] == "peak_rss_mb" else "faster"
    figure = claim.get("figure")
    verdicts = pd.DataFrame({
        "cell": rows["cell_id"].map(labels),
        "static / dynamic [95 % interval]": [ratio_text(r) for _, r in rows.iterrows()],
        f"decision (margin {margin_text(margin)})": [
            decision_text(r["decision"], margin, smaller=smaller) for _, r in rows.iterrows()],
        "verdict": [_why_inconclusive(r, margin)
                    + (" (one process decides it)" if r["fragile"] else "")
                    for _, r in rows.iterrows()],
    })
    out = [
        f"### {claim['id']}: {statement(claim)}",
        "",
        f"Source: {_source_line(claim)}. "
        f"Tested: {QUANTITIES[claim['quantity']]}, {claim['direction']}"
        + (f"; the claim's own ratio {figure_text(figure)} (its figures, not ours)"
           if figure is not None else "") + ".",
        "",
        verdicts.to_markdown(index=False),
    ]
    if rows["fragile"].any():
        out += ["", "*One process decides it*: leaving out one repeat moves the interval "
                "across 1 or onto it, so another run of the job may give another verdict "
                "for that cell."]
    lines = causes(rows, labels)
    return out + (["", "What the ablations change:", ""] + lines if lines else []) + [""]


def _user_sections(summary: pd.DataFrame, runs: pd.DataFrame,
                   labels: dict[str, str], margin: float) -> list[str]:
    """FINDINGS' 'For Keras users', 'For JAX users' and 'Across TensorFlow versions', each
    where the grid has its cells (Keras' step decided at ``margin``)."""
    out = []
    keras = keras_lines(summary, runs, margin, labels)
    if keras:
        out += ["## For Keras users", "",
                "A Keras LSTM / GRU layer, unroll=True against unroll=False (api keras: its "
                "step in a tf.function; keras_xla: with jit_compile=True; keras_jax: on "
                "Keras's JAX backend, in a jax.jit step), measured as above (same device, "
                "threads, data and initial weights; mode inference times the forward pass "
                "alone). Keras runs the whole padded length either way, masked: the loop-bound "
                "saving of dynamic_rnn does not apply.", "",
                *keras, ""]
    jax = jax_lines(summary, labels)
    if jax:
        ran = "; ".join(f"mode {mode}: {APIS['jax_scan'].step[mode]}"
                        for mode in _modes(summary).get("jax_scan", []))
        out += ["## For JAX users", "",
                f"The model written in JAX (api jax_scan; {ran}), its scan at each unroll "
                "factor the grid lists (1: dynamic's "
                "loop; max_len: fully unrolled, static's reference), measured as above; the "
                "scan runs the padded length, masked. Totals are setup + N x the median step, "
                "from geometric means over repeats (point estimates; the ratios with intervals "
                "are in the tables below).", ""] + jax
    versions = version_table(summary, runs)
    if not versions.empty:
        out += ["## Across TensorFlow versions", "",
                "The same cells (without ablations) in each TensorFlow version the grid lists, "
                "each version in its own image (`tf_version`), measured in this run; ratios "
                "are static / dynamic medians with 95 % intervals.", ""]
        out += version_section(versions, cell_labels(
            summary, tuple(axis for axis in LABEL_AXES if axis != "tf_version"))) + [""]
    return out


def _ablation_sections(summary: pd.DataFrame, runs: pd.DataFrame, labels: dict[str, str],
                       config: dict) -> list[str]:
    """FINDINGS' 'What each ablation does' (with the fetch-set pitfall), 'Where the setup
    goes', 'Scaling laws' and 'Stability'."""
    out = ["## What each ablation does", ""] + effects_section(ablation_effects(runs), labels)
    cold = cold_fetch_lines(runs)
    if cold:
        out += ["The fetch-set pitfall (`fetches: hooks_cold`; medians over repeats):", ""]
        out += cold + [""]
    out += ["## Where the setup goes", ""] + setup_section(setup_split(runs), labels,
                                                           summary["api"])
    out += ["## Scaling laws", ""] + scaling_section(
        scaling_table(runs, config.get("extrapolate") or {}))
    return out + ["## Stability", ""] + stability_lines(summary, runs, labels) + [""]
