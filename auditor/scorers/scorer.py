"""The scorer record and its registry.

A scorer is one module of this package that registers one :class:`Scorer`: its name (what a
suite manifest's ``scorer:`` names), the metrics it reports (units and direction declared beside
it), how it scores one answer, how it checks an item row's gold data when the suite loads, and,
where one answer's score needs the other answers of its capability, a second pass. Adding a scorer
is adding one module (and its test); the suite schema and the reports read the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..records import Generation, Item, MetricSpec, Score
from ..records.vocab import OutputType
from ..util.registry import Registry

ScoreFn = Callable[[Item, Generation], Score]
#: ``build_target(row) -> target``: one item row (a JSON object from the suite's item file) → ``Item.target``;
#: raises ValueError naming the fault
TargetFn = Callable[[dict], dict]
#: ``finalize(items, scores) -> scores`` for one capability and one variant: values that need other items'
#: answers (e.g. agreement of a perturbed item with its unperturbed original)
FinalizeFn = Callable[[dict[str, Item], list[Score]], list[Score]]


@dataclass(frozen=True)
class Scorer:
    """One registered scorer.

    Attributes:
        name: the manifest's ``scorer:`` value.
        metrics: what it reports per item (``Score.values`` keys), with unit and direction.
        score: ``score(item, generation) -> Score``, deterministic.
        build_target: checks an item row and builds its ``Item.target`` (None: empty target).
        finalize: capability-level second pass (None: none).
        explain: one line explaining an answer's ``Score.detail`` for the report's item browser
            (None: the detail's keys and values).
        output_type: how its items are answered (lm-evaluation-harness's term): ``generate_until``
            (decoded text) or ``multiple_choice`` (each choice's log-likelihood, no decoding).
    """

    name: str
    metrics: tuple[MetricSpec, ...]
    score: ScoreFn
    build_target: TargetFn | None = None
    finalize: FinalizeFn | None = None
    explain: Callable[[dict], str] | None = None
    output_type: OutputType = "generate_until"


#: scorer name → scorer, filled by the scorer modules (:func:`register`), frozen once
#: :mod:`auditor.scorers` has imported them all
SCORERS: Registry[Scorer] = Registry("scorer")


def register(scorer: Scorer) -> Scorer:
    """Add a scorer to :data:`SCORERS` (one call at the bottom of its module).

    Raises:
        ValueError: a scorer of that name is registered already, or the registry is frozen.
    """
    return SCORERS.register(scorer.name, scorer)
