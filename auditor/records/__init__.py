"""Typed records passed between the stages (docs/concepts/design.md, the data flow).

Every stage takes and returns these plain dataclasses, so each stage can be
tested alone and a run can be re-rendered from ``results.json`` (the whole
audit's record, :class:`auditor.results.AuditResult`, is built from these).

* :mod:`~auditor.records.inputs`: the adapter config, the base model, the adapter (what inspection found,
  what results.json records of it);
* :mod:`~auditor.records.items`: suite, items, requests, generations, scores, metric specs;
* :mod:`~auditor.records.outcomes`: comparisons, agreement with the base, DriftScore, rule outcomes, the verdict;
* :mod:`~auditor.records.run`: the adapter variants of a run, its looks (rounds) and budget;
* :mod:`~auditor.records.vocab`: the closed vocabularies (outcome, decision, mode, rule kind, ...).

Every record is ``@dataclass(frozen=True, kw_only=True)``: made once, by keyword, by the stage that
owns it, and never edited after (a later stage that needs another value makes a new record). Their
sequences are tuples and their mappings are typed ``Mapping``, so the type checker refuses an
in-place edit too (``tests/test_records.py`` checks the declarations).

Units used throughout:
    * a *score* is a fraction in [0, 1] (e.g. numeric match 0.25);
    * a *delta* is in **points** (percentage points, adapter − base, ×100);
    * a *relative delta* is in **%** of the base score.
"""

from .inputs import (
                     DECLARED_BASE_STATUSES,
                     LETTERS,
                     AdapterConfig,
                     AdapterRecord,
                     AdapterTensor,
                     BaseModel,
                     ModuleWeightSpace,
                     PromptTemplate,
                     TokenizerFiles,
                     VocabResize,
                     WeightSpace,
)
from .items import Capability, Generation, Item, MetricSpec, Request, Score, Suite
from .outcomes import Agreement, AgreementWithBase, DriftResult, MetricComparison, NoiseFloor, RuleOutcome, Verdict
from .plain import to_plain
from .run import Budget, Round, Variant

__all__ = ["DECLARED_BASE_STATUSES", "LETTERS", "AdapterConfig", "AdapterRecord", "AdapterTensor", "BaseModel",
           "ModuleWeightSpace", "PromptTemplate", "TokenizerFiles", "VocabResize", "WeightSpace",
           "Capability", "Generation", "Item", "MetricSpec", "Request", "Score", "Suite", "Agreement",
           "AgreementWithBase", "DriftResult",
           "MetricComparison", "NoiseFloor", "RuleOutcome", "Verdict", "to_plain", "Budget", "Round", "Variant"]
