"""The reproducibility benchmark: run the main job twice on this machine, into two folders,
and compare the verdicts.

    rnnbench reproduce [--configfile F] [--cores N] OUTDIR

Each run is the workflow (Snakefile) in a folder of its own, ``OUTDIR/run1`` and
``OUTDIR/run2``. Each holds copies of the repository's config.yaml and of the given config,
which replaces its keys one by one, as ``snakemake --configfile F`` does. So nothing is
shared between the runs but the machine. The config must list claims.

Afterwards it prints, per cell and claim: both decisions at the config's practical margin
(intervals.decide) and verdicts; both ratios with their 95 % intervals; whether each interval
covers the other run's estimate; and the totals. It checks the targets:
  - no contradictory decision (larger by more than the margin in one run, smaller by more
    than it in the other);
  - at least 90 % of the (cell, claim) decisions identical;
  - every setup and memory decision identical.
The table also goes to ``OUTDIR/reproducibility.md`` and ``.csv``.

Exit status 0 when the targets are met, 1 when not, 2 when a run fails or the input is wrong
(a one-line message says why). In a folder that holds a run of the same configs the workflow
runs again, measuring only what is missing (delete it to re-measure all); one that holds
another config's run is refused.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rnnbench.grid.configcheck import check_files, margin_of
from rnnbench.grid.configfiles import load_claims, own_claims, read_config
from rnnbench.stats.formats import interval_text
from rnnbench.stats.pooling import drift_share, run_standard_error
from rnnbench.results.load import read_table
from rnnbench.stats.tables import claim_table
from rnnbench.grid.layout import REPO
from rnnbench.pipeline.arguments import existing_file, output_folder, positive_int
from rnnbench.pipeline.failures import refusal_line
from rnnbench.report import machinepage

SETUP_AND_MEMORY = ("graph_construction_s", "setup_s", "first_100_steps_s", "peak_rss_mb")
"""Claim quantities whose verdicts must agree in every cell."""
AGREEMENT_TARGET = 0.9


def compare(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Compare two runs' claim tables, one row per (claim, cell_id).

    Args:
        first, second: tables.claim_table of run 1 and run 2.

    Returns:
        Columns claim, cell_id, quantity; both runs' ratio, ci_low, ci_high, decision
        (intervals.decide), verdict and repeats (suffixes ``_1``, ``_2``). Then ``same``
        (identical decisions); ``contradictory`` (larger by more than the margin in one,
        smaller by more than it in the other); ``covers_1`` / ``covers_2`` (whether run 1's
        interval covers run 2's estimate, and the other way round). And ``drift_share``: the
        share of one run's variance of its log ratio that is drift between the runs
        (pooling.pool's tau^2 over tau^2 plus the runs' own squared standard errors; NaN
        without intervals).

    Raises:
        ValueError: if the two tables do not hold the same (claim, cell_id) pairs (names
            those that differ).
    """
    keys = ["claim", "cell_id", "quantity"]
    columns = keys + ["ratio", "ci_low", "ci_high", "decision", "verdict", "repeats"]
    pairs = [set(map(tuple, t[["claim", "cell_id"]].to_numpy().tolist())) for t in (first, second)]
    if pairs[0] != pairs[1]:
        raise ValueError(f"the runs judged different (claim, cell) pairs: "
                         f"{sorted(pairs[0] ^ pairs[1])}")
    both = first[columns].merge(second[columns], on=keys, suffixes=("_1", "_2"))
    decisions = both[["decision_1", "decision_2"]]
    both["same"] = both["decision_1"] == both["decision_2"]
    both["contradictory"] = decisions.isin(["below"]).any(axis=1) & decisions.isin(
        ["above"]).any(axis=1)
    for run, other in ((1, 2), (2, 1)):
        both[f"covers_{run}"] = both[f"ratio_{other}"].between(both[f"ci_low_{run}"],
                                                               both[f"ci_high_{run}"])
    both["drift_share"] = [_drift_share(row) for _, row in both.iterrows()]
    return both


def _drift_share(row: pd.Series) -> float:
    """pooling.drift_share of a compare() row's two runs."""
    errors = [run_standard_error(row[f"ci_low_{run}"], row[f"ci_high_{run}"],
                                 int(row[f"repeats_{run}"])) for run in (1, 2)]
    return drift_share(np.log([row["ratio_1"], row["ratio_2"]]), errors)


def targets(table: pd.DataFrame) -> dict[str, bool]:
    """Check compare's table against each target (the module docstring lists them).

    Args:
        table: compare's table.

    Returns:
        The target, in words -> whether it is met.
    """
    fixed = table[table["quantity"].isin(SETUP_AND_MEMORY)]
    return {
        "no contradictory decision": not table["contradictory"].any(),
        f"at least {AGREEMENT_TARGET:.0%} of decisions identical":
            table["same"].mean() >= AGREEMENT_TARGET,
        "every setup and memory decision identical": bool(fixed["same"].all()),
    }


def report(table: pd.DataFrame, wall_s: list[float]) -> str:
    """Write compare's table and its totals as Markdown (DataFrame.to_markdown).

    Args:
        table: compare's table.
        wall_s: each run's wall time, seconds (NaN: not recorded).

    Returns:
        The table, the totals, and each target met or not.
    """
    def interval(run: int) -> pd.Series:
        return table.apply(lambda r: interval_text(r[f"ratio_{run}"], r[f"ci_low_{run}"],
                                                   r[f"ci_high_{run}"]), axis=1)

    shown = pd.DataFrame({
        "claim": table["claim"], "cell": table["cell_id"],
        "decision, run 1": table["decision_1"], "decision, run 2": table["decision_2"],
        "verdict, run 1": table["verdict_1"], "verdict, run 2": table["verdict_2"],
        "ratio, run 1": interval(1), "ratio, run 2": interval(2),
        "run 1 covers run 2's": table["covers_1"].map({True: "yes", False: "no"}),
        "run 2 covers run 1's": table["covers_2"].map({True: "yes", False: "no"}),
        "drift share": table["drift_share"].map(lambda v: "" if v != v else f"{v:.0%}"),
    })
    met = targets(table)
    lines = [shown.to_markdown(index=False), "",
             f"Identical decisions: {int(table['same'].sum())} of {len(table)}; contradictory: "
             f"{int(table['contradictory'].sum())}; intervals covering the other run's "
             f"estimate: {int(table['covers_1'].sum() + table['covers_2'].sum())} of "
             f"{2 * len(table)}; the drift between the runs is a median "
             f"{table['drift_share'].median():.0%} of a run's variance (drift share: of the "
             "log ratio's). Wall time of the runs: "
             + ", ".join("not recorded" if s != s else f"{s:.0f} s" for s in wall_s) + ".", ""]
    judged = {name: len(table) for name in met}  # decisions each target reads
    judged["every setup and memory decision identical"] = int(
        table["quantity"].isin(SETUP_AND_MEMORY).sum())
    lines += [f"- {name}: {'met' if ok else 'NOT met'}"
              + ("" if judged[name] else " (no such decision to compare)")
              for name, ok in met.items()]
    return "\n".join(lines) + "\n"


def run_once(folder: Path, configfile: Path, cores: int) -> float:
    """Run the workflow in ``folder``, with copies of config.yaml and of ``configfile``.

    It runs in a folder that holds a run of the same configs too, finished or not: Snakemake
    measures what is missing (a result deleted since, say) and rebuilds the tables, or does
    nothing.

    Args:
        folder: the run's folder; its Snakemake output goes to ``folder/snakemake.log``.
        configfile: passed as ``--configfile``: its keys replace config.yaml's.
        cores: Snakemake's --cores.

    Returns:
        The run's wall seconds, kept in ``folder/wall_s``. Where the folder held a finished
        run, that run's (what runs now only mends it), or NaN if it was not recorded.

    Raises:
        RuntimeError: if the folder holds a run of other configs, or Snakemake fails (names
            its log file, and the log's line refusing the config where it has one).
    """
    configs = {"config.yaml": (REPO / "config.yaml").read_bytes(),
               "grid.yaml": configfile.read_bytes()}
    if any((folder / name).exists() and (folder / name).read_bytes() != content
           for name, content in configs.items()):
        raise RuntimeError(f"{folder} holds a run of another config: give another OUTDIR, or "
                           "delete it to measure again")
    finished = (folder / "results" / "FINDINGS.md").exists()
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in configs.items():
        (folder / name).write_bytes(content)
    log = folder / "snakemake.log"
    start = time.perf_counter()
    with open(log, "w") as handle:
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                               "--directory", str(folder), "--cores", str(cores),
                               "--configfile", str(folder / "grid.yaml")],
                              stdout=handle, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        refused = refusal_line(log.read_text(errors="replace").splitlines())
        raise RuntimeError(f"the run in {folder} failed: {refused} (see {log})" if refused
                           else f"the run in {folder} failed: see {log}")
    kept = folder / "wall_s"
    if finished:
        return float(kept.read_text()) if kept.is_file() else float("nan")
    wall_s = time.perf_counter() - start
    kept.write_text(f"{wall_s:.1f}\n")
    return wall_s


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench reproduce``'s arguments to ``parser``."""
    parser.add_argument("outdir", type=output_folder,
                        help="folder for the two runs (run1/, run2/) and reproducibility.md/.csv")
    parser.add_argument("--configfile", type=existing_file, default=REPO / "config.yaml",
                        help="the grid to run twice, with its claims (default: %(default)s, the "
                             "main job: about 4 minutes a run on 2 cores)")
    parser.add_argument("--cores", type=positive_int, default=1,
                        help="Snakemake's --cores for each run (default: %(default)s)")


def claims_of(configfile: Path) -> tuple[list[dict], float]:
    """Read the claims the runs of ``configfile`` will judge, and the practical margin.

    Args:
        configfile: the config read over config.yaml.

    Returns:
        (the claims, the margin they are decided at: config ``margin``).

    Raises:
        ValueError: naming --configfile when it is not a file, not valid YAML, its claims do
            not load, or it lists none (no verdicts to compare).
    """
    if not configfile.is_file():
        raise ValueError(f"--configfile: {str(configfile)!r} is not a file")
    try:
        config = read_config([REPO / "config.yaml", configfile], REPO, claims=False)
    except ValueError as error:
        raise ValueError(f"--configfile: {error}") from None
    own_claims([configfile], config, REPO / "config.yaml")  # as the runs will judge
    try:
        load_claims(config, REPO)
    except ValueError as error:
        raise ValueError(f"--configfile: {error}") from None
    claims = config.get("claims")
    if not claims or not isinstance(claims, list):
        raise ValueError(f"--configfile: {configfile} (with config.yaml) lists no claims "
                         f"({claims!r}): there are no verdicts to compare")
    return claims, margin_of(config)


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench reproduce``: check the claims, run the workflow twice, compare, print.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0 when the targets are met, 1 when not, 2 when a run fails or the
        input is wrong (a one-line message on standard error).
    """
    try:
        claims, margin = claims_of(args.configfile)
        check_files([REPO / "config.yaml", args.configfile])  # as each run's Snakefile will
    except ValueError as error:
        print(f"reproduce: {error}" if str(error).startswith("--configfile")
              else f"reproduce: config: {error}", file=sys.stderr)
        return 2
    tables, wall = [], []
    for run in ("run1", "run2"):
        folder = args.outdir / run
        try:
            wall.append(run_once(folder, args.configfile.resolve(), args.cores))
        except RuntimeError as error:
            print(f"reproduce: {error}", file=sys.stderr)
            return 2
        tables.append(claim_table(read_table(folder / "results" / "summary.csv"), claims,
                                  margin))
    table = compare(*tables)
    text = report(table, wall) + "\n" + machinepage.drift_words(
        tuple(read_table(args.outdir / run / "results" / "measurements.csv")
              for run in ("run1", "run2")),
        tuple(args.outdir / run / "results" for run in ("run1", "run2"))) + "\n"
    (args.outdir / "reproducibility.md").write_text(text)
    table.to_csv(args.outdir / "reproducibility.csv", index=False)
    print(text)
    return 0 if all(targets(table).values()) else 1
