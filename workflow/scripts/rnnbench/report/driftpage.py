"""How far runs of one grid moved and what their measures explain, in words: DRIFT.md, its
table and the section a pooled reference run's FINDINGS.md ends with (costmodel/drift.py
computes; docs/cost-model.md, Drift between runs, gives the method)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rnnbench.costmodel.drift import NOISE_MULTIPLE, PERCENTILES, RESAMPLES

WORDS = {"probe": "the run's probe, through the model",
         "speed_python": "the jobs' Python speed check",
         "speed_matmul": "the jobs' matmul speed check"}
"""Each measure (drift.MEASURES) in words."""
IMPLS = ("dynamic", "static")
"""The implementations in the order the pages give them."""


def read_runs(folders: list[Path]) -> tuple[list[pd.DataFrame], list[dict]]:
    """Each results folder's measurements.csv rows and rule peak's probe.

    Args:
        folders: finished runs' results folders, of one grid on one machine.

    Returns:
        (each folder's rows, each folder's probe), in the folders' order.

    Raises:
        ValueError: naming a folder without them, or runs of different environments or cells,
            or a folder holding the same runs as another (a copy).
    """
    from rnnbench.report.machinepage import peak_probe
    from rnnbench.results.load import check_folders_one_environment, read_table
    from rnnbench.results.sides import same_runs

    runs, probes = [], []
    for folder in folders:
        if not (folder / "measurements.csv").is_file():
            raise ValueError(f"{folder}: no measurements.csv (not a finished run's results "
                             "folder)")
        runs.append(read_table(folder / "measurements.csv"))
        probes.append(peak_probe(folder)[0])
    check_folders_one_environment(runs, folders, "compared")
    for later in range(len(runs)):
        for earlier in range(later):  # a copy, whole or in part (some runs measured again)
            copied = same_runs(runs[later], runs[earlier])
            if len(copied):
                whole = "the same runs" if len(copied) == len(runs[later]) else \
                    f"{len(copied)} of the same runs"
                raise ValueError(f"{folders[later]} holds {whole} as {folders[earlier]} (the "
                                 "same times to the last digit: a copy?): give each run's "
                                 "folder once")
    if len({frozenset(r["cell_id"]) for r in runs}) > 1:
        raise ValueError("the runs hold different grids' cells: give runs of one config")
    return runs, probes


def drift_tables(runs: list[pd.DataFrame], probes: list[dict]
                 ) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Each implementation's drift and effects tables, with the map's coefficients.

    Args:
        runs, probes: read_runs' lists.

    Returns:
        {impl: (drift.drift_table's table, drift.effects_table's)}, dynamic first.

    Raises:
        ValueError: where no modelled cell is in every run (drift.cell_steps).
    """
    from rnnbench.costmodel.drift import cell_steps, drift_table, effects_table
    from rnnbench.costmodel.machine import MAP_FITS, read_counts, read_machine_fits

    jobs = cell_steps(runs, probes, read_machine_fits(MAP_FITS), read_counts())
    return {impl: (drift_table(jobs, impl), effects_table(jobs, impl)) for impl in IMPLS}


def page(tables: dict[str, tuple[pd.DataFrame, pd.DataFrame]], folders: list,
         runs: list[pd.DataFrame], by: str = "rnnbench drift") -> str:
    """DRIFT.md: the tables, two per implementation, and what they cover.

    Args:
        tables: drift_tables' tables.
        folders: the runs' results folders (or their names), in order.
        runs: their measurements.csv rows (the environment, when each started).
        by: the command that writes it.

    Returns:
        Markdown text.
    """
    started = [str(r["utc_time"].min()) if "utc_time" in r else "?" for r in runs]
    lines = [f"# Drift between {len(folders)} runs", "",
             f"Written by `{by}`. Environment: {runs[0]['environment'].iloc[0]}. "
             "Runs: " + ", ".join(f"`{f}` (from {t})" for f, t in zip(folders, started)) + ".",
             ""]
    for impl, (table, effects) in tables.items():
        first = table.iloc[0]
        lines += [f"## {impl}_rnn's step", "", _moved_words(impl, first), ""]
        if first["share"] != first["share"]:
            lines += [f"That is under {NOISE_MULTIPLE:g} times the noise: the runs did not "
                      "drift beyond their repeats' own noise, and no measure has a drift to "
                      "explain.", ""]
        else:
            lines += ["Share of that drift each measure explains (1 - missed / total squared "
                      "log effects; below 0: it predicts moves the runs did not make), with "
                      f"its spread over {RESAMPLES} resamples of the repeats (percentiles "
                      f"{PERCENTILES[0]:g}-{PERCENTILES[1]:g}; not a confidence interval: "
                      "docs/cost-model.md, Drift between runs):", "",
                      table.assign(measure=table["measure"].map(WORDS))
                      [["measure", "share", "share_low", "share_high"]]
                      .to_markdown(index=False, floatfmt=".2f"), ""]
        lines += ["Each run's effect (its change against the runs' mean: + is slower) and "
                  "each measure's:", "",
                  effects.rename(columns=WORDS).to_markdown(index=False, floatfmt="+.1%"), ""]
    return "\n".join(lines)


def _moved_words(impl: str, first: pd.Series) -> str:
    """How far an implementation's step moved between the runs, against the noise alone."""
    return (f"Between the runs {impl}_rnn's step moved by {first['drift_sd']:.1%} (standard "
            f"deviation of the {int(first['runs'])} runs' effects, over {int(first['cells'])} "
            f"cells); the repeats' noise alone would move it by about {first['noise_sd']:.1%}.")


def findings_section(tables: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> str:
    """The section a pooled run's FINDINGS.md ends with: how far its runs moved, what explains
    it, and what else does where the measures do not.

    Args:
        tables: drift_tables' tables.

    Returns:
        Markdown text: a heading and one paragraph per implementation.
    """
    lines = ["## Between the runs", "",
             "Added by `rnnbench reference` from its runs; the tables are in DRIFT.md "
             "(docs/cost-model.md, Drift between runs)."]
    for impl, (table, effects) in tables.items():
        first = table.iloc[0]
        probe = effects["probe"]
        words = _moved_words(impl, first)
        if first["share"] != first["share"]:
            words += (f" That is under {NOISE_MULTIPLE:g} times that noise: what moves the "
                      "runs is the noise between fresh processes, not the machine. The "
                      f"probes, which moved {probe.abs().max():.1%} at most through the model, "
                      "have nothing to explain.")
        else:
            best = table.loc[table["share"].idxmax()]
            share = (f"{best['share']:.2f} [{best['share_low']:.2f}, "
                     f"{best['share_high']:.2f}]")
            words += (f" Of that drift, {WORDS[best['measure']]} explains {share}, the largest "
                      f"share (the probe's: {first['share']:.2f})." if best["share"] >= 0.5 else
                      " No measure the runs record explains half of that drift (the largest "
                      f"share, {share}, is that of {WORDS[best['measure']]}): what moved the "
                      "runs "
                      "is something they do not record.")
        lines += ["", words]
    return "\n".join(lines)


def write(out: Path, tables: dict[str, tuple[pd.DataFrame, pd.DataFrame]], text: str) -> None:
    """Write DRIFT.md (``text``) and drift.csv (the shares) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "DRIFT.md").write_text(text + "\n")
    pd.concat([table.assign(impl=impl) for impl, (table, _) in tables.items()]).to_csv(
        out / "drift.csv", index=False)
