"""Can this base show the movement a rule looks for?

A rate the base already has at its floor cannot drop, one at its ceiling cannot rise, and a
multiple-choice accuracy at chance cannot drop by the limit either: an adapter that broke the
capability would answer at chance too. A rule on such a metric would pass whatever the adapter
did, silently; it is reported as *not measurable on this base* instead (the policy's
``on_not_measurable``, warn by default), unless the data show the harm anyway (then it fails).

The room of a rule is how far (in the rule's units: points for ``_pts`` limits, % of the base for
``_pct`` limits) the metric can move toward the limited direction from the base's value before it
reaches its floor (0, or chance, :attr:`~auditor.records.MetricComparison.floor`) or its ceiling
(100%). A rule is measurable when its room is at least its limit.

**Below chance is not a floor**: chance bounds what an adapter that answers at random
scores, not what a harmful one scores. An adapter whose answers no longer parse, or that picks a
wrong option on purpose, takes a multiple-choice accuracy below chance (seen: a third-party adapter
took ``robustness.acc`` from 21.9 to 0.0 on 32 items; the zoo's ``instruct-as-math`` from 25.0
to 10.0). So once the adapter's accuracy is below chance the room of a drop is counted down to 0,
and the rule decides on its evidence as any other (a null adapter's noise below chance does not fail
it: the evidence rule's own error control applies).
"""

from __future__ import annotations

import math

from ..records import MetricComparison


def room(c: MetricComparison, kind: str, pct: bool) -> float | None:
    """How far the metric can move toward ``kind`` (``drop`` / ``rise``) from the base's value, in
    points (``pct=False``, fraction metrics) or % of the base (``pct=True``); None when unbounded."""
    floor = 0.0 if below_chance(c) else c.floor
    if pct:
        if kind == "rise":
            return None
        return 100.0 * max(0.0, c.base - floor) / c.base if c.base else 0.0
    if not c.is_fraction:
        return None
    return 100.0 * max(0.0, (c.base - floor) if kind == "drop" else (c.ceiling - c.base))


def below_chance(c: MetricComparison) -> bool:
    """Whether the adapter scores below the metric's chance floor (``floor`` > 0: a multiple-choice
    accuracy), which an adapter answering at random would not: the drop's room then reaches 0."""
    return c.floor > 0 and c.adapter is not None and math.isfinite(c.adapter) and c.adapter < c.floor


def why_not_measurable(c: MetricComparison, kind: str, pct: bool, limit: float, unit: str) -> str:
    """One phrase saying why the base cannot show a movement of ``limit`` (``""`` when it can)."""
    if c.base is None or not math.isfinite(c.base) or not c.n_items:
        return ""  # nothing scored (e.g. no item had the metric): nothing to say of the base's room
    r = room(c, kind, pct)
    if r is None or not math.isfinite(r) or r >= limit:
        return ""
    if c.is_fraction and c.aggregate == "mean" and c.unit == "fraction":
        hits = round(c.base * c.n_items)
        where = f"the base scores {100 * c.base:.1f} ({hits} of {c.n_items} items)"
    else:
        where = f"the base's value is {100 * c.base:.1f}" if c.is_fraction else f"the base's value is {c.base:.1f}"
    if kind == "drop" and c.floor > 0:
        bound = f"chance is {100 * c.floor:.1f}"
    elif kind == "drop":
        bound = "its floor is 0"
    else:
        bound = "its ceiling is 100"
    return (f"{where} and {bound}, so it cannot {kind} by {limit:g} {unit} (room {r:.1f}); "
            "an adapter that broke it would look the same")
