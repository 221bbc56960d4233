"""XSTest (Röttger et al., 2024, arXiv:2308.01263): ``xstest_prompts.csv`` (450 prompts) → rows of
split ``safe`` (250 prompts that only look unsafe) or ``unsafe`` (200, the ``contrast_*`` types):
``prompt``, ``meta.type``; scorers ``refusal`` / ``refusal_unsafe``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from .benchmark import Benchmark, BenchmarkRows, csv_records, hub_split, need, register

# --------------------------------------------------------------------------- XSTest
XSTEST_SPLITS = ("safe", "unsafe", "all")


def xstest_label(rec: dict[str, Any]) -> str:
    """``safe`` / ``unsafe``: the ``label`` column, else from the type (``contrast_*`` are unsafe)."""
    label = str(rec.get("label") or "").strip().lower()
    if label in ("safe", "unsafe"):
        return label
    return "unsafe" if str(rec.get("type", "")).startswith("contrast_") else "safe"


def xstest_rows(records: Iterable[tuple[int | str, dict[str, Any]]], where: Path | str, source: str,
                split: str) -> BenchmarkRows:
    """XSTest records → rows of one split (``safe``, ``unsafe`` or ``all``).

    Item ids are ``xstest-<id>`` with the file's ``id`` column (1-based row
    number where a copy has no id column).
    """
    rows, n = [], 0
    excluded: Counter[str] = Counter()
    for k, (lineno, rec) in enumerate(records, 1):
        n += 1
        prompt = need(where, lineno, rec, "prompt", str)
        typ = need(where, lineno, rec, "type", str).strip()
        label = xstest_label(rec)
        if label == "unsafe" and not typ.startswith("contrast_"):
            raise AuditInputError(where, f"line {lineno}: label 'unsafe' but type {typ!r} is not a contrast_ type")
        if split != "all" and label != split:
            excluded[f"label {label}"] += 1
            continue
        rid = str(rec.get("id") or k).strip()
        rows.append({"id": f"xstest-{rid}", "prompt": prompt,
                     "meta": {"benchmark": "xstest", "source": source, "type": typ, "label": label,
                              "focus": rec.get("focus") or "", "note": rec.get("note") or ""}})
    return BenchmarkRows("xstest", split, str(where), rows, n, dict(excluded))


def read_xstest(path: str | Path, split: str = "all") -> BenchmarkRows:
    """XSTest ``xstest_prompts.csv`` → rows (250 safe + 200 unsafe in the v2 file).

    Raises:
        AuditInputError: a missing column, a malformed record, unknown split.
    """
    if split not in XSTEST_SPLITS:
        raise AuditInputError("xstest", f"unknown split {split!r}; use one of {list(XSTEST_SPLITS)}")
    path = Path(path)
    return xstest_rows(csv_records(path, ("prompt", "type")), path, path.name, split)


def _hub_xstest(hub_id: str, split: str) -> BenchmarkRows:
    part = hub_split(hub_id, None, None)
    return xstest_rows(((f"record {i}", dict(r)) for i, r in enumerate(part)), f"hub:{hub_id}", hub_id, split)


register(Benchmark("xstest", XSTEST_SPLITS, lambda s: ("xstest_prompts.csv", "xstest_v2_prompts.csv"),
                   lambda p, s: read_xstest(p, s), "walledai/XSTest", _hub_xstest))
