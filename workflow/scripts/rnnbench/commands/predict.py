"""``rnnbench predict``: ask the cost model (rnnbench/costmodel/fit.py) for a shape nobody ran.

    rnnbench predict --batch 64 --units 256 --max-len 100 --length 40 --steps 10000

Fits the model to a results folder's runs (its measurements.csv; the reference map,
docs/figures/map/, by default) and prints, for static_rnn and dynamic_rnn at that shape: the
setup (s) and one step (ms) each, with 95 % prediction intervals for one run; the step ratio;
the break-even in steps and seconds; which to choose for --steps steps; peak memory and
graph nodes; and, said plainly, where the shape lies outside the fitted range (an
extrapolation: the model's form is assumed to hold there). Setup, memory and nodes follow
the law along max_len that the runs choose (scaling.fit_law: a line or a power law); memory
adds the shape's weights (with their gradients and Adam's moments), fitted net of the runs'.
A shape over 10x beyond the fitted range on an axis is refused.

Reads the results folder; writes nothing. Needs numpy, pandas and scipy, not TensorFlow.
Exit status 0, or 2 with the error (a folder without runs, a shape the model cannot take).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from rnnbench.costmodel.machine import MAP_FITS
from rnnbench.grid.layout import REPO, protocol_folder
from rnnbench.pipeline.arguments import given_path, output_file

MAP = REPO / "docs" / "figures" / "map"
DRAWS = 20000
NUMBERS = ("batch_size", "num_units", "input_dim", "max_len", "time_steps_per_step",
           "train_step_flop", "median_step_s", "setup_s")
"""The numeric columns of measurements.csv the fit reads (with costmodel.GROUP_COLUMNS,
cell_id and impl)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``rnnbench predict``'s arguments to ``parser``."""
    parser.add_argument("--results", type=given_path, default=MAP,
                        help="a results folder, a measurements.csv or a folder of result "
                             "JSONs (rnnbench jax's OUT/runs) to fit the model to (default: "
                             "the reference map, %(default)s)")
    parser.add_argument("--cell", default=None, help="cell type (default: the runs' only one)")
    parser.add_argument("--batch", type=int, default=None, help="batch_size (required but "
                        "with --grid)")
    parser.add_argument("--units", type=int, default=None, help="num_units (required but "
                        "with --grid)")
    parser.add_argument("--input-dim", type=int, default=None,
                        help="input_dim (default: the runs' only one)")
    parser.add_argument("--max-len", type=int, default=None,
                        help="max_len, the padded length (required but with --grid)")
    parser.add_argument("--length", type=int, default=None,
                        help="the batch's longest sequence_length (default: max_len)")
    parser.add_argument("--probe", type=given_path, default=None,
                        help="predict for the machine this probe measured (rnnbench probe's "
                             "record, or a run's results/runs/.../peak_*.json), in the probe's "
                             "units: any cell type (basic_lstm, lstm, gru) and input_dim")
    parser.add_argument("--fits", type=given_path, default=None,
                        help="with --probe: the probe-unit coefficients (default: "
                             f"{MAP_FITS.relative_to(REPO)})")
    parser.add_argument("--grid", type=given_path, default=None,
                        help="with --probe and --out: predict every cell of this config file "
                             "before it runs, into a CSV (--batch, --units, --max-len unused)")
    parser.add_argument("--out", type=output_file, default=None,
                        help="with --grid: the CSV to write (an existing file is refused)")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps you will run: which implementation is faster "
                             "in total")


def _runs(results: Path) -> pd.DataFrame:
    """The runs of a results folder (its measurements.csv), a measurements.csv, or a folder
    of result JSONs (``rnnbench jax``'s OUT/runs: rnnbench.results.sides.read_side).

    Raises:
        ValueError: naming the path, where it holds no runs, or runs of several protocols
            (naming the folder of each).
    """
    from rnnbench.results.sides import read_side

    if not results.exists():
        raise ValueError(f"--results {results}: no such file or folder (a results folder of "
                         "the workflow, docs/figures/map, or rnnbench jax's OUT/runs)")
    from rnnbench.costmodel.fit import GROUP_COLUMNS
    from rnnbench.grid.vocabulary import API_WORDS

    table = results / "measurements.csv"
    runs = read_side(table if table.is_file() else results)
    missing = [c for c in (*GROUP_COLUMNS, "cell_id", "impl", *NUMBERS) if c not in runs]
    if missing:
        raise ValueError(f"--results {results}: no column {', '.join(missing)} (not the "
                         "workflow's measurements.csv)")
    for column in NUMBERS:
        numbers = pd.to_numeric(runs[column], errors="coerce")
        if not np.isfinite(numbers).all():
            odd = str(runs[column][~np.isfinite(numbers)].iloc[0])
            raise ValueError(f"--results {results}: {column} {odd!r} is not a finite number")
        runs[column] = numbers
    flags = {True: True, False: False, "True": True, "False": False}
    if "busy" in runs:
        odd = runs["busy"][~runs["busy"].isin(list(flags))]
        if len(odd):
            raise ValueError(f"--results {results}: busy {str(odd.iloc[0])!r} is neither "
                             "True nor False")
        runs["busy"] = runs["busy"].map(flags).astype(bool)
    if unknown := sorted(set(runs["api"].astype(str)) - set(API_WORDS)):
        raise ValueError(f"--results {results}: api {unknown} (known: {sorted(API_WORDS)})")
    if "protocol" in runs and "path" in runs and runs["protocol"].nunique() > 1:
        raise ValueError(f"--results {results}: holds runs of {runs['protocol'].nunique()} "
                         f"protocols, never fitted together ({_protocols_where(runs)}): give "
                         "one protocol's runs (one folder; move a run of another protocol away)")
    if "repeat" in runs and runs.duplicated(["cell_id", "impl", "repeat", "environment"]).any():
        raise ValueError(f"--results {results}: it holds a run twice (cell_id, impl, repeat)")
    return runs


def _protocols_where(runs: pd.DataFrame) -> str:
    """Where each protocol's runs are: its folders, or where a folder holds runs of another
    protocol too (one run edited or copied), its count of runs and a file of it."""
    groups = runs.groupby(runs["protocol"].astype(str))["path"]
    folders = {label: {str(protocol_folder(path) or path) for path in paths}
               for label, paths in groups}
    seen = [folder for mine in folders.values() for folder in mine]
    shared = {folder for folder in seen if seen.count(folder) > 1}
    return "; ".join(f"{label}: {len(paths)} run(s), e.g. {paths.iloc[0]}"
                     if folders[label] & shared else f"{label}: {', '.join(sorted(folders[label]))}"
                     for label, paths in groups)


def _only(runs: pd.DataFrame, column: str, value, option: str):
    """The value of ``column`` to use: ``value`` if given (and in the runs), else the runs'
    only one.

    Raises:
        ValueError: naming the option and the values the runs hold.
    """
    held = sorted(set(runs[column]))
    if value is None and len(held) == 1:
        return held[0]
    if value is None:
        raise ValueError(f"{option}: the runs hold {column} {held}: choose one with {option}")
    if value not in held:
        raise ValueError(f"{option} {value}: the runs hold {column} {held} (choose one)")
    return value


def _law_line(runs: pd.DataFrame, quantity: str, max_len: int) -> dict[str, tuple | None]:
    """Each implementation's ``quantity`` at ``max_len``: (estimate, low, high, form), from
    scaling.fit_law over its runs with a positive value along max_len; None where the law
    (a line) falls to 0 or below there, which no setup, memory or node count can; absent
    where the runs hold fewer than 2 max_len values."""
    from rnnbench.stats.scaling import fit_law

    out = {}
    for impl in ("static", "dynamic"):
        mine = runs[runs["impl"] == impl][["max_len", quantity]].apply(
            pd.to_numeric, errors="coerce")
        mine = mine[np.isfinite(mine[quantity]) & (mine[quantity] > 0)]
        if len(mine) < 3 or mine["max_len"].nunique() < 2:
            continue
        law = fit_law(mine["max_len"].to_numpy(float), mine[quantity].to_numpy(float),
                      [float(max_len)])
        _, estimate, low, high = law["predictions"][0]
        out[impl] = (estimate, max(low, 0.0), high, law["form"]) if estimate > 0 else None
    return out


def _weights_mb(cell: str, units, input_dim, mode: str) -> float:
    """MiB a step's weights take at a shape (resources.weights_bytes; ``units`` and
    ``input_dim`` may be Series of runs')."""
    from rnnbench.grid.resources import weights_bytes

    return weights_bytes(cell, units, input_dim, mode) / 2 ** 20


def _memory_law(runs: pd.DataFrame, max_len: int, weights_mb: float) -> dict[str, tuple | None]:
    """Each implementation's peak memory at ``max_len`` and a shape whose weights take
    ``weights_mb``: the law along max_len (_law_line) fitted to each run's peak less its own
    weights, plus the shape's weights, which grow with num_units squared where max_len
    does not move them. The form reads '<law's form> + weights'."""
    if runs.empty:
        return _law_line(runs, "peak_rss_mb", max_len)
    mode = runs["mode"] if "mode" in runs else pd.Series("train", runs.index)
    own = [_weights_mb(run.cell, int(run.num_units), int(run.input_dim), kind)
           for run, kind in zip(runs.itertuples(), mode)]
    law = _law_line(runs.assign(peak_rss_mb=runs["peak_rss_mb"] - own), "peak_rss_mb", max_len)
    return {impl: (value[0] + weights_mb, value[1] + weights_mb, value[2] + weights_mb,
                   f"{value[3]} + weights") if value else value
            for impl, value in law.items()}


def breakeven(setup: dict, steps: dict, seed: int = 0) -> tuple[float, float, float]:
    """Find the steps after which static's total (setup + steps x step) falls below dynamic's.

    The 95 % interval is simulated (DRAWS draws) from the estimates' intervals, taken as
    log-normal.

    Args:
        setup: impl -> (estimate, low, high) of the expected setup, seconds.
        steps: impl -> (estimate, low, high) of the expected step, seconds.
        seed: the random generator's seed.

    Returns:
        (point, low, high), in steps; inf: never.
    """
    rng = np.random.default_rng(seed)

    def draw(estimate, low, high):
        if not (estimate > 0 and low > 0):
            return np.full(DRAWS, estimate)
        sd = abs(math.log(high) - math.log(low)) / (2 * 1.959964)
        return estimate * np.exp(rng.normal(0, sd, DRAWS))

    gap = draw(*setup["static"]) - draw(*setup["dynamic"])
    gain = draw(*steps["dynamic"]) - draw(*steps["static"])
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(gain > 0, np.maximum(gap, 0) / gain, np.inf)
    point_gain = steps["dynamic"][0] - steps["static"][0]
    point = (max(setup["static"][0] - setup["dynamic"][0], 0) / point_gain
             if point_gain > 0 else math.inf)
    # (order statistics: interpolating between two 'never' draws gives NaN)
    return (point, float(np.quantile(n, 0.025, method="lower")),
            float(np.quantile(n, 0.975, method="higher")))


def prediction(runs: pd.DataFrame, cell: str | None, batch: int, units: int,
               input_dim: int | None, max_len: int, length: int | None,
               steps: int | None = None) -> dict:
    """Predict everything predict prints, as numbers, for one shape.

    Args:
        runs: the runs to fit the model to (measurements.csv rows).
        cell: the cell type; None: the runs' only one.
        batch: batch_size.
        units: num_units.
        input_dim: input_dim; None: the runs' only one.
        max_len: max_len, the padded length.
        length: the batch's longest sequence_length; None: max_len.
        steps: the training steps to be run; only checked here (report uses it).

    Returns:
        ``step`` (impl -> (estimate, low, high) for one run, seconds); ``mean_step`` and
        ``mean_setup`` (the expected values, for the break-even; a setup may be None);
        ``ratio`` (estimate, low, high); ``laws`` (quantity -> impl -> (estimate, low, high,
        form), or None); ``extrapolates`` (words); ``fit`` (the pair of costmodel.Fit);
        ``cell``, ``input_dim``, ``length`` as used; ``left_out`` (runs left out of the fit).

    Raises:
        ValueError: naming the option, for a shape the runs cannot answer: a value below
            1, a length outside 1..max_len, a cell or input_dim the runs do not hold, not
            exactly one fitted group, or a shape over FAR_OFF times outside the fitted range.
    """
    from rnnbench.costmodel.fit import (extrapolates, finite_runs, fit_groups, model_runs,
                                    ratio_prediction, shape_rows)
    from rnnbench.costmodel.check import group_rows
    from rnnbench.report.why import LAW_QUANTITIES

    for option, value in (("--batch", batch), ("--units", units), ("--max-len", max_len),
                          ("--steps", 1 if steps is None else steps)):
        if value < 1:
            raise ValueError(f"{option} {value}: must be 1 or more")
    if length is not None and not 1 <= length <= max_len:
        raise ValueError(f"--length {length:g}: must lie in 1..--max-len ({max_len})")
    cell = _only(runs, "cell", cell, "--cell")
    input_dim = _only(runs, "input_dim", input_dim, "--input-dim")
    length = float(max_len if length is None else length)
    rows = shape_rows(cell, batch, units, input_dim, max_len, length)
    pairs = [p for p in fit_groups(runs[runs["cell"] == cell])
             if p["static"].key["input_dim"] == input_dim]
    if len(pairs) != 1:
        mine = runs[(runs["cell"] == cell) & (runs["input_dim"] == input_dim)]
        kept = model_runs(mine)
        busy = int(mine["busy"].astype(bool).sum()) if "busy" in mine else 0
        raise ValueError(
            f"--results: {len(pairs)} groups of runs (api, environment) can be fitted for "
            f"{cell} with input_dim {input_dim}; need exactly 1 (give --results the runs of "
            f"one api and environment). Of its {len(mine)} runs, "
            f"{busy} were flagged busy and {int((~finite_runs(mine)).sum())} have no "
            "positive step time; the rest: " + (", ".join(
                f"{impl} {len(g)} runs in {g['cell_id'].nunique()} cells"
                for impl, g in kept.groupby("impl")) or "none") + " (the model needs both "
            "implementations, in cells that vary the time steps computed)")
    pair = pairs[0]
    _refuse_far_off(pair["static"], rows)
    step = {impl: tuple(fit.predict(rows)[["step_s", "low", "high"]].iloc[0])
            for impl, fit in pair.items()}
    mean = {impl: tuple(fit.predict(rows, runs=10 ** 9)[["step_s", "low", "high"]].iloc[0])
            for impl, fit in pair.items()}
    group = group_rows(model_runs(runs), pair)
    laws = {q: _law_line(group, q, max_len) for q in LAW_QUANTITIES}
    weights = _weights_mb(cell, units, input_dim, pair["static"].key["mode"])
    laws["peak_rss_mb"] = _memory_law(group, max_len, weights)
    mean_setup = {impl: _law_line_mean(group, impl, max_len) for impl in pair}
    words = list(dict.fromkeys(extrapolates(pair["static"], rows)
                               + extrapolates(pair["dynamic"], rows)))
    return {"step": step, "mean_step": mean, "laws": laws, "mean_setup": mean_setup,
            "ratio": tuple(ratio_prediction(pair, rows).iloc[0]), "extrapolates": words,
            "fit": pair, "cell": cell, "input_dim": input_dim, "length": length,
            "weights_mb": weights,
            "left_out": len(group_rows(runs[runs["cell"] == cell], pair)) - len(group)}


FAR_OFF = 10.0
"""A shape more than this factor beyond the fitted range on an axis is not predicted."""
OPTIONS = {"batch_size": "--batch", "num_units": "--units", "max_len": "--max-len",
           "computed": "--length"}


def _refuse_far_off(fit, rows: pd.DataFrame) -> None:
    """Refuse a shape orders of magnitude off the map (FAR_OFF beyond the fitted range).

    Raises:
        ValueError: naming the option, its value and the fitted range.
    """
    for axis, option in OPTIONS.items():
        low, high = fit.ranges[axis]
        value = float(rows[axis].iloc[0])
        if value > FAR_OFF * high or value < low / FAR_OFF:
            raise ValueError(
                f"{option} {value:g}: over {FAR_OFF:g}x outside the fitted {low:g}-{high:g}; "
                "the model's form and its laws are not known to hold that far off the map "
                "(the weights alone grow with num_units squared): measure such a cell instead")


def _law_line_mean(runs: pd.DataFrame, impl: str, max_len: int) -> tuple | None:
    """An implementation's expected setup at max_len with its confidence interval (the
    law's, without one run's noise): fit_law on the log scale of the per-max_len medians;
    with fewer than 3 max_len values, _law_line's interval for one run. None where neither
    gives a positive setup (fewer than 2 max_len values, or a line below 0 there)."""
    from rnnbench.stats.scaling import fit_law

    mine = runs[(runs["impl"] == impl) & (runs["setup_s"] > 0)].groupby("max_len")[
        "setup_s"].median()
    if len(mine) < 3:
        law = _law_line(runs, "setup_s", max_len).get(impl)
        return law[:3] if law else None
    law = fit_law(mine.index.to_numpy(float), mine.to_numpy(float), [float(max_len)])
    _, estimate, low, high = law["predictions"][0]
    return (estimate, max(low, 1e-9), high) if estimate > 0 else None


def _number(value: float) -> str:
    """Three significant digits, without an exponent: '0.366', '18.4', '1,210', '19,200'."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def report(p: dict, batch: int, units: int, max_len: int, steps: int | None,
           source: str) -> str:
    """Write the text predict prints.

    Args:
        p: prediction's dict.
        batch, units, max_len: the shape, as given.
        steps: the training steps to be run, or None; with it, which to choose.
        source: the results the model was fitted to, in words.

    Returns:
        The shape and source, a table per implementation (step, setup, peak memory, graph
        nodes), the step ratio, the break-even, the choice for ``steps``, and whether the
        shape is an extrapolation.
    """
    from rnnbench.grid.vocabulary import API_WORDS
    from rnnbench.report.why import LAW_QUANTITIES

    key = p["fit"]["static"].key
    names = API_WORDS[key["api"]]
    lines = [f"{key['api']}: a {p['cell']} of {units} units, batch {batch}, {p['input_dim']} "
             f"inputs, max_len {max_len}, the batch's longest sequence {p['length']:g} steps",
             f"model fitted to {source}: {p['fit']['static'].n + p['fit']['dynamic'].n} runs "
             + (f"({p['left_out']} left out: busy, or no positive step time) "
                if p["left_out"] else "")
             + f"on {key['environment']} (the times are that machine's; for yours, fit your own "
             "run: --results)", ""]
    table = pd.DataFrame({
        "": [names["static"], names["dynamic"]],
        "step (ms) [95 % for one run]": [
            " ".join(f"{v * 1e3:.3g}" for v in p["step"][i][:1])
            + f" [{p['step'][i][1] * 1e3:.3g}, {p['step'][i][2] * 1e3:.3g}]"
            if p["step"][i][0] > 0 else "none (the model predicts no positive time)"
            for i in ("static", "dynamic")],
        **{f"{words} ({unit or 'count'})": [
            (f"{_number(law[i][0])} [{_number(law[i][1])}, {_number(law[i][2])}]"
             f" ({law[i][3]})") if law.get(i) else
            "- (positive values at under 2 max_len)" if i not in law else
            "- (its line falls below 0 here)"
            for i in ("static", "dynamic")]
           for q, (words, unit) in LAW_QUANTITIES.items()
           for law in [p["laws"][q]]},
    })
    lines += [table.to_markdown(index=False), "", _memory_words(p), ""]
    ratio, low, high = p["ratio"]
    lines.append(f"step ratio {names['static']} / {names['dynamic']}: {ratio:.2f} "
                 f"[{low:.2f}, {high:.2f}] (95 % for one run of each)")
    if not all(p["mean_setup"].values()):
        lines.append("break-even: not predicted (no law for the setup at this max_len: "
                     "positive setups at fewer than 2 max_len, or its line falls below 0 here)")
        return "\n".join(lines + [_extrapolation_words(p)])
    point, b_low, b_high = breakeven(p["mean_setup"], p["mean_step"])
    if math.isinf(b_low):
        lines.append(f"break-even: never ({names['static']}'s expected step is slower, "
                     "at 95 %)")
    else:
        at = (f"never at the expected times ({names['static']}'s step is predicted slower)"
              if math.isinf(point) else f"{names['static']}'s total time falls below "
              f"{names['dynamic']}'s after {math.ceil(point):,} steps ("
              f"{p['mean_setup']['static'][0] + point * p['mean_step']['static'][0]:,.0f} s "
              "of training)")
        lines.append(f"break-even: {at}; 95 % interval {b_low:,.0f} to "
                     + ("never" if math.isinf(b_high) else f"{b_high:,.0f}")
                     + " steps (expected times)")
    if steps is not None:
        total = {i: p["mean_setup"][i][0] + steps * p["mean_step"][i][0]
                 for i in ("static", "dynamic")}
        best = min(total, key=total.get)
        sure = ("" if b_high <= steps or b_low > steps else
                " (but the break-even's interval holds that many steps: it may go either way)")
        lines.append(f"for {steps:,} steps: {names[best]} (in all, {names['static']} "
                     f"{total['static']:,.1f} s, {names['dynamic']} {total['dynamic']:,.1f} s)"
                     f"{sure}")
    return "\n".join(lines + [_extrapolation_words(p)])


def _memory_words(p: dict) -> str:
    """What the peak memory column adds up (prediction's ``weights_mb``, the fit's mode)."""
    return ("peak memory: the law along max_len fitted to each run's peak less its weights, "
            f"plus this shape's weights, {_number(p['weights_mb'])} MiB ("
            + ("each weight with its gradient and Adam's two moments"
               if p["fit"]["static"].key["mode"] == "train"
               else "the weights alone: no gradient or optimizer in inference")
            + "); the activations, which grow with batch and num_units too, follow max_len "
            "alone")


def _extrapolation_words(p: dict) -> str:
    """Where the shape lies outside the fitted range, or that it does not."""
    return ("extrapolates: " + "; ".join(p["extrapolates"])
            + ": the model's form is assumed to hold there" if p["extrapolates"]
            else "within the fitted range on every axis")


def _grid_main(args: argparse.Namespace) -> int:
    """predict --probe P --grid CONFIG --out CSV: write machine.predicted_table of CONFIG's
    cells (0), or raise ValueError naming the option that is missing or wrong."""
    from rnnbench.costmodel.machine import predicted_table, read_probe
    from rnnbench.grid.configcheck import check_files

    for option, value in (("--probe", args.probe), ("--grid", args.grid), ("--out", args.out)):
        if value is None:
            raise ValueError(f"{option}: missing (--probe, --grid and --out go together)")
    if args.out.exists():
        raise ValueError(f"--out {args.out}: exists; predictions are written once, before "
                         "the cells run (remove it to predict again)")
    if not args.grid.is_file():
        raise ValueError(f"--grid {args.grid}: " + ("a folder, not a config file"
                                                    if args.grid.is_dir() else
                                                    "no such config file"))
    config, cells, _ = check_files([args.grid])
    kept, left_out = _modelled(cells)
    if not kept:
        raise ValueError(f"--grid {args.grid}: none of its {len(cells)} cells is one the "
                         f"model predicts before a run, e.g. {next(iter(left_out.values()))}")
    table = predicted_table(_fits(args.fits or MAP_FITS), read_probe(args.probe), kept, config["repeats"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"predicted {len(table)} of the {len(cells)} cells of {args.grid} for {args.probe}: "
          f"wrote {args.out}")
    if left_out:
        print(f"left out {len(left_out)} cell(s) the model does not predict before a run, "
              f"e.g. {next(iter(left_out.values()))}", file=sys.stderr)
    return 0


def _modelled(cells: dict[str, dict]) -> tuple[dict[str, dict], dict[str, str]]:
    """The cells machine.predicted_table predicts, and why each other one is left out
    (its ValueError: a sequence_length not fixed, a setting the model does not describe)."""
    from rnnbench.costmodel.check import fixed_length
    from rnnbench.costmodel.machine import check_modelled

    kept, left_out = {}, {}
    for name, cell in cells.items():
        try:
            fixed_length(name, cell)
            check_modelled(name, cell)
        except ValueError as error:
            left_out[name] = str(error)
        else:
            kept[name] = cell
    return kept, left_out


def _fits(path: Path) -> dict:
    """machine.read_machine_fits, its error naming --fits."""
    from rnnbench.costmodel.machine import read_machine_fits

    try:
        return read_machine_fits(path)
    except ValueError as error:
        raise ValueError(f"--fits {error}") from None


def _far_off_words(ranges: dict, rows: pd.DataFrame) -> list[str]:
    """The axes on which ``rows`` lie outside the map's fitted ``ranges``, in words.

    Raises:
        ValueError: naming the option, for a value over FAR_OFF times outside.
    """
    words = []
    for axis, (low, high) in ranges.items():
        value = float(rows[axis].iloc[0])
        option = OPTIONS.get(axis, f"--{axis.replace('_', '-')}")
        if value > FAR_OFF * high or value < low / FAR_OFF:
            raise ValueError(f"{option} {value:g}: over {FAR_OFF:g}x outside the map's "
                             f"{low:g}-{high:g}; the model is not known to hold that far off "
                             "(measure such a cell instead)")
        if not low <= value <= high:
            words.append(f"{axis} {value:g} outside the map's {low:g}-{high:g}")
    return words


MACHINE_MARGIN = 0.1
"""The practical margin an expected ratio is decided at (the config's default ``margin``)."""


def machine_prediction(fits_path: Path, probe_path: Path, cell: str | None, batch: int,
                       units: int, input_dim: int | None, max_len: int,
                       length: int | None, steps: int | None = None) -> dict:
    """Predict a shape on a probed machine, in the probe's units (costmodel.machine).

    Args:
        fits_path: the coefficients (machine.write_machine_fits' JSON).
        probe_path: the machine's probe (machine.read_probe).
        cell: the cell type (None: basic_lstm).
        batch, units, max_len: the shape.
        input_dim: the input's width (None: 16, the map's).
        length: the batch's longest sequence (None: max_len).
        steps: the training steps to be run; only checked here.

    Returns:
        ``step``, ``mean_step``, ``mean_setup`` (impl -> (estimate, low, high), seconds: one
        run's, and the expected values'), ``ratio`` and ``mean_ratio`` ((estimate, low, high)),
        ``decision`` (intervals.decide on the expected ratio at MACHINE_MARGIN), ``side``
        (intervals.side_or_within on it), ``probe``,
        ``about`` (the fits file's account of its map), and the shape as used.

    Raises:
        ValueError: naming the option, for a value below 1, a length outside 1..max_len, a
            cell without graph counts, an unreadable file, or a shape over FAR_OFF times
            outside the map's fitted range.
    """
    import json

    from rnnbench.costmodel.fit import shape_rows
    from rnnbench.costmodel.machine import counts_of, predict_machine, read_counts, read_probe
    from rnnbench.stats.intervals import decide, side_or_within

    for option, value in (("--batch", batch), ("--units", units), ("--max-len", max_len),
                          ("--input-dim", 1 if input_dim is None else input_dim),
                          ("--steps", 1 if steps is None else steps)):
        if value < 1:
            raise ValueError(f"{option} {value}: must be 1 or more")
    if length is not None and not 1 <= length <= max_len:
        raise ValueError(f"--length {length:g}: must lie in 1..--max-len ({max_len})")
    if cell is not None and not cell.strip():
        raise ValueError("--cell '': empty (basic_lstm, lstm or gru)")
    given_input = input_dim
    cell, input_dim = cell or "basic_lstm", 16 if input_dim is None else input_dim
    counts_of(read_counts(), cell, "static")  # a cell type without counts, named first
    fits, probe = _fits(fits_path), read_probe(probe_path)
    length = float(max_len if length is None else length)
    rows = shape_rows(cell, batch, units, input_dim, max_len, length)
    ranges = fits["step"]["static"].ranges
    words = _far_off_words(ranges, rows.assign(input_dim=input_dim))
    one, mean = (predict_machine(fits, rows, probe, runs=runs) for runs in (1, math.inf))
    pick = {"seconds": 0, "low": 1, "high": 2, "ratio": 0}
    first = {key: tuple(frame.iloc[0][[c for c in frame if c in pick]])
             for key, frame in (*one.items(), *((f"mean_{k}", v) for k, v in mean.items()))}
    return {"step": {i: first[f"step_{i}"] for i in ("static", "dynamic")},
            "mean_step": {i: first[f"mean_step_{i}"] for i in ("static", "dynamic")},
            "mean_setup": {i: first[f"mean_setup_{i}"] for i in ("static", "dynamic")},
            "ratio": first["ratio"], "mean_ratio": first["mean_ratio"],
            "decision": decide(*first["mean_ratio"][1:], MACHINE_MARGIN),
            "side": side_or_within(*first["mean_ratio"][1:], MACHINE_MARGIN), "probe": probe,
            "about": about if isinstance(about := json.loads(Path(fits_path).read_text())
                                         .get("about"), dict) else {},
            "cell": cell, "input_dim": input_dim, "length": length, "extrapolates": words,
            "input_default": given_input is None,
            "ranged": bool(ranges)}


def machine_report(p: dict, batch: int, units: int, max_len: int, steps: int | None,
                   probe_path: str) -> str:
    """Write the text predict --probe prints (machine_prediction's dict ``p``)."""
    from rnnbench.stats.formats import decision_text, margin_text

    names = {"static": "static_rnn", "dynamic": "dynamic_rnn"}
    about, machine = p["about"], p["probe"].get("environment") or "unnamed"
    fitted_on = about.get("environment", "the map's machine")
    lines = [f"TensorFlow compat_v1: a {p['cell']} of {units} units, batch {batch}, "
             f"{p['input_dim']} inputs{' (the default: --input-dim)' if p['input_default'] else ''}"
             f", max_len {max_len}, the batch's longest sequence "
             f"{p['length']:g} steps",
             f"for the machine {probe_path} probed: {machine}",
             "model: this graph's counts times the probe's unit costs, with coefficients "
             "fitted to the reference map's runs ("
             + ("the same machine" if fitted_on == machine else fitted_on)
             + f", {about.get('runs', '?')} runs; docs/cost-model.md)", ""]

    def cell_text(v, scale):
        return f"{v[0] * scale:.3g} [{v[1] * scale:.3g}, {v[2] * scale:.3g}]"
    table = pd.DataFrame({"": [names[i] for i in ("static", "dynamic")],
                          "step (ms), expected [95 %]": [cell_text(p["mean_step"][i], 1e3)
                                                         for i in ("static", "dynamic")],
                          "step (ms), one run [95 %]": [cell_text(p["step"][i], 1e3)
                                                        for i in ("static", "dynamic")],
                          "setup (s), expected [95 %]": [cell_text(p["mean_setup"][i], 1)
                                                         for i in ("static", "dynamic")]})
    ratio, mean = p["ratio"], p["mean_ratio"]
    lines += [table.to_markdown(index=False),
              "(expected: the mean over many fresh processes; its interval holds the "
              "coefficients' uncertainty and the cell's own error, not the probe's noise. One "
              "run: where one process's median step falls.)", "",
              f"step ratio static_rnn / dynamic_rnn: {mean[0]:.2f} [{mean[1]:.2f}, "
              f"{mean[2]:.2f}] expected (95 %), {ratio[1]:.2f} to {ratio[2]:.2f} for one run "
              f"of each: {decision_text(p['decision'], MACHINE_MARGIN)} (at a "
              f"{margin_text(MACHINE_MARGIN)} margin)"
              + (f"; {decision_text(p['side'], 0, 'static_rnn', 'dynamic_rnn')}, perhaps by "
                 "less than the margin (the expected interval excludes 1)"
                 if p["decision"] == "undecided" and p["side"] in ("below", "above") else ""),
              _choice_words(p, steps),
              "peak memory: not predicted in the probe's units (predict without --probe gives "
              "the map's memory law)",
              ("extrapolates: " + "; ".join(p["extrapolates"]) if p["extrapolates"] else
               "within the map's fitted range on every axis" if p["ranged"] else
               "the fits record no fitted range: extrapolation not checked")]
    return "\n".join(lines)


def _choice_words(p: dict, steps: int | None) -> str:
    """The break-even (breakeven on the expected times) and, for ``steps``, the choice."""
    point, low, high = breakeven(p["mean_setup"], p["mean_step"])
    words = ("break-even (static_rnn's setup and steps together falling below dynamic_rnn's):"
             + (" never at the expected times" if math.isinf(point) else
                f" after {math.ceil(point):,} steps"))
    words += (f"; 95 % interval {low:,.0f} steps to "
              + ("never" if math.isinf(high) else f"{high:,.0f}"))
    if steps is None:
        return words
    total = {i: p["mean_setup"][i][0] + steps * p["mean_step"][i][0]
             for i in ("static", "dynamic")}
    best = min(total, key=total.get)
    sure = "" if high <= steps or low > steps else " (the break-even's interval holds it)"
    return (f"{words}\nfor {steps:,} steps: {best}_rnn (setup included: static_rnn "
            f"{total['static']:,.1f} s, dynamic_rnn {total['dynamic']:,.1f} s){sure}")


def main(args: argparse.Namespace) -> int:
    """Run ``rnnbench predict``: print the prediction.

    Args:
        args: the parsed command line (add_arguments).

    Returns:
        The exit status: 0, or 2 with the error on standard error.
    """
    try:
        if args.grid is not None or args.out is not None:
            return _grid_main(args)
        missing = [option for option, value in (("--batch", args.batch), ("--units", args.units),
                                                ("--max-len", args.max_len)) if value is None]
        if missing:
            raise ValueError(f"{', '.join(missing)}: required (or --probe P --grid CONFIG "
                             "--out CSV)")
        if args.probe is None and args.fits is not None:  # it would be ignored
            raise ValueError(f"--fits {args.fits}: goes with --probe (the probe-unit "
                             "coefficients); without it predict reads --results")
        if args.probe is not None:
            p = machine_prediction(args.fits or MAP_FITS, args.probe, args.cell, args.batch, args.units,
                                   args.input_dim, args.max_len, args.length, args.steps)
            print(machine_report(p, args.batch, args.units, args.max_len, args.steps,
                                 str(args.probe)))
            return 0
        runs = _runs(args.results)
        p = prediction(runs, args.cell, args.batch, args.units, args.input_dim, args.max_len,
                       args.length, args.steps)
        source = (args.results.relative_to(REPO) if args.results.is_relative_to(REPO)
                  else args.results)
        text = report(p, args.batch, args.units, args.max_len, args.steps, str(source))
    except ValueError as error:
        print(f"rnnbench predict: {error}", file=sys.stderr)
        return 2
    print(text)
    return 0
