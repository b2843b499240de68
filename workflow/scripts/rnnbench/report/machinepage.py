"""The pages of the cost model in the probe's units: its coefficients and leave-one-out on the
map (docs/figures/probe-map/MODEL.md), and its predictions of held-out cells against their
runs (docs/figures/probe-heldout/VALIDATION.md). Method: docs/cost-model.md, The model in the
probe's units."""

from __future__ import annotations

import pandas as pd

from rnnbench.stats.formats import interval_text

MEANINGS = {"fixed_s": "the fixed nodes at an unrolled op's cost",
            "computed_s": "the computed time steps' nodes, conds and loop iterations at the "
                          "probe's costs",
            "skipped_s": "the skipped time steps' nodes and conds, and the untaken branch's "
                         "nodes, at the probe's costs",
            "matmul_s": "the matmuls at the probe's rates",
            "setup_s": "the graph's nodes at the probe's construction and Session setup"}


def coefficient_table(fits: dict) -> str:
    """The coefficients with their 95 % t-intervals, as a Markdown table.

    Args:
        fits: machine.fit_machine's fits.

    Returns:
        One row per (quantity, implementation, term): the estimate [95 %], what a 1 means,
        one run's spread (sigma) and the lack-of-fit test's p.
    """
    from rnnbench.stats.intervals import t_quantile

    rows = []
    for kind in ("step", "setup"):
        for impl, fit in fits[kind].items():
            half = t_quantile(0.95, fit.df) * (fit.cov.diagonal() ** 0.5)
            for term, beta, h in zip(fit.terms, fit.beta, half):
                rows.append({"quantity": kind, "impl": impl, "column": term,
                             "coefficient [95 %]": interval_text(beta, beta - h, beta + h),
                             "1 means the graph pays": MEANINGS[term],
                             "one run's spread": f"{fit.sigma:.0%}",
                             "lack of fit p": f"{fit.lack_of_fit_p:.2g}"})
    return pd.DataFrame(rows).to_markdown(index=False)


def held_out_words(table: pd.DataFrame) -> str:
    """Say a leave-one-out or validation table (with expected_* columns) in sentences.

    Args:
        table: machine.leave_one_out's or machine.validation's table, not empty.

    Returns:
        The ratio's and the steps' median and worst errors, and how often the expected
        ratio's and the repeats' intervals held the measured ratio.
    """
    from rnnbench.costmodel.check import error_words

    steps = pd.concat([table["static_error"], table["dynamic_error"]]).abs()
    words = [error_words(table) + ".",
             f"The steps: {steps.median():.0%} off at the median, {steps.max():.0%} at worst."]
    if "expected_covered" in table:
        words.append(f"The expected ratio's 95 % interval held {int(table['expected_covered'].sum())}"
                     f" of {len(table)} measured ratios.")
    return " ".join(words)


def shown(table: pd.DataFrame) -> str:
    """A leave-one-out or validation table as Markdown, its numbers rounded."""
    out = pd.DataFrame({
        "cell": "`" + table["cell_id"] + "`",
        "measured ratio": table["measured_ratio"].map("{:.2f}".format),
        "predicted ratio, expected [95 %]": [interval_text(r, lo, hi) for r, lo, hi in zip(
            table["predicted_ratio"], table["expected_low"], table["expected_high"])],
        "ratio error": table["ratio_error"].map("{:+.0%}".format),
        "static step error": table["static_error"].map("{:+.0%}".format),
        "dynamic step error": table["dynamic_error"].map("{:+.0%}".format),
        "runs in one run's 95 %": [f"{c} of {n}" for c, n in zip(table["runs_covered"],
                                                                  table["runs"])]})
    for column in ("static_setup_error", "dynamic_setup_error"):
        if column in table:
            out[column.replace("_", " ")] = table[column].map("{:+.0%}".format)
    for column in ("expected_decision", "measured_decision", "expected_side", "measured_side"):
        if column in table:
            out[column.replace("_", " ")] = table[column]
    return out.to_markdown(index=False)


def peak_probe(results) -> tuple[dict, str]:
    """The probe of a results folder's run (rule peak's JSON under runs/), and its path.

    A folder that kept the runs of an earlier protocol (runs/<protocol>/, one probe each)
    gives the probe of the protocol its measurements.csv holds.

    Raises:
        ValueError: naming the folder, where it holds no probe, or several for its run
            (naming each).
    """
    from rnnbench.costmodel.machine import read_probe
    from rnnbench.grid.layout import protocol_folder

    found = [(read_probe(path, optional=True), path)
             for path in sorted(results.glob("runs/*/peak_*.json"))]
    probes = [(probe, path) for probe, path in found if probe is not None]
    table = results / "measurements.csv"
    if len(probes) > 1 and table.is_file():  # the probe of the run the table holds
        folders = map(protocol_folder, pd.read_csv(table, usecols=["path"])["path"])
        mine = {folder.name for folder in folders if folder is not None}
        probes = [(probe, path) for probe, path in probes if path.parent.name in mine]
    if not probes:
        raise ValueError(f"{results}: 0 probes (rule peak's runs/*/peak_*.json on a CPU), "
                         "need exactly 1")
    if len(probes) > 1:
        raise ValueError(f"{results}: {len(probes)} probes, need exactly 1 (one run's): "
                         f"{', '.join(str(path) for _, path in probes)}; give a results folder "
                         "that holds one run (move the other runs/<protocol>/ folders away)")
    return probes[0][0], str(probes[0][1])


def model_page(runs: pd.DataFrame, probe: dict, fits: dict) -> str:
    """Write docs/figures/probe-map/MODEL.md: the coefficients and the leave-one-out check.

    Args:
        runs: the map's measurements.csv rows.
        probe: the probe of the machine the map ran on (its run's own, rule peak's).
        fits: machine.fit_machine's fits of those runs and that probe.

    Returns:
        The page's Markdown text.
    """
    from rnnbench.costmodel.machine import leave_one_out

    from rnnbench.costmodel.fit import quiet_runs

    loo = leave_one_out(runs, probe)
    busy = int((~quiet_runs(runs)).sum())
    return "\n".join([
        "# The cost model in the probe's units: the map's coefficients", "",
        "Written by `rnnbench reference --run probe-map` from this folder's runs "
        "(presets/reference-map.yaml) and the probe its run took (probe.json, rule peak's), on "
        f"{probe.get('environment')}. Method: docs/cost-model.md, The model in the probe's "
        "units. machine.json holds the coefficients `rnnbench predict --probe` reads. "
        f"{busy} of the {len(runs)} runs were flagged busy and are left out of the fit "
        "(docs/cost-model.md, The fit).", "",
        coefficient_table(fits), "",
        "## Each cell predicted from the others", "",
        "Each cell left out in turn, the coefficients refitted on the rest and the cell "
        "predicted: " + held_out_words(loo), "", shown(loo), ""])


def probes_table(probes: dict[str, dict]) -> str:
    """The unit costs the model reads (machine.unit_costs), one column per probe, in µs."""
    from rnnbench.costmodel.machine import unit_costs

    return pd.DataFrame({name: {key: f"{value * 1e6:.3g}" for key, value in
                                unit_costs(probe).items()} for name, probe in probes.items()}
                        ).rename_axis("unit cost (µs)").to_markdown()


def validation_page(predicted: pd.DataFrame, runs: pd.DataFrame, predicted_on: str,
                    probes: dict[str, dict] | None = None) -> str:
    """Write docs/figures/probe-heldout/VALIDATION.md: predictions against the held-out runs.

    Args:
        predicted: machine.predicted_table's table, committed before the runs.
        runs: the held-out run's measurements.csv rows.
        predicted_on: the probe's machine the predictions were made for, in words.
        probes: the map's probe and the one predicted with, by name, to set side by side.

    Returns:
        The page's Markdown text: the errors in sentences (all cells, then per cell type) and
        the table, with the setups' errors and both decisions.
    """
    from rnnbench.costmodel.machine import validation

    table = validation(predicted, runs)
    cell_types = runs.drop_duplicates("cell_id").set_index("cell_id")["cell"]
    lines = ["# The cost model in the probe's units: held-out cells", "",
             "Written by `rnnbench reference --run probe-heldout`: the map's coefficients "
             "(docs/figures/probe-map/machine.json) and a probe taken just before the run "
             f"(probe.json: {predicted_on}) predicted these cells (predicted.csv, written before "
             "they ran); here is what they measured, on "
             f"{' / '.join(sorted(set(runs['environment'])))}.", "",
             "All cells: " + held_out_words(table)]
    setups = pd.concat([table["static_setup_error"], table["dynamic_setup_error"]]).abs()
    decided = table[table["measured_decision"] != "undecided"]
    sided = table[table["measured_side"] != "undecided"]
    lines += [f"The setups: {setups.median():.0%} off at the median, {setups.max():.0%} at "
              f"worst. Of the {len(decided)} cells whose runs decide (at a 10 % margin), the "
              f"expected ratio's interval decides {int((decided['expected_decision'] != 'undecided').sum())}"
              f", the same way in {int((decided['expected_decision'] == decided['measured_decision']).sum())}. "
              f"Of the {len(sided)} cells whose runs' interval excludes 1 or lies inside the "
              "margin, the expected ratio's interval does in "
              f"{int((sided['expected_side'] != 'undecided').sum())}, the same way in "
              f"{int((sided['expected_side'] == sided['measured_side']).sum())}."]
    for kind, mine in table.groupby(table["cell_id"].map(cell_types)):
        lines += ["", f"{kind}: " + held_out_words(mine)]
    if probes:
        lines += ["", "The unit costs of the probes (an absolute step moves with them; the "
                  "ratio far less):", "", probes_table(probes)]
    return "\n".join(lines + ["", shown(table), ""])


def machine_paragraph(repo) -> str | None:
    """The README's paragraph in the machine's terms, from docs/figures/probe-map/ (and the
    held-out check where it is committed); None where the probe-map is not committed.

    Args:
        repo: the repository root.

    Returns:
        What decides static against dynamic at full length, in the probe's unit costs and the
        graph's counts; this machine's figures; how a reader finds theirs.
    """
    import json

    from rnnbench.costmodel.machine import (counts_of, read_counts, read_machine_fits,
                                            read_probe, time_step_costs, unit_costs)

    folder = repo / "docs" / "figures" / "probe-map"
    if not (folder / "machine.json").exists():
        return None
    fits, probe = read_machine_fits(folder / "machine.json"), read_probe(folder / "probe.json")
    unit, counts = unit_costs(probe), read_counts()
    static, dynamic = (counts_of(counts, "basic_lstm", impl) for impl in ("static", "dynamic"))
    cost = time_step_costs(fits, probe)
    a = {impl: fit.beta[fit.terms.index("computed_s")] for impl, fit in fits["step"].items()}
    m = {impl: fit.beta[fit.terms.index("matmul_s")] for impl, fit in fits["step"].items()}
    machine = json.loads((folder / "run.json").read_text())["where"]["device_name"]
    words = (
        f"In the machine's terms ([the model in the probe's units](docs/figures/probe-map/"
        f"MODEL.md), fitted on {machine}): at full length, static's steps win where its "
        "overhead per time step falls below dynamic's. "
        f"static_rnn runs {static['computed_nodes']:.0f} unrolled ops and "
        f"{static['computed_conds']:.0f} conds per time step, at {a['static']:.2f} times the "
        "probe's unit costs. "
        f"dynamic_rnn runs {dynamic['loops']:.0f} loop iterations and "
        f"{dynamic['loop_nodes']:.0f} ops inside the loops, at {a['dynamic']:.2f} times. "
        f"Their matmuls cost {m['static']:.2f} and {m['dynamic']:.2f} times the probe's rate. "
        f"There an op took {unit['op_s'] * 1e6:.2f} µs unrolled and "
        f"{unit['loop_op_s'] * 1e6:.2f} µs in a loop, an iteration "
        f"{unit['iteration_s'] * 1e6:.1f} µs, a cond {unit['cond_s'] * 1e6:.1f} µs: "
        f"{cost['static'] * 1e6:.0f} against {cost['dynamic'] * 1e6:.0f} µs per time step.")
    heldout = repo / "docs" / "figures" / "probe-heldout"
    if (heldout / "measurements.csv").exists():
        from rnnbench.costmodel.machine import validation

        table = validation(pd.read_csv(heldout / "predicted.csv"),
                           pd.read_csv(heldout / "measurements.csv"))
        steps = pd.concat([table["static_error"], table["dynamic_error"]]).median()
        records = [json.loads(path.read_text())
                   for path in (folder / "probe.json", heldout / "probe.json")]
        days = [str((r.get("metadata") or r.get("meta") or {}).get("utc_time") or "")[:10]
                for r in records]
        words += (f" Predicted before they ran, {len(table)} cells it never saw (GRU, LSTM, 32 "
                  "inputs; [validation](docs/figures/probe-heldout/VALIDATION.md)) came within "
                  f"{table['ratio_error'].abs().median():.0%} on the ratio at the median. "
                  + _decided_words(table) +
                  f"They were predicted with a probe of {days[1] or 'their day'}, the map's "
                  f"coefficients of {days[0] or 'its day'}. Their steps came out "
                  f"{abs(steps):.0%} too {'short' if steps < 0 else 'long'} at the median: "
                  "an absolute step carries less well than the ratio.")
    return words + (" Where your machine stands: `.venv/bin/rnnbench probe --out probe.json` "
                    "(under a minute), then `.venv/bin/rnnbench predict --probe probe.json "
                    "--cell gru --batch 64 --units 256 --max-len 100 --length 40 --steps 10000` "
                    "for any cell type.")


def _decided_words(table: pd.DataFrame) -> str:
    """How many of the cells a validation's runs decide its expected interval decided, by
    intervals.side_or_within and at the margin (machine.validation's columns)."""
    sided = table[table["measured_side"] != "undecided"]
    decided = table[table["measured_decision"] != "undecided"]
    return (f"Its expected interval decided {(sided['expected_side'] != 'undecided').sum()} of "
            f"the {len(sided)} cells whose runs decide (excluding 1 or inside the margin), "
            f"{(sided['expected_side'] == sided['measured_side']).sum()} the same way; at a "
            f"10 % margin, {(decided['expected_decision'] != 'undecided').sum()} of "
            f"{len(decided)}. ")


def drift_words(runs: tuple[pd.DataFrame, pd.DataFrame], results: tuple) -> str:
    """Say how much of the drift between two runs their probes account for.

    Args:
        runs: the two runs' measurements.csv rows.
        results: the two runs' results folders (Path), where rule peak's probes are.

    Returns:
        One or two sentences: how far the steps moved (dynamic_rnn's median change), how far
        the probes say the machine moved, and the share of the drift they account for
        (drift.explained_share, over both implementations' cells); or why it is not said
        (a run without a probe, no committed coefficients, no compat_v1 cell with counts).
    """
    from rnnbench.costmodel.drift import explained_share, probe_explained
    from rnnbench.costmodel.machine import MAP_FITS, read_machine_fits

    try:
        probes = tuple(peak_probe(folder)[0] for folder in results)
        table = probe_explained(read_machine_fits(MAP_FITS), runs, probes)
    except ValueError as error:
        return f"The probes do not say how much of the drift they explain: {error}."
    if table.empty:
        return "The probes say nothing of the drift: no compat_v1 cell with graph counts."
    dynamic, share = table[table["impl"] == "dynamic"], explained_share(table)
    if share != share:
        return "The runs' steps did not move between them: no drift to explain."
    return (f"Between the runs dynamic_rnn's steps moved {dynamic['measured'].median() - 1:+.0%}"
            f" (the median over {len(dynamic)} cells); the probes, through the model in the "
            f"probe's units, predicted {dynamic['predicted'].median() - 1:+.0%}. Over both "
            f"implementations they account for {share:.0%} of the drift "
            "(1 - the squared log changes they miss over those the runs made; below 0: they "
            "predicted changes the runs did not make).")
