"""Item pools: the items an audit escalates into when a rule is undecided.

A capability of a suite manifest may name a ``pool:``, one source or a list of sources in the
``source:`` syntax (builtin JSONL paths, or a standard benchmark with ``--data-dir`` or the hub).
The pool is every row of those sources that is not already one of the suite's items for the
capability, its sampling units (items, or whole clusters with ``unit: cluster``) in one seeded
order (a permutation seeded by the seed and the capability's name), so a round always draws the same items,
item ids stay stable and cached answers are reused. Rows are loaded and checked (the scorer's
``build_target``, kept on the suite's :class:`~auditor.records.Capability`) only when the audit first
escalates into the capability.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import AuditInputError
from ..records import Item, Suite
from ..util.seeding import rng_for
from .manifest import capability_rows, manifest_specs
from .rows import check_unique_ids, item_from_row, local_id
from .sampling import sampling_units


@dataclass
class Pool:
    """The escalation pool of one capability: its items in draw order, and how many are drawn.

    Attributes:
        capability: the capability's name.
        units: the pool's sampling units (lists of items that are drawn together), in draw order.
        drawn: units handed out so far.
        sources: where the rows came from (as ``Suite.sources`` records them).
    """

    capability: str
    units: list[list[Item]]
    drawn: int = 0
    sources: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        return sum(len(u) for u in self.units)

    @property
    def remaining(self) -> int:
        """Items not drawn yet."""
        return sum(len(u) for u in self.units[self.drawn:])

    def draw(self, n_items: int) -> list[Item]:
        """The next units, at least ``n_items`` items (fewer when the pool runs out)."""
        out: list[Item] = []
        while self.drawn < len(self.units) and len(out) < n_items:
            out.extend(self.units[self.drawn])
            self.drawn += 1
        return out


def load_pool(suite: Suite, capability: str, data_dir: str | Path | None = None, seed: int = 0) -> Pool:
    """The escalation pool of ``capability`` in ``suite`` (empty when its manifest names none); its rows are
    checked with the ``build_target`` the suite's capability record keeps (:func:`~.manifest.load_suite`).

    Raises:
        AuditInputError: a pool source that cannot be read, or rows the scorer refuses (named
            like the suite's own sources).
        ValueError: ``capability`` has a pool but is not one of the suite's capabilities.
    """
    manifest = Path(suite.path)
    spec = next((c for c in manifest_specs(manifest) if c.name == capability), None)
    if spec is None or not spec.pool:
        return Pool(capability=capability, units=[])
    sources = spec.pool
    loaded = next((c for c in suite.capabilities if c.name == capability), None)
    if loaded is None:
        raise ValueError(f"capability {capability!r} is not one of the suite's: no pool to draw for it")
    in_suite = {i.id for i in suite.items if i.capability == capability}
    rows: list[tuple[Path | str, int | str, dict[str, Any]]] = []
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    unit = sources[0].unit
    for src_spec in sources:
        pool_cap = replace(spec, source=src_spec)
        src, src_rows, record = capability_rows(pool_cap, manifest, data_dir)
        check_unique_ids(src, src_rows)
        records.append(record)
        for pos, row in src_rows:
            if not isinstance(row, dict):
                raise AuditInputError(src, f"{pos}: an item must be a JSON object")
            local = local_id(row)
            if f"{capability}/{local}" in in_suite or local in seen:
                continue
            seen.add(local)
            rows.append((src, pos, row))
    groups = sampling_units([r for _, _, r in rows], unit) if rows else []
    order: Any = rng_for(seed, f"pool/{capability}").permutation(len(groups)) if groups else []
    units = [[item_from_row(spec, rows[k][2], rows[k][0], rows[k][1], build_target=loaded.build_target,
                            output_type=loaded.output_type)
              for k in groups[u]] for u in order]
    return Pool(capability=capability, units=units, sources=records)
