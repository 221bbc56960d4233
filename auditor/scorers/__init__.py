"""Stage 4 — score: deterministic per-item scorers, one module each, behind one registry.

Each scorer turns one (item, generation) into a :class:`~auditor.records.Score` whose ``values``
are fractions in [0, 1] (or counts, for count metrics) and whose ``detail`` records what the scorer
saw, so a reviewer can check it. The metrics each scorer reports are declared next to it
(:class:`~auditor.scorers.scorer.Scorer`). Every module of this package but :mod:`.scorer` and
:mod:`.ifeval_checkers` registers one or two scorers when imported; they are all imported here, so
a new scorer is a new module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping, Sequence

from ..errors import AuditInputError
from ..records import Generation, Item, MetricSpec, Score
from .scorer import SCORERS, Scorer, register

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name not in ("base", "ifeval_checkers"):
        importlib.import_module(f"{__name__}.{_mod.name}")
SCORERS.freeze()


def metrics_of(scorer: str) -> tuple[MetricSpec, ...]:
    """The metrics scorer ``scorer`` reports (empty for an unknown name)."""
    s = SCORERS.get(scorer)
    return s.metrics if s else ()


def score_all(items: Mapping[str, Item], generations: Sequence[Generation], scorer_of: Mapping[str, str]) -> list[Score]:
    """Score every generation.

    Args:
        items: item id → item.
        generations: model outputs (any variants).
        scorer_of: capability → scorer name.

    Returns:
        One Score per generation, in the order of ``generations``; scorers
        with a ``finalize`` get their second pass per (capability, variant).
    """
    out: list[Score] = []
    for g in generations:
        item = items[g.item_id]
        out.append(SCORERS[scorer_of[item.capability]].score(item, g))
    groups: dict[tuple[str, str], list[int]] = {}
    for k, s in enumerate(out):
        groups.setdefault((items[s.item_id].capability, s.variant), []).append(k)
    for (cap, _variant), idx in groups.items():
        fin = SCORERS[scorer_of[cap]].finalize
        if fin is not None:
            for k, s in zip(idx, fin(dict(items), [out[k] for k in idx])):
                out[k] = s
    return out


def check_scorer_data(scorers: Iterable[str]) -> None:
    """Refuse, before any model loads, a run whose scorers lack data they need: IFEval's checkers need NLTK's
    English punkt_tab.

    Raises:
        AuditInputError: naming the data and how to get it.
    """
    if "ifeval" in scorers:
        from .ifeval_checkers import PunktDataError, ensure_punkt

        try:
            ensure_punkt()
        except PunktDataError as e:
            raise AuditInputError("nltk punkt_tab", str(e)) from None


__all__ = ["SCORERS", "Scorer", "register", "check_scorer_data", "metrics_of", "score_all"]
