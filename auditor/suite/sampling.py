"""Seeded, stratified sampling of item rows (numpy), and fixed first-N subsets.

:func:`sample_rows` is stratified (proportional allocation, largest remainder) and seeded
(``numpy.random.default_rng``), so a preset always selects the same item ids from the same data;
:func:`first_rows` keeps the first rows (or clusters) of a file instead, a fixed subset that stays
the same when rows are appended. Rows sharing ``meta.cluster`` can be drawn as one unit.
"""

from __future__ import annotations

from typing import Any

import numpy as np


# --------------------------------------------------------------------------- sampling
def row_field(row: dict[str, Any], key: str) -> Any:
    """``row["meta"][key]`` if present, else ``row[key]``, else None."""
    meta = row.get("meta")
    if isinstance(meta, dict) and key in meta:
        return meta[key]
    return row.get(key)


def allocate(sizes: list[int], n: int) -> list[int]:
    """Proportional allocation of ``n`` draws over strata of ``sizes`` (largest remainder).

    Each stratum gets ``floor(n·size/total)``; the draws left go to the
    largest fractional parts (ties: earlier stratum first). Never more than a
    stratum holds; ``sum(result) == min(n, total)``.
    """
    total = sum(sizes)
    n = min(n, total)
    exact = [n * s / total for s in sizes]
    quota = [int(np.floor(x)) for x in exact]
    order = sorted(range(len(sizes)), key=lambda k: (-(exact[k] - quota[k]), k))
    left = n - sum(quota)
    for k in order:
        if left == 0:
            break
        if quota[k] < sizes[k]:
            quota[k] += 1
            left -= 1
    return quota


def sampling_units(rows: list[dict[str, Any]], unit: str) -> list[list[int]]:
    """Row indices grouped into sampling units, in order of first appearance.

    Raises:
        ValueError: unknown ``unit``, or ``unit == "cluster"`` and a row lacks ``meta.cluster``.
    """
    if unit not in ("item", "cluster"):
        raise ValueError(f"unknown sampling unit {unit!r}; use 'item' or 'cluster'")
    units: dict[Any, list[int]] = {}
    for k, row in enumerate(rows):
        key = k
        if unit == "cluster":
            key = row_field(row, "cluster")
            if key is None:
                raise ValueError(f"row {row.get('id', k)!r} has no meta.cluster to sample by cluster")
        units.setdefault(key, []).append(k)
    return list(units.values())


def first_rows(rows: list[dict[str, Any]], n: int, unit: str = "item") -> list[dict[str, Any]]:
    """The first ``n`` sampling units of ``rows``, in source order (no randomness).

    For a preset that must keep a fixed subset while its item file grows by
    appended rows (smoke keeps the rows it had; fast takes them all). With
    ``unit == "cluster"`` the first ``n`` distinct ``meta.cluster`` values are
    kept with all their rows.

    Raises:
        ValueError: as :func:`sample_rows` for ``unit``.
    """
    keep = sorted(k for g in sampling_units(rows, unit)[:n] for k in g)
    return [rows[k] for k in keep]


def sample_rows(rows: list[dict[str, Any]], n: int | None, stratify: str | None = None, seed: int = 0,
                unit: str = "item") -> list[dict[str, Any]]:
    """Seeded, stratified sample of item rows, in source order.

    Args:
        rows: item rows.
        n: how many sampling units to keep; None (or ``n`` ≥ the number of
            units) keeps every row.
        stratify: a row field (looked up in ``meta`` first) whose values are
            the strata; draws are allocated to strata in proportion to their
            size (:func:`allocate`), strata in sorted order of their value.
        seed: seed of ``numpy.random.default_rng``; the same rows, ``n``,
            ``stratify`` and seed always give the same sample.
        unit: ``item`` (each row is a unit) or ``cluster`` (all rows sharing
            ``meta.cluster`` are kept or dropped together, e.g. a question and
            its perturbations; the stratum is that of the cluster's first row).

    Raises:
        ValueError: a row lacks the stratify field or its cluster.
    """
    groups = sampling_units(rows, unit)
    if n is None or n >= len(groups):
        return list(rows)
    strata: dict[str, list[int]] = {}
    for u, members in enumerate(groups):
        first = rows[members[0]]
        if stratify is None:
            value = ""
        else:
            value = row_field(first, stratify)
            if value is None:
                raise ValueError(f"row {first.get('id', members[0])!r} has no field {stratify!r} to stratify by")
        strata.setdefault(str(value), []).append(u)
    keys = sorted(strata)
    quotas = allocate([len(strata[k]) for k in keys], n)
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for key, q in zip(keys, quotas):
        members = strata[key]
        picks: Any = rng.choice(len(members), size=q, replace=False) if q else []
        chosen.extend(members[int(p)] for p in picks)
    keep = sorted(k for u in chosen for k in groups[u])
    return [rows[k] for k in keep]
