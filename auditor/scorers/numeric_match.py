"""Numeric match (NM): the final number of the answer equals the gold answer (GSM8K-style math)."""

from __future__ import annotations

import math
import re

from ..records import Generation, Item, MetricSpec, Score
from .scorer import Scorer, register

# --------------------------------------------------------------------------- numeric match
_NUM = r"-?\d[\d,]*(?:\.\d+)?"


_MARKER_RE = re.compile(r"(?:####|answer is|answer:)\s*\$?\s*(" + _NUM + ")", re.I)


_NUM_RE = re.compile(_NUM)


def extract_number(text: str) -> tuple[float | None, str]:
    """Extract the model's final numeric answer.

    Rule (in order): the number after a ``####`` / ``answer is`` / ``answer:``
    marker (the last such marker); otherwise the last number in the text.
    Thousands separators (``1,234``) and a leading ``$`` are normalised;
    a trailing ``.`` ends the number. Returns ``(value, rule)``.
    """
    markers = _MARKER_RE.findall(text)
    if markers:
        raw, rule = markers[-1], "marker"
    else:
        nums = _NUM_RE.findall(text)
        if not nums:
            return None, "none"
        raw, rule = nums[-1], "last_number"
    raw = raw.replace(",", "").rstrip(".")
    try:
        return float(raw), rule
    except ValueError:
        return None, "none"


def score_numeric_match(item: Item, gen: Generation) -> Score:
    """Numeric match (NM): 1.0 if the extracted number equals the gold answer."""
    gold = float(item.target["answer"])
    value, rule = extract_number(gen.text)
    ok = value is not None and abs(value - gold) < 1e-6
    return Score(item_id=gen.item_id, variant=gen.variant, values={"numeric_match": float(ok)},
                 detail={"extracted": value, "gold": gold, "rule": rule})


def _target_numeric_match(row: dict) -> dict:
    ans = row.get("answer")
    if isinstance(ans, bool) or not isinstance(ans, (int, float)):
        raise ValueError("numeric_match items need a numeric 'answer'")
    if abs(ans) >= 1e15 or not math.isfinite(ans):
        raise ValueError(f"numeric_match 'answer' must be a finite number below 1e15 in size, not {str(ans)[:40]}")
    return {"answer": ans}


register(Scorer("numeric_match", (MetricSpec(name="numeric_match"),), score_numeric_match, _target_numeric_match))
