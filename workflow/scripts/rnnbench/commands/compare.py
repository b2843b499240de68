"""Compare two result sets: two machines, bare against an image, two TensorFlow versions, CPU
against GPU.

    rnnbench compare A B [--names ours theirs] [--configfile config.yaml]
        [--out results/compare]

A and B are each a folder of result JSONs or a measurements.csv. A folder is searched
recursively: ``results/runs/``, any folder a user sent back, ``rnnbench jax``'s OUT/runs.
Each side is summarised on its own (summary.summarize), per environment and protocol
(load.environment, cells.protocol_label). A side holding runs of two machines, or of two
protocols, gives two rows, never pooled.

Per cell both sides have, it writes:
  - each side's static / dynamic ratios (setup, step) with their 95 % intervals;
  - each side's decision on the step ratio at the config's practical margin
    (intervals.decide);
  - the verdict of each ratio claim of the config on each side (in every api's cells, as
    FINDINGS judges them);
  - the ratio of the two sides' geometric means (B / A, per implementation, setup and median
    step), with Welch's interval on the logs (the sides are different processes: unpaired;
    intervals.ratio_ci).
It writes them to ``OUT/compare.csv``, ``compare.md`` (also printed) and the chart
``compare.svg`` / ``.html``. Exit status 1, with a one-line message, when A and B are not two
result sets, or when the chart cannot be drawn: it is drawn in a child process after the
tables are written, since its renderer (vl-convert's V8) can abort its whole process, e.g.
under an address-space limit (``ulimit -v``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from rnnbench.stats import intervals
from rnnbench.grid.configcheck import margin_of, schema_error
from rnnbench.grid.configfiles import read_config
from rnnbench.report.sections import jax_lines
from rnnbench.stats.formats import column_interval, decision_text, margin_text
from rnnbench.grid.layout import IMPLEMENTATIONS
from rnnbench.results.sides import read_side, same_runs
from rnnbench.stats.summary import summarize
from rnnbench.stats.tables import cell_labels, verdict
from rnnbench.grid.layout import REPO
from rnnbench.pipeline.arguments import existing_file, given_path, output_folder

SIDE_METRICS = {"setup_s": "setup", "median_step_s": "step"}
"""What each side's static / dynamic ratio and the two sides' ratio are given for."""


def summarize_side(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """Summarise one side's runs, per environment and protocol, never pooled.

    Args:
        runs: the side's runs (read_side), with columns environment and protocol.
        name: the side's name.

    Returns:
        summarize() per group, one after another, with columns ``side`` (``name``, with the
        group's number when the side has several), ``environment`` and ``protocol``
        (cells.protocol_label) first. Runs of two machines, or of two protocols such as
        ``steps500`` and ``steps50``, give two groups.

    Raises:
        ValueError: naming the side, the cell, its group and a file of it, where a cell of a
            group lacks the static or the dynamic runs (one run recording another protocol
            than its neighbours, say).
    """
    groups = runs.groupby(["environment", "protocol"])  # sorted by both
    parts = []
    for number, ((environment, protocol), mine) in enumerate(groups, 1):
        impls = mine.groupby("cell_id", sort=False)["impl"].agg(set)
        for cell, has in impls[impls.map(len) < 2].items():
            lacks = ({"static", "dynamic"} - has).pop()
            file = mine.loc[mine["cell_id"] == cell, "path"].iloc[0] if "path" in mine else ""
            raise ValueError(
                f"side {name}: cell {cell} has {has.pop()} runs but no {lacks} runs of protocol "
                f"{protocol} on {environment}" + (f" (e.g. {file})" if file else "")
                + ": runs of other protocols or machines are never pooled; give each cell "
                "both implementations' runs of one protocol")
        summary = summarize(mine)
        summary.insert(0, "side", name if groups.ngroups == 1 else f"{name} #{number}")
        summary.insert(1, "environment", environment)
        summary.insert(2, "protocol", protocol)
        parts.append(summary)
    return pd.concat(parts, ignore_index=True)


def compare(a: pd.DataFrame, b: pd.DataFrame, claims: list[dict], margin: float,
            names: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """Compare two sides, one row per cell both measured and pair of their groups.

    The groups are summarize_side's: per environment and protocol.

    Args:
        a, b: the runs of each side (read_side).
        claims: the ratio claims to judge on each side (config ``claims``), in every api's
            cells as FINDINGS judges them (tables.claim_table: the unrolled variant in
            static's part).
        margin: the practical margin the step ratio and the claims are decided at.
        names: the sides' names.

    Returns:
        Columns cell_id, label (tables.cell_labels), side_a, side_b, environment_a,
        environment_b, protocol_a, protocol_b; per side and SIDE_METRICS metric
        ``<side>_ratio_<metric>`` (static / dynamic) with ``_ci_low`` / ``_ci_high``;
        ``<side>_step_decision`` (intervals.decide); per claim ``<side>_<claim id>`` (verdict);
        per implementation and metric ``b_over_a_<impl>_<metric>`` (geometric mean of side B
        over side A's, Welch's 95 % interval) with ``_ci_low`` / ``_ci_high``.
    """
    sides = {"a": summarize_side(a, names[0]), "b": summarize_side(b, names[1])}
    runs = {"a": a, "b": b}
    labels = cell_labels(pd.concat(sides.values(), ignore_index=True).drop_duplicates("cell_id"))
    rows = []
    for _, left in sides["a"].iterrows():
        for _, right in sides["b"][sides["b"]["cell_id"] == left["cell_id"]].iterrows():
            row = {"cell_id": left["cell_id"], "label": labels[left["cell_id"]],
                   "side_a": left["side"], "side_b": right["side"],
                   "environment_a": left["environment"], "environment_b": right["environment"],
                   "protocol_a": left["protocol"], "protocol_b": right["protocol"]}
            for key, cell in (("a", left), ("b", right)):
                for metric in SIDE_METRICS:
                    for suffix in ("", "_ci_low", "_ci_high"):
                        row[f"{key}_ratio_{metric}{suffix}"] = cell[f"ratio_{metric}{suffix}"]
                row[f"{key}_step_decision"] = intervals.decide(
                    cell["ratio_median_step_s_ci_low"], cell["ratio_median_step_s_ci_high"],
                    margin)
                for claim in claims:
                    quantity = claim["quantity"]
                    row[f"{key}_{claim['id']}"] = verdict(
                        claim["direction"], cell[f"ratio_{quantity}_ci_low"],
                        cell[f"ratio_{quantity}_ci_high"], margin)
            for impl in IMPLEMENTATIONS:
                mine = {key: runs[key][(runs[key]["cell_id"] == left["cell_id"])
                                       & (runs[key]["impl"] == impl)
                                       & (runs[key]["environment"] == cell["environment"])
                                       & (runs[key]["protocol"] == cell["protocol"])]
                        for key, cell in (("a", left), ("b", right))}
                for metric in SIDE_METRICS:
                    ratio, low, high = intervals.ratio_ci(
                        mine["b"][metric].to_numpy(dtype=float),
                        mine["a"][metric].to_numpy(dtype=float), paired=False)
                    name = f"b_over_a_{impl}_{metric}"
                    row.update({name: ratio, f"{name}_ci_low": low, f"{name}_ci_high": high})
            rows.append(row)
    return pd.DataFrame(rows)


def compare_markdown(table: pd.DataFrame, claims: list[dict], margin: float) -> str:
    """Write compare()'s table as a Markdown section.

    Args:
        table: compare()'s table.
        claims: the ratio claims judged in it.
        margin: the practical margin the step ratio was decided at.

    Returns:
        The section: which environment each side is, then per cell each side's ratios, step
        decisions and verdicts, and B / A per implementation. A sentence alone where the
        sides have no cell in common.
    """
    if table.empty:
        return "## Comparison\n\nThe two result sets have no cell in common.\n"
    sides = pd.concat([table[[f"side_{key}", f"environment_{key}", f"protocol_{key}"]]
                       .set_axis(["side", "environment", "protocol"], axis=1)
                       for key in ("a", "b")])
    shown = pd.DataFrame({
        "cell": table["label"], "sides": table["side_a"] + " / " + table["side_b"],
        **{f"{side} static / dynamic {word}": [column_interval(r, f"{key}_ratio_{metric}")
                                               for _, r in table.iterrows()]
           for key, side in (("a", "A"), ("b", "B"))
           for metric, word in SIDE_METRICS.items()},
        **{f"B / A {impl} {word}": [column_interval(r, f"b_over_a_{impl}_{metric}")
                                    for _, r in table.iterrows()]
           for impl in IMPLEMENTATIONS for metric, word in SIDE_METRICS.items()},
    })
    verdicts = pd.DataFrame({"cell": table["label"],
                             "sides": table["side_a"] + " / " + table["side_b"],
                             f"steps (margin {margin_text(margin)})": [
                                 " / ".join(decision_text(r[f"{key}_step_decision"], margin)
                                            for key in ("a", "b")) for _, r in table.iterrows()],
                             **{claim["id"]: table[f"a_{claim['id']}"] + " / "
                                + table[f"b_{claim['id']}"] for claim in claims}})
    return "\n".join([
        "## Comparison", "",
        "Each side is summarised on its own, per environment and protocol (never pooled); "
        "ratios are "
        "geometric means with 95 % intervals: static / dynamic within a side (paired by "
        "repeat), and B / A between the sides (Welch's interval: different processes).", "",
        sides.drop_duplicates().to_markdown(index=False), "",
        shown.to_markdown(index=False), "",
        "Decisions and verdicts on each side (A / B):", "", verdicts.to_markdown(index=False),
        "",
    ])


def one_side_only(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]) -> list[str]:
    """Name the cells measured on one side only, which compare() leaves out.

    Args:
        a, b: the runs of each side (read_side).
        names: the sides' names.

    Returns:
        A sentence per side that holds such cells (their ids, the first five), else none.
    """
    lines = []
    for name, mine, theirs in ((names[0], a, b), (names[1], b, a)):
        alone = sorted(set(mine["cell_id"]) - set(theirs["cell_id"]))
        if alone:
            shown = ", ".join(f"`{cell}`" for cell in alone[:5]) + (", ..." if alone[5:] else "")
            lines += [f"Measured by {name} only, so not compared: {len(alone)} "
                      f"cell{'s' if len(alone) > 1 else ''} ({shown}).", ""]
    return lines


def jax_sections(runs: dict[str, pd.DataFrame]) -> list[str]:
    """Write 'For JAX users' (sections.jax_lines) of each side's jax_scan runs.

    Args:
        runs: side name -> read_side's runs.

    Returns:
        Markdown lines, a section per side, environment and protocol: where on the unroll
        spectrum each device's total time to N steps is lowest. Empty without jax_scan runs.
    """
    out = []
    for name, side in runs.items():
        jax = side[side["api"] == "jax_scan"]
        if jax.empty:
            continue
        for _, summary in summarize_side(jax, name).groupby("side", sort=False):
            lines = jax_lines(summary)
            out += [f"## For JAX users: {summary['side'].iloc[0]}", "",
                    f"Environment: {summary['environment'].iloc[0]}; protocol "
                    f"{summary['protocol'].iloc[0]}.", ""] + lines
    return out


def compare_chart(table: pd.DataFrame):
    """Chart each side's static / dynamic step ratio per cell, with its 95 % interval.

    Args:
        table: compare()'s table.

    Returns:
        An alt.Chart: points for the estimates, rules for the intervals, 1 marked.
    """
    import altair as alt

    long = pd.concat([pd.DataFrame({
        "cell": table["label"], "side": table[f"side_{key}"],
        "ratio": table[f"{key}_ratio_median_step_s"],
        "low": table[f"{key}_ratio_median_step_s_ci_low"],
        "high": table[f"{key}_ratio_median_step_s_ci_high"]}) for key in ("a", "b")]
    ).drop_duplicates(["cell", "side"])  # side A appears once per environment of side B
    base = alt.Chart(long).encode(
        y=alt.Y("cell:N", title=None),
        yOffset="side:N", color=alt.Color("side:N", title="result set"))
    scale = alt.Scale(type="log")
    points = base.mark_point(filled=True, size=60).encode(
        x=alt.X("ratio:Q", scale=scale,
                title="static_rnn / dynamic_rnn step time (below 1: static faster)"))
    rules = base.mark_rule().encode(x=alt.X("low:Q", scale=scale), x2="high:Q")
    one = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4],
                                                          color="gray").encode(x="x:Q")
    return (rules + points + one).properties(
        width=480, title="Step-time ratio on each side, with 95 % intervals")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench compare``'s arguments to ``parser``."""
    parser.add_argument("a", type=given_path, help="side A: a runs folder (e.g. results/runs) or a "
                                  "measurements.csv")
    parser.add_argument("b", type=given_path, help="side B: the same")
    parser.add_argument("--names", nargs=2, default=["A", "B"], metavar=("A", "B"), type=side_name,
                        help="the sides' names in the tables (default: A B)")
    parser.add_argument("--configfile", type=existing_file, default=REPO / "config.yaml",
                        help="the claims to judge and the practical margin (default: the "
                             "shipped config's)")
    parser.add_argument("--out", type=output_folder, default=Path("results/compare"),
                        help="the folder written (default: %(default)s)")


def side_name(text: str) -> str:
    """Read a side's name for ``--names``: it heads table cells and is written to the CSV.

    Raises:
        argparse.ArgumentTypeError: an empty name, one with a character the Markdown table
            cannot hold (``|``, a line break), or bytes that are not UTF-8.
    """
    if not text.strip() or any(c in text for c in "|\n\r"):
        raise argparse.ArgumentTypeError(f"{text!r}: a name of one line, without |")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{text!r}: not UTF-8 text") from None
    return text


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench compare``: read both sides, compare them, write OUT's files, print.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 1 with a one-line message for bad input (the same side
        twice, the same name twice, an unreadable side or config) or a chart not drawn
        (draw_chart).
    """
    if Path(args.a).resolve() == Path(args.b).resolve():
        return _refuse(f"{args.a} and {args.b} are the same result set: give two")
    for inner, outer in ((args.a, args.b), (args.b, args.a)):
        if Path(outer).resolve() in Path(inner).resolve().parents:
            return _refuse(f"{inner} lies inside {outer}: its runs would be on both sides; "
                           "give two folders apart")
    if args.names[0] == args.names[1]:
        return _refuse(f"--names {args.names[0]} {args.names[1]}: give two different names")
    try:  # claims_from: the shipped config names the seeds' claims
        config = read_config([args.configfile], REPO)
    except ValueError as error:  # names the file
        return _refuse(error)
    try:
        schema_error(config)  # as the workflow would refuse it, key and value named
    except ValueError as error:
        return _refuse(f"--configfile {args.configfile}: {error}")
    claims = [c for c in config["claims"] if c.get("kind", "ratio") == "ratio"]
    if not claims:
        print(f"compare: --configfile {args.configfile} lists no ratio claim: the table has "
              "no verdicts (the shipped config.yaml names the seeds')", file=sys.stderr)
    margin = margin_of(config)
    try:
        a, b = read_side(args.a), read_side(args.b)
    except ValueError as error:
        return _refuse(error)
    copied = same_runs(a, b)
    if len(copied):
        run = copied.iloc[0]
        return _refuse(f"{args.a} and {args.b} hold {len(copied)} of the same runs (e.g. "
                       f"{run['cell_id']} {run['impl']} repeat {run['repeat']}: the same times "
                       "to the last digit): one holds a copy of the other's runs; give two "
                       "result sets measured apart")
    try:
        table = compare(a, b, claims, margin, tuple(args.names))
    except ValueError as error:  # a side whose cell lacks static or dynamic runs
        return _refuse(error)
    if table.empty:
        return _refuse(f"{args.a} and {args.b} have no cell in common: nothing to compare")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "compare.csv", index=False)
    text = "\n".join([compare_markdown(table, claims, margin),
                      *one_side_only(a, b, tuple(args.names)),
                      *jax_sections(dict(zip(args.names, (a, b))))])
    (out / "compare.md").write_text(text)
    print(text, flush=True)
    return draw_chart(table, out) if not table.empty else 0


def draw_chart(table: pd.DataFrame, out: Path) -> int:
    """Draw compare_chart into ``out`` in a child process, and say why where it fails.

    The chart renderer (vl-convert's V8) can abort its whole process, e.g. under an
    address-space limit: the tables are written before, and this process outlives it.

    Args:
        table: compare()'s table, not empty.
        out: the folder written (compare.csv and compare.md are there).

    Returns:
        The exit status: 0 with ``compare.html`` and ``compare.svg`` written; 1 with a
        one-line message naming the chart and its cause (failures.error_line).
    """
    from rnnbench.pipeline.failures import error_line
    from rnnbench.report.charts import save_chart_apart

    svg = out / "compare.svg"
    code, lines = save_chart_apart(compare_chart(table), str(out / "compare.html"), str(svg))
    if code == 0:
        return 0
    cause = error_line(lines) or f"its renderer's process ended with status {code}"
    return _refuse(f"the chart {svg} was not drawn: {cause}; the tables are written "
                   f"({out / 'compare.csv'}, compare.md)")


def _refuse(error) -> int:
    """Print ``compare: <error>`` to stderr; exit status 1."""
    print(f"compare: {error}", file=sys.stderr)
    return 1
