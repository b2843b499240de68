"""Check what a claim in a config must say, by kind (ratio, between, trend, law).

Checked with the config, before any job; rnnbench.stats.claims judges the claims from the
runs.
"""

from __future__ import annotations

from rnnbench.grid.axes import NUMERIC_AXES

KIND_DIRECTIONS = {
    "ratio": ("static > dynamic", "static < dynamic"),
    "between": ("first > second", "first < second"),
    "trend": ("increasing", "decreasing"),
    "law": (),
}
"""The directions each kind of claim takes (law: none)."""
DIRECTIONS = tuple(d for directions in KIND_DIRECTIONS.values() for d in directions)
KIND_FIELDS = {"ratio": {"direction"}, "between": {"impl", "axis", "values", "direction"},
               "trend": {"axis", "direction"}, "law": {"impl", "axis"}}
"""The fields each kind needs (besides id, seed, statement, quantity)."""
ALL_FIELDS = {"impl", "axis", "values", "direction", "form", "at", "value", "figure"}


def check_claim(claim: dict, number: int) -> None:
    """Check that a claim has the fields its kind needs, and no field it cannot use.

    Args:
        claim: the claim, as the config gives it.
        number: its position in the config's claims, for the message.

    Raises:
        ValueError: ``claims.<number>.<field>: ...`` naming what is missing or out of place.
    """
    kind = claim.get("kind", "ratio")
    where = f"claims.{number}"
    for field in sorted(KIND_FIELDS[kind] - set(claim)):
        raise ValueError(f"{where}.{field}: a {kind} claim ({claim['id']}) needs it")
    usable = KIND_FIELDS[kind] | ({"figure"} if kind == "ratio" else set()) | (
        {"form", "at", "value"} if kind == "law" else set())
    for field in sorted((ALL_FIELDS & set(claim)) - usable):
        raise ValueError(f"{where}.{field}: a {kind} claim ({claim['id']}) takes no {field}")
    if "direction" in claim and claim["direction"] not in KIND_DIRECTIONS[kind]:
        raise ValueError(f"{where}.direction: {claim['direction']!r} is not one of "
                         f"{list(KIND_DIRECTIONS[kind])} for a {kind} claim")
    if kind in ("trend", "law") and claim["axis"] not in NUMERIC_AXES:
        raise ValueError(f"{where}.axis: {claim['axis']!r}: a {kind} needs a numeric axis, one of "
                         f"{list(NUMERIC_AXES)}")
    if kind == "between" and claim["values"][0] == claim["values"][1]:
        raise ValueError(f"{where}.values: {claim['values']!r}: two different values")
    if kind == "law" and ("form" in claim) == ("at" in claim or "value" in claim):
        raise ValueError(f"{where}: a law claim ({claim['id']}) says either form: linear, or at "
                         "and value")
    if kind == "law" and ("at" in claim) != ("value" in claim):
        raise ValueError(f"{where}: a law claim ({claim['id']}) with at needs value, and back")
