"""Why a ratio is what it is: the cost model in words, and FINDINGS' "Why" section.

The model is rnnbench.costmodel.fit's (docs/cost-model.md); the section is why_section's.

- ``parameter_table``: each implementation's fitted parameters with their 95 % intervals;
- ``explain``: each measured cell's step split into its parts (fixed, overhead per time step,
  the cell's work), and where static and dynamic differ;
- ``loop_bound_check``: the loop-bound ablation, predicted by the model not fitted to it;
- ``setup_laws``: setup, peak memory and graph nodes along max_len;
- ``answer_sentences``: the README's account of why, from the reference map.

Its checks on cells it was not fitted to are rnnbench.costmodel.check's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rnnbench.costmodel.fit import (GROUP_COLUMNS, Fit, cell_terms, finite_runs, fit_groups,
                                    model_rows, model_runs, parts, quiet_runs, ratio_prediction)
from rnnbench.stats.formats import interval_text
from rnnbench.costmodel.check import (error_words, geometric_means, group_rows, leave_one_out,
                                 noise_floor, step_error)

TERM_WORDS = {
    ("static", "fixed"): "fixed, per training step",
    ("static", "per_passed"): "per unrolled time step passed (its cond)",
    ("static", "per_computed"): "per computed time step, beyond its cond",
    ("dynamic", "fixed"): "fixed, per training step",
    ("dynamic", "per_passed"): "per loop iteration",
    ("dynamic", "per_computed"): "per computed time step, beyond the loop",
    ("static", "per_flop"): "per MFLOP of the cell's work",
    ("dynamic", "per_flop"): "per MFLOP of the cell's work",
    ("static", "per_flop_log2_size"): "per MFLOP, change per doubling of the matmul",
    ("dynamic", "per_flop_log2_size"): "per MFLOP, change per doubling of the matmul",
}
"""Each fitted term of compat_v1's implementations in words (costmodel.TERMS)."""
SCALE = {"per_flop": 1e6, "per_flop_log2_size": 1e6}
"""Per-MFLOP terms: their coefficient (s per FLOP) times this is s per MFLOP."""
KIND = {"fixed": "fixed", "per_passed": "overhead", "per_computed": "overhead",
        "per_flop": "work", "per_flop_log2_size": "work"}
"""Which part of a step a term is: fixed, overhead per time step, or the cell's work."""




LOO_MAX_CELLS = 100
"""FINDINGS' leave-one-out check runs on groups of up to this many cells (one refit each)."""


def _kinds(pair: dict[str, Fit]) -> list[str]:
    """The parts a step splits into: fixed, overhead, work; fixed and 'time steps' (overhead
    and work together) where the grid does not part the work from the overhead."""
    if all("per_flop" in fit.terms for fit in pair.values()):
        return ["fixed", "overhead", "work"]
    return ["fixed", "overhead"]


def merged_words(fit: Fit) -> str:
    """Say what the kept terms carry where the grid left terms out.

    Args:
        fit: one implementation's fit.

    Returns:
        The notes, joined by '; '; '' when all terms are fitted.
    """
    notes = []
    if fit.impl == "static" and "per_passed" not in fit.terms:
        notes.append("its fixed cost holds the max_len conds (max_len does not vary apart "
                     "from the length here)")
    if "per_flop" not in fit.terms:
        notes.append("its cost per time step holds the cell's work (the work per time step "
                     "does not vary here: one batch_size and num_units)")
    return "; ".join(notes)


def _micro(value: float) -> str:
    return f"{value * 1e6:.3g}"


def parameter_table(pair: dict[str, Fit]) -> pd.DataFrame:
    """Tabulate the fitted parameters of one group, one row per implementation and term.

    Args:
        pair: one fitted group, {impl: Fit} (costmodel.fit.fit_groups).

    Returns:
        Columns implementation, term (TERM_WORDS) and 'µs [95 % interval]': the estimate and
        its interval in µs (per MFLOP for the work terms, with the throughput that means in
        GFLOP/s).
    """
    rows = []
    for impl, fit in pair.items():
        for term in fit.terms:
            estimate, low, high = (v * SCALE.get(term, 1) for v in fit.interval(term))
            text = f"{_micro(estimate)} [{_micro(low)}, {_micro(high)}]"
            if term == "per_flop" and estimate > 0:
                text += f" ({1e-3 / estimate:.3g} GFLOP/s)"
            rows.append({"implementation": impl, "term": TERM_WORDS[impl, term],
                         "µs [95 % interval]": text})
    return pd.DataFrame(rows)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}"


def explain(pair: dict[str, Fit], summary: pd.DataFrame, runs: pd.DataFrame,
            labels: dict[str, str]) -> pd.DataFrame:
    """Explain each cell of the fit's group (at its reference ablations) by the model.

    Args:
        pair: one fitted group, {impl: Fit} (costmodel.fit.fit_groups).
        summary: summary.csv, one row per cell.
        runs: measurements.csv; a cell's computed time steps and FLOP are its static runs'
            (time_steps_per_step, train_step_flop).
        labels: cell id -> its name (tables.cell_labels).

    Returns:
        One row per cell: the measured and the modelled static/dynamic step ratio, each
        implementation's modelled step split into fixed, overhead and work (ms), and where
        static and dynamic differ, the larger part first.
    """
    work = model_rows(runs[runs["impl"] == "static"]).groupby("cell_id")[["computed", "flop"]]
    work = work.mean()
    rows, kinds = [], _kinds(pair)
    header = "fixed + overhead + work" if "work" in kinds else "fixed + per time step"
    for _, cell in group_rows(summary, pair).iterrows():
        shape = pd.DataFrame([{**cell.to_dict(), **work.loc[cell["cell_id"]].to_dict()}])
        split = {impl: parts(fit, shape).iloc[0].groupby(KIND).sum()
                 .reindex(kinds, fill_value=0.0) for impl, fit in pair.items()}
        model = ratio_prediction(pair, shape).iloc[0]
        rows.append({
            "cell": labels.get(cell["cell_id"], cell["cell_id"]),
            "measured ratio": interval_text(cell["ratio_median_step_s"],
                                            cell["ratio_median_step_s_ci_low"],
                                            cell["ratio_median_step_s_ci_high"]),
            "model's ratio": f"{model['ratio']:.2f}",
            **{f"{impl} ms: {header}": " + ".join(_ms(split[impl][kind]) for kind in kinds)
               for impl in pair},
            "where they differ (the larger part first)": _decider(
                split["static"] - split["dynamic"], shape.iloc[0], pair),
        })
    return pd.DataFrame(rows)


def _decider(gap: pd.Series, shape: pd.Series, pair: dict[str, Fit]) -> str:
    """Why static and dynamic differ, from ``gap`` (static - dynamic seconds per part):
    the overhead (the fixed cost and the cost per time step together: what each
    implementation spends besides the cell's work) against the work, the larger first;
    where the grid does not part them, the fixed cost against the cost per time step."""
    steps = shape["computed"]
    conds = "per_passed" in pair["static"].terms
    passing = (f" (static passes {shape['max_len']:g} conds for {steps:g} computed steps, "
               f"dynamic runs {steps:g} iterations)" if conds else "")
    if "work" in gap.index:
        parts = {"overhead" + passing: gap["fixed"] + gap["overhead"], "work": gap["work"]}
    else:
        parts = {"fixed cost" + ("" if conds else f" (static's holds its {shape['max_len']:g} "
                                 "conds)"): gap["fixed"],
                 "cost per time step" + passing: gap["overhead"]}
    said = [f"{name}: static {abs(value) * 1e3:.2g} ms {'slower' if value > 0 else 'faster'}"
            for name, value in sorted(parts.items(), key=lambda item: -abs(item[1]))]
    return "; ".join(said)


def loop_bound_check(pair: dict[str, Fit], runs: pd.DataFrame) -> list[str]:
    """Check the model against the loop-bound ablation, which it was not fitted to.

    There, dynamic_rnn's loop runs to max_len (as up to TF 1.5; axes.ABLATION_DEFAULTS
    otherwise), so it passes and computes max_len time steps. Runs flagged busy are left out,
    as from the fit.

    Args:
        pair: one fitted group, {impl: Fit} (costmodel.fit.fit_groups).
        runs: measurements.csv, one row per run.

    Returns:
        One sentence per ablated cell: the model's 95 % interval for its runs' geometric mean
        step (inside it: the model's account agrees), and how many runs one run's interval
        holds. A cell without quiet, readable runs gets a sentence saying so. Empty without
        such runs.
    """
    from rnnbench.grid.axes import ABLATION_DEFAULTS

    fit = pair["dynamic"]
    mine = runs[(runs["impl"] == "dynamic") & (runs["loop_bound"].astype(str) == "max_len")]
    for axis, default in ABLATION_DEFAULTS.items():
        if axis != "loop_bound" and axis in mine:
            mine = mine[mine[axis].astype(str) == str(default)]
    mine = mine[np.logical_and.reduce([mine[c] == v for c, v in fit.key.items()])]
    quiet = finite_runs(mine) & quiet_runs(mine)
    out = [f"The loop-bound ablation (`{cell_id}`) is not compared: none of its runs is quiet "
           "and readable (flagged busy, or no positive step time)."
           for cell_id in sorted(set(mine["cell_id"]) - set(mine[quiet]["cell_id"]))]
    for cell_id, held in model_rows(mine[quiet]).groupby("cell_id"):  # as in model_runs
        one = fit.predict(held.iloc[[0]]).iloc[0]
        mean = fit.predict(held.iloc[[0]], runs=len(held)).iloc[0]
        took = geometric_means(held)["dynamic"]
        inside = int(((held["median_step_s"] >= one["low"])
                      & (held["median_step_s"] <= one["high"])).sum())
        verdict = ("it agrees with the model's account, a cost per loop iteration"
                   if mean["low"] <= took <= mean["high"] else
                   f"{abs(took / mean['step_s'] - 1):.0%} "
                   + ("more" if took > mean["step_s"] else "less")
                   + " than a cost per loop iteration accounts for")
        out.append(
            f"The loop-bound ablation (`{cell_id}`) runs dynamic_rnn's loop to max_len "
            f"{held['max_len'].iloc[0]:g} for sequences of {held['sequence_length'].iloc[0]} "
            f"steps. The model, not fitted to it, predicts {mean['step_s'] * 1e3:.3g} ms "
            f"[{mean['low'] * 1e3:.3g}, {mean['high'] * 1e3:.3g}] per step for the geometric "
            f"mean of its {len(held)} run{'s' * (len(held) > 1)} (one run's interval, [{one['low'] * 1e3:.3g}, "
            f"{one['high'] * 1e3:.3g}], holds {inside} of them); they took {took * 1e3:.3g} "
            f"ms: {verdict}.")
    return out


LAW_QUANTITIES = {"setup_s": ("setup", "s"), "peak_rss_mb": ("peak memory", "MiB"),
                  "node_count": ("graph nodes", "")}
"""What setup_laws fits along max_len: column -> (words, unit)."""


def setup_laws(pair: dict[str, Fit], runs: pd.DataFrame) -> pd.DataFrame:
    """Fit setup, peak memory and graph nodes of each implementation along max_len.

    The fit is over all the group's cells (scaling.fit_law): a line (fixed + per unrolled
    step) or a power law, as the runs choose (docs/method.md, Laws).

    Args:
        pair: one fitted group, {impl: Fit} (costmodel.fit.fit_groups).
        runs: measurements.csv, one row per run.

    Returns:
        One row per implementation and quantity (LAW_QUANTITIES): implementation, quantity,
        law, 'along max_len', fit. Empty where max_len takes fewer than 3 values.
    """
    from rnnbench.stats.scaling import fit_law

    group = group_rows(model_runs(runs), pair)
    if group["max_len"].nunique() < 3:
        return pd.DataFrame()
    rows = []
    for impl in pair:
        for quantity, (words, unit) in LAW_QUANTITIES.items():
            mine = group[group["impl"] == impl][["max_len", quantity]].dropna()
            law = fit_law(mine["max_len"].to_numpy(float), mine[quantity].to_numpy(float))
            low, high = law["slope_ci"]
            sign = "+" if law["slope"] >= 0 else "-"
            shape = (f"{law['intercept']:.3g} {unit} {sign} {abs(law['slope']):.3g} [{low:.3g}, "
                     f"{high:.3g}] {unit} per step of max_len" if law["form"] == "linear" else
                     f"{math.exp(law['intercept']):.3g} {unit} x max_len^{law['slope']:.2f} "
                     f"[{low:.2f}, {high:.2f}]")
            test = ("no lack-of-fit test" if math.isnan(law["lack_of_fit_p"]) else
                    f"lack-of-fit p {law['lack_of_fit_p']:.2g}")
            other = ("" if math.isnan(law["other_p"]) else
                     f"; the other form's p {law['other_p']:.2g}")
            rows.append({"implementation": impl, "quantity": words, "law": law["form"],
                         "along max_len": shape.replace("  ", " "), "fit": test + other})
    return pd.DataFrame(rows)


def _not_fitted(runs: pd.DataFrame) -> list[str]:
    """The Why section of a grid the model does not explain: what the grid lacks (a second
    number of computed time steps) where that is why, else that its busy runs were left out
    (costmodel.model_runs); empty where neither is why (too few runs)."""
    busy = runs["busy"].astype(bool) if "busy" in runs else None
    # with no run busy, the quiet runs are these runs, which why_section fitted already
    if busy is None or not busy.any() or not fit_groups(runs.assign(busy=False)):
        return _unidentified(runs)
    from rnnbench.report.sections import busy_words  # (not on predict's path)

    return ["## Why: the cost model", "",
            f"Not fitted: {int(busy.sum())} of {len(runs)} runs were flagged busy "
            f"({busy_words(runs)}), and the model is fitted to quiet runs only "
            "(docs/cost-model.md); too few of them are left to fit both "
            "implementations. The busy runs' times are in the tables above; on a quieter "
            "machine the grid would be explained here.", ""]


def _too_few(runs: pd.DataFrame) -> list[str]:
    """The Why section of a grid the model is not fitted to for want of runs.

    Neither busy runs (_not_fitted) nor a lacking design (_unidentified) is why: an
    implementation has fewer usable runs than the terms its cells identify plus 2 (fit_impl).

    Args:
        runs: measurements.csv rows.

    Returns:
        The section's lines: each group and implementation short of runs, and what to add;
        [] for no runs at all.
    """
    if runs.empty:
        return []
    plain = model_rows(model_runs(runs))
    short = []
    for key, group in plain.groupby(list(GROUP_COLUMNS), sort=False):
        for impl in ("static", "dynamic"):
            mine = group[group["impl"] == impl]
            terms = len(cell_terms(mine)) if len(mine) else 1
            if len(mine) < terms + 2:
                short.append(f"{key[0]}, {key[2]}, {impl}: {len(mine)} run"
                             f"{'' if len(mine) == 1 else 's'} for {terms} term"
                             f"{'' if terms == 1 else 's'}")
    return ["## Why: the cost model", "",
            "Not fitted: too few runs. The model needs, per implementation, at least 2 more "
            "quiet runs with a positive step time, at the reference ablations, than the terms "
            "its cells identify (docs/cost-model.md)"
            + (f"; here {'; '.join(short)}" if short else "") + ". To explain the ratio, add "
            "repeats (config `repeats`) or cells.", ""]


def _unidentified(runs: pd.DataFrame) -> list[str]:
    """The Why section of a grid whose cells all compute as many time steps per step (one
    cell, or cells alike in max_len and length): a cost per time step cannot be told from the
    fixed cost, so the model shows no numbers and says what to add; [] for another grid."""
    plain = model_rows(model_runs(runs.assign(busy=False)))
    lacking = []
    for key, group in plain.groupby(list(GROUP_COLUMNS), sort=False):
        for impl in ("static", "dynamic"):
            mine = group[group["impl"] == impl]
            if len(mine) and cell_terms(mine) == ["fixed"]:
                lacking.append(f"{key[0]}, {key[2]} ({mine['cell_id'].nunique()} cell"
                               f"{'' if mine['cell_id'].nunique() == 1 else 's'})")
                break
    if not lacking:
        return []
    return ["## Why: the cost model", "",
            f"Not fitted: in {'; '.join(lacking)} every cell computes as many time steps per "
            "step, so a cost per time step cannot be told apart from the fixed cost, and the "
            "model's numbers would mean nothing (docs/cost-model.md). To explain the ratio, add "
            "a cell that computes another number of time steps: a second max_len, or a second "
            "sequence_length (e.g. sequence_length: [2, max_len]).", ""]


def why_section(summary: pd.DataFrame, runs: pd.DataFrame, labels: dict[str, str],
                fits: list[dict[str, Fit]] | None = None) -> list[str]:
    """Write FINDINGS' "## Why" section from the cost model fitted to ``runs``.

    Args:
        summary: summary.csv, one row per cell.
        runs: measurements.csv, one row per run.
        labels: cell id -> its name (tables.cell_labels).
        fits: the run's fits (rule aggregate's costmodel.json: costmodel.fit.read_fits);
            None fits ``runs`` here (fit_groups).

    Returns:
        Markdown lines. Per fitted group: the model's parameters, the fit's tests, each cell
        explained, and the leave-one-out check. Where no group can be fitted, what the grid
        lacks or that its busy runs were left out; empty where neither is why.
    """
    fits = fit_groups(runs) if fits is None else fits
    if not fits:
        return _not_fitted(runs) or _too_few(runs)
    out = ["## Why: the cost model", "",
           "Each implementation's step, fitted to this run's runs (docs/cost-model.md): "
           "fixed + cost per time step passed + cost per computed time step + cost per FLOP. "
           "static_rnn passes max_len unrolled steps (a cond each) and computes the batch's "
           "longest sequence; dynamic_rnn's loop passes and computes the batch's longest "
           "sequence. Weighted least squares over fresh processes, 95 % intervals.", ""]
    for pair in fits:
        key = pair["static"].key
        out += [f"**{key['api']}, {key['cell']}** ({key['environment']}):", "",
                parameter_table(pair).to_markdown(index=False), ""]
        left = group_rows(runs, pair)
        busy = int(left["busy"].astype(bool).sum()) if "busy" in left else 0
        if busy:
            from rnnbench.report.sections import busy_words  # (not on predict's path)

            out += [f"{busy} of {len(left)} runs were flagged busy ({busy_words(left)}) and "
                    "are left out of the fit.", ""]
        for impl, fit in pair.items():
            merged = merged_words(fit)
            if fit.interval("fixed")[2] < 0:
                merged += ("; its fixed cost is below zero, which alone means nothing: with "
                           "its cost per time step it is its overhead, which the table below "
                           "compares (the overhead is not linear down to max_len 0)")
            out.append(f"- {impl}: {fit.n} runs in {fit.cells} cells, one run's spread about "
                       f"the model {fit.sigma:.0%}; lack of fit "
                       + (f"p {fit.lack_of_fit_p:.2g}" if not math.isnan(fit.lack_of_fit_p)
                          else "not testable (" + ("as many cells as terms"
                                                   if fit.cells <= len(fit.terms) else
                                                   "no cell has 2 runs") + ")")
                       + ("" if math.isnan(fit.richer_p) else
                          f"; throughput changing with the matmul size: partial F p "
                          f"{fit.richer_p:.2g}, so the "
                          + ("richer form is kept" if "per_flop_log2_size" in fit.terms
                             else "constant throughput is kept"))
                       + (f"; {merged}" if merged else "") + ".")
        out += ["", explain(pair, summary, runs, labels).to_markdown(index=False), ""]
        laws = setup_laws(pair, runs)
        if len(laws):
            out += ["Setup, peak memory and graph nodes along max_len, over the other axes' "
                    "cells (a line, or a power law fitted on the log scale where the repeats "
                    "reject the line and reject it less: docs/method.md, Laws):", "",
                    laws.to_markdown(index=False), ""]
        out += [*loop_bound_check(pair, runs), ""]
        if pair["static"].cells > LOO_MAX_CELLS:
            out += [f"Leave one cell out: not run ({pair['static'].cells} cells: it refits "
                    f"the model once per cell, and runs on groups of up to {LOO_MAX_CELLS}).",
                    ""]
            continue
        loo = leave_one_out(pair, runs)
        out += [("Leave one cell out: " + error_words(loo) + ". " + noise_floor(summary, loo))
                if len(loo) else
                "Leave one cell out: not possible here (every cell identifies a term).", ""]
    return out


def answer_sentences(pair: dict[str, Fit], runs: pd.DataFrame,
                     validated: pd.DataFrame | None) -> list[str]:
    """Write the README's short account of why, from the map's fit and runs.

    Args:
        pair: the map's fit, {impl: Fit}.
        runs: the map's measurements.csv rows, for the leave-one-out check.
        validated: costmodel.check.validation's table of the held-out run, or None.

    Returns:
        Sentences, each under about 35 words: what each implementation pays per time step
        (besides the cell's work) and per step, then the leave-one-out and held-out errors.
    """
    static, dynamic = pair["static"], pair["dynamic"]

    def us(fit: Fit, term: str) -> str:
        estimate, low, high = fit.interval(term)
        return f"{estimate * 1e6:.0f} µs [{low * 1e6:.0f}, {high * 1e6:.0f}]"

    computed = ""
    if "per_computed" in static.terms:
        _, low, high = static.interval("per_computed")
        computed = (" and nothing clearly more per step it computes" if low <= 0 <= high
                    else f" plus {us(static, 'per_computed')} per step it computes")
    out = [f"Besides the cell's work, dynamic_rnn's loop costs {us(dynamic, 'per_passed')} "
           f"per iteration; static_rnn costs {us(static, 'per_passed')} per unrolled step it "
           f"passes{computed}. Each step also pays a fixed cost: dynamic_rnn "
           f"{us(dynamic, 'fixed')}, static_rnn {us(static, 'fixed')}."]
    checks = []
    loo = leave_one_out(pair, runs)
    if len(loo):
        checks.append(f"Each of the map's {len(loo)} cells, left out of the fit, is predicted "
                      f"within {loo['ratio_error'].abs().median():.0%} of its measured ratio at "
                      "the median.")
    if validated is not None and len(validated):
        steps = step_error(validated)
        checks.append(f"On {len(validated)} cells it never saw "
                      "([validation](docs/figures/heldout/VALIDATION.md)): ratios within "
                      f"{validated['ratio_error'].abs().median():.0%} at the median, "
                      f"{validated['ratio_error'].abs().max():.0%} at worst; step times "
                      f"{abs(steps):.0%} too {'short' if steps < 0 else 'long'} (a step's time "
                      "is also its machine's: see the validation).")
    if checks:
        out.append(" ".join(checks))
    return out
