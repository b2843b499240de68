"""The reproducibility benchmark: run the main job twice on this machine, into two folders,
and compare the verdicts.

    .venv/bin/python workflow/scripts/rnnbench/reproduce.py [--configfile F] [--cores N] OUTDIR

Each run is the workflow (Snakefile) in a folder of its own (``OUTDIR/run1``, ``OUTDIR/run2``,
with a copy of the config), so nothing is shared between them but the machine. Afterwards it
prints, per cell and claim, both verdicts, both ratios with their 95 % intervals, whether each
interval covers the other run's estimate, and the totals, and checks the targets: no
contradictory verdict (holds in one run, does not hold in the other), at least 90 % of the
(cell, claim) verdicts identical, every setup and memory verdict identical. The table also
goes to ``OUTDIR/reproducibility.md`` and ``.csv``. Exit status 0 when the targets are met,
1 when not. A folder whose run finished is not run again (delete it to re-measure).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[3]
SETUP_AND_MEMORY = ("graph_construction_s", "setup_s", "first_100_steps_s", "peak_rss_mb")
"""Claim quantities whose verdicts must agree in every cell."""
AGREEMENT_TARGET = 0.9


def compare(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Per (claim, cell_id) of two findings.claim_table results: both verdicts, ratios and
    intervals (suffixes ``_1``, ``_2``), ``same`` (identical verdicts), ``contradictory``
    (holds in one, does not hold in the other), and ``covers_1`` / ``covers_2``: whether run
    1's interval covers run 2's estimate, and the other way round.

    Raises:
        ValueError: if the two tables do not hold the same (claim, cell_id) pairs (names
            those that differ).
    """
    keys = ["claim", "cell_id", "quantity"]
    columns = keys + ["ratio", "ci_low", "ci_high", "verdict"]
    pairs = [set(map(tuple, t[["claim", "cell_id"]].to_numpy().tolist())) for t in (first, second)]
    if pairs[0] != pairs[1]:
        raise ValueError(f"the runs judged different (claim, cell) pairs: "
                         f"{sorted(pairs[0] ^ pairs[1])}")
    both = first[columns].merge(second[columns], on=keys, suffixes=("_1", "_2"))
    verdicts = both[["verdict_1", "verdict_2"]]
    both["same"] = both["verdict_1"] == both["verdict_2"]
    both["contradictory"] = verdicts.isin(["holds"]).any(axis=1) & verdicts.isin(
        ["does not hold"]).any(axis=1)
    both["covers_1"] = (both["ci_low_1"] <= both["ratio_2"]) & (both["ratio_2"] <= both["ci_high_1"])
    both["covers_2"] = (both["ci_low_2"] <= both["ratio_1"]) & (both["ratio_1"] <= both["ci_high_2"])
    return both


def targets(table: pd.DataFrame) -> dict[str, bool]:
    """Whether compare's table meets each target (module docstring)."""
    fixed = table[table["quantity"].isin(SETUP_AND_MEMORY)]
    return {
        "no contradictory verdict": not table["contradictory"].any(),
        f"at least {AGREEMENT_TARGET:.0%} of verdicts identical":
            table["same"].mean() >= AGREEMENT_TARGET,
        "every setup and memory verdict identical": bool(fixed["same"].all()),
    }


def report(table: pd.DataFrame, wall_s: list[float]) -> str:
    """compare's table and its totals as Markdown (DataFrame.to_markdown)."""
    from rnnbench.findings import interval_text

    def interval(run: int) -> pd.Series:
        return table.apply(lambda r: interval_text(r[f"ratio_{run}"], r[f"ci_low_{run}"],
                                                   r[f"ci_high_{run}"]), axis=1)

    shown = pd.DataFrame({
        "claim": table["claim"], "cell": table["cell_id"],
        "verdict, run 1": table["verdict_1"], "verdict, run 2": table["verdict_2"],
        "ratio, run 1": interval(1), "ratio, run 2": interval(2),
        "run 1 covers run 2's": table["covers_1"].map({True: "yes", False: "no"}),
        "run 2 covers run 1's": table["covers_2"].map({True: "yes", False: "no"}),
    })
    met = targets(table)
    lines = [shown.to_markdown(index=False), "",
             f"Identical verdicts: {int(table['same'].sum())} of {len(table)}; contradictory: "
             f"{int(table['contradictory'].sum())}; intervals covering the other run's "
             f"estimate: {int(table['covers_1'].sum() + table['covers_2'].sum())} of "
             f"{2 * len(table)}. Wall time of the runs: "
             + ", ".join(f"{s:.0f} s" for s in wall_s) + ".", ""]
    lines += [f"- {name}: {'met' if ok else 'NOT met'}" for name, ok in met.items()]
    return "\n".join(lines) + "\n"


def run_once(folder: Path, configfile: Path, cores: int) -> float:
    """Run the workflow in ``folder`` with a copy of ``configfile``; return its wall seconds
    (0 when the folder holds a finished run already).

    Raises:
        RuntimeError: if Snakemake fails (names its log file).
    """
    if (folder / "results" / "FINDINGS.md").exists():
        return 0.0
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(configfile, folder / "config.yaml")
    log = folder / "snakemake.log"
    start = time.perf_counter()
    with open(log, "w") as handle:
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                               "--directory", str(folder), "--cores", str(cores)],
                              stdout=handle, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"the run in {folder} failed: see {log}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir", type=Path,
                        help="folder for the two runs (run1/, run2/) and reproducibility.md/.csv")
    parser.add_argument("--configfile", type=Path, default=REPO / "config.yaml",
                        help="the grid to run twice, with its claims (default: %(default)s, the "
                             "main job: about 4 minutes a run on 2 cores)")
    parser.add_argument("--cores", type=int, default=1,
                        help="Snakemake's --cores for each run (default: %(default)s)")
    args = parser.parse_args(argv)
    if not args.configfile.is_file():
        parser.error(f"--configfile: {str(args.configfile)!r} is not a file")
    sys.path.insert(0, str(REPO / "workflow" / "scripts"))
    from rnnbench.findings import claim_table
    from rnnbench.results import read_table

    claims = yaml.safe_load(args.configfile.read_text()).get("claims", [])
    tables, wall = [], []
    for run in ("run1", "run2"):
        folder = args.outdir / run
        wall.append(run_once(folder, args.configfile, args.cores))
        tables.append(claim_table(read_table(folder / "results" / "summary.csv"), claims))
    table = compare(*tables)
    text = report(table, wall)
    (args.outdir / "reproducibility.md").write_text(text)
    table.to_csv(args.outdir / "reproducibility.csv", index=False)
    print(text)
    return 0 if all(targets(table).values()) else 1


if __name__ == "__main__":
    sys.exit(main())
