"""Judge claims of other kinds than static against dynamic in a cell: between, trend, law.

Each kind is judged from the runs, with intervals of stated coverage. How each is decided:
docs/method.md, Claims of other kinds. What a claim of each kind must say is
rnnbench.grid.claimspec's (checked when the config is).
"""

from __future__ import annotations

import math

from rnnbench.grid.axes import LABEL_AXES, axis_value_id
from rnnbench.grid.claimspec import DIRECTIONS, KIND_DIRECTIONS, check_claim  # noqa: F401

def side_verdict(low: float, high: float, positive_holds: bool) -> str:
    """Return a slope's verdict from its interval against 0.

    Args:
        low: the interval's lower bound (NaN where there is none).
        high: its upper bound.
        positive_holds: True when the claim holds above 0, False when it holds below.

    Returns:
        'holds' when [low, high] lies wholly on the claimed side of 0, 'does not hold' when
        wholly on the other side, else (or for a NaN bound) 'inconclusive'
        (intervals.side_of_one, intervals.claim_verdict).
    """
    # numpy: not when the Snakefile is read
    from rnnbench.stats.intervals import claim_verdict, side_of_one

    return claim_verdict(side_of_one(low, high, 0.0), "above" if positive_holds else "below")


def _groups(runs, axis: str):
    """(words, runs) per group of cells without ablations alike in every axis but ``axis``."""
    from rnnbench.results.load import at_reference  # pandas: only when judged

    plain = runs[at_reference(runs)]
    others = [c for c in LABEL_AXES if c != axis]
    for key, group in plain.groupby(others, sort=False):
        words = ", ".join(f"{name} {value}" for name, value in zip(others, key)
                          if plain[name].nunique() > 1) or "the grid's cells"
        yield words, group


def judge(claim: dict, runs, margin: float) -> list[dict]:
    """Judge a between, trend or law claim, once per group of cells it applies to.

    Args:
        claim: the claim, as the config gives it (its ``kind`` one of between, trend, law).
        runs: load.load_results's table (after share_runs).
        margin: the practical margin a between claim's ratio is decided at.

    Returns:
        Dicts with scope (the group in words), estimate (its numbers, in words), verdict and
        reason (why it is inconclusive; '' otherwise). Empty when no group of the grid has what
        the claim needs (e.g. both values of a between claim's axis).

    Raises:
        KeyError: for a claim kind other than between, trend or law.
    """
    judge_group = {"between": _between, "trend": _trend, "law": _law}[claim["kind"]]
    out = []
    for words, group in _groups(runs, claim["axis"]):
        values = sorted(group[claim["axis"]].unique(), key=lambda v: (str(type(v)), v))
        if claim["kind"] != "between" and len(values) < 2:
            continue
        found = judge_group(claim, group, values, margin)
        if found:
            out.append({"scope": words, **found})
    return out


def _between(claim: dict, group, values: list, margin: float) -> dict | None:
    """A between claim in one group: Welch's interval of the ratio of the two values' runs."""
    from rnnbench.stats import intervals

    axis, quantity = claim["axis"], claim["quantity"]
    first, second = (group[(group[axis].astype(str) == axis_value_id(axis, v))
                           & (group["impl"] == claim["impl"])][quantity]
                     for v in claim["values"])
    if first.empty or second.empty:
        return None
    ratio, low, high = intervals.ratio_ci(first.to_numpy(float), second.to_numpy(float),
                                          paired=False)
    found = intervals.claim_verdict(intervals.decide(low, high, margin),
                                    "above" if claim["direction"] == "first > second" else "below")
    return {"verdict": found, "reason": _across_reason(found, low, high, 1.0, margin),
            "estimate": f"{claim['impl']} {quantity} at {axis} {claim['values'][0]} / at "
                        f"{claim['values'][1]}: {ratio:.3g} [{low:.3g}, {high:.3g}]"}


def unclear_reason(low: float, high: float, edge: float = 1.0, bounds: bool = True,
                   margin: float = 0.0) -> str:
    """Say why an interval decides nothing (decide's 'undecided', side_of_one's 'across').

    FINDINGS' ratio claims read it too.

    Args:
        low: the interval's lower bound (NaN where there is none).
        high: its upper bound.
        edge: 1 for a ratio, 0 for a slope.
        bounds: whether the words give the interval's bounds.
        margin: a ratio's practical margin (0: none).

    Returns:
        'too few repeats for an interval' (a NaN bound); else 'the 95 % interval [0.9, 1.2]
        holds 1', with ' and reaches past the 10 % margin' where there is one, or, for an
        interval on one side of 1, 'the 95 % interval [0.85, 0.95] lies below 1 but reaches
        inside the 10 % margin'.
    """
    from rnnbench.stats.formats import margin_text  # pandas: only when judged

    if math.isnan(low) or math.isnan(high):
        return "too few repeats for an interval"
    interval = f"the 95 % interval {f'[{low:.3g}, {high:.3g}] ' if bounds else ''}"
    margin_words = f"the {margin_text(margin)} margin"
    if low <= edge <= high:
        return f"{interval}holds {edge:g}" + (f" and reaches past {margin_words}" if margin else "")
    side = "below" if high < edge else "above"
    return f"{interval}lies {side} {edge:g} but reaches inside {margin_words}"


def _across_reason(verdict: str, low: float, high: float, edge: float,
                   margin: float = 0.0) -> str:
    """Why a side verdict is inconclusive (unclear_reason): '' for a conclusive one."""
    return unclear_reason(low, high, edge, margin=margin) if verdict == "inconclusive" else ""


def _trend(claim: dict, group, values: list, margin: float) -> dict | None:
    """A trend claim in one group: the slope of log(static / dynamic) along the axis."""
    import numpy as np

    from rnnbench.stats import scaling

    axis, quantity = claim["axis"], claim["quantity"]
    pairs = group.pivot_table(index=[axis, "repeat"], columns="impl", values=quantity).dropna()
    if len(pairs) < 3:
        return None
    x = pairs.index.get_level_values(axis).to_numpy(float)
    law = scaling.fit_line(x, np.log(pairs["static"] / pairs["dynamic"]).to_numpy())
    low, high = law["slope_ci"]
    found = side_verdict(low, high, claim["direction"] == "increasing")
    return {"verdict": found, "reason": _across_reason(found, low, high, 0.0),
            "estimate": f"log(static / dynamic {quantity}) per unit of {axis}: "
                        f"{law['slope']:.3g} [{low:.3g}, {high:.3g}] over {axis} "
                        + ", ".join(map(str, values))}


def _law(claim: dict, group, values: list, margin: float) -> dict | None:
    """A law claim in one group: a line through one implementation's runs along the axis,
    with its lack-of-fit test; linear (``form``) or a value predicted at ``at``."""
    from rnnbench.stats import scaling
    from rnnbench.stats.formats import prediction_text

    axis, quantity = claim["axis"], claim["quantity"]
    mine = group[group["impl"] == claim["impl"]][[axis, quantity]].dropna()
    if len(mine) < 3:
        return None
    at = [claim["at"]] if "at" in claim else []
    x, y = mine[axis].to_numpy(float), mine[quantity].to_numpy(float)
    # a claimed form is tested as a line; a value at ``at`` is read off the law the runs
    # choose (a line, or a power law where the repeats reject the line: scaling.fit_law)
    law = scaling.fit_line(x, y, at) if "form" in claim else scaling.fit_law(x, y, at)
    poor = law["lack_of_fit_p"] < scaling.LACK_OF_FIT_ALPHA
    fit = ((f"power law, exponent {law['slope']:.3g} [{law['slope_ci'][0]:.3g}, "
            f"{law['slope_ci'][1]:.3g}], " if law.get("form") == "power" else
            f"{law['slope']:.4g} [{law['slope_ci'][0]:.4g}, {law['slope_ci'][1]:.4g}] "
            f"per unit of {axis}, ") + ("no lack-of-fit test (too few values of the axis)"
                                      if math.isnan(law["lack_of_fit_p"]) else
                                      f"lack-of-fit p {law['lack_of_fit_p']:.2g}"))
    untested = ("the axis has too few values to test the line's fit"
                if math.isnan(law["lack_of_fit_p"]) else "")
    if "form" in claim:
        # a line that does not fit, or one that clearly falls, is no rising linear law
        falls = law["slope_ci"][1] < 0
        reason = untested or ("" if poor or falls or law["slope_ci"][0] > 0 else
                              "the slope's 95 % interval holds 0")
        return {"verdict": "does not hold" if (poor or falls) and not untested
                else "inconclusive" if reason else "holds",
                "reason": reason, "estimate": f"{claim['impl']} {quantity}: {fit}"}
    _, estimate, low, high = law["predictions"][0]
    value = claim["value"]
    reason = untested or (
        f"neither a line nor a power law fits (lack-of-fit p {law['lack_of_fit_p']:.2g}): no "
        "extrapolation from it is trusted" if poor else
        "the line falls to zero or below there: it predicts no time" if estimate <= 0 else
        f"its 95 % interval reaches zero or below: the runs cannot tell {value:g} from "
        "nothing" if low <= 0 else
        f"its 95 % interval [{low:.4g}, {high:.4g}] holds the claimed {value:g} and "
        + " and ".join(f"{off:g}" for off in (value / 2, 2 * value) if low <= off <= high)
        + ": too wide to tell the claim from a factor of 2 off it"
        if low <= value <= high and (low <= value / 2 or 2 * value <= high) else "")
    said = prediction_text(estimate, low, high)
    return {"verdict": "inconclusive" if reason else "holds" if low <= value <= high
            else "does not hold", "reason": reason,
            "estimate": f"{claim['impl']} {quantity} at {axis} {claim['at']:g}: {said} against "
                        f"the claimed {value:g} ({fit})"}
