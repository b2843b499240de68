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
    for kind, pair in fits.items():
        for impl, fit in pair.items():
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
    for column in ("expected_decision", "measured_decision"):
        if column in table:
            out[column.replace("_", " ")] = table[column]
    return out.to_markdown(index=False)


def peak_probe(results) -> tuple[dict, str]:
    """The probe of a results folder's run (rule peak's JSON under runs/), and its path.

    Raises:
        ValueError: naming the folder, where it holds no probe or several.
    """
    from rnnbench.costmodel.machine import read_probe

    found = sorted(results.glob("runs/*/peak_*.json"))
    probes = [(read_probe(path), str(path)) for path in found
              if __import__("json").loads(path.read_text()).get("probe")]
    if len(probes) != 1:
        raise ValueError(f"--results {results}: {len(probes)} probes (rule peak's "
                         "runs/*/peak_*.json on a CPU), need exactly 1")
    return probes[0]


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


def validation_page(predicted: pd.DataFrame, runs: pd.DataFrame, predicted_on: str) -> str:
    """Write docs/figures/probe-heldout/VALIDATION.md: predictions against the held-out runs.

    Args:
        predicted: machine.predicted_table's table, committed before the runs.
        runs: the held-out run's measurements.csv rows.
        predicted_on: the probe's machine the predictions were made for, in words.

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
    lines += [f"The setups: {setups.median():.0%} off at the median, {setups.max():.0%} at "
              f"worst. Of the {len(decided)} cells whose runs decide (at a 10 % margin), the "
              f"expected ratio's interval decides {int((decided['expected_decision'] != 'undecided').sum())}"
              f", the same way in {int((decided['expected_decision'] == decided['measured_decision']).sum())}."]
    for kind, mine in table.groupby(table["cell_id"].map(cell_types)):
        lines += ["", f"{kind}: " + held_out_words(mine)]
    return "\n".join(lines + ["", shown(table), ""])
