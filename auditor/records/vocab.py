"""The closed vocabularies of the records: every value a field of this kind may take.

They are ``Literal`` types, so a type checker (mypy, run in CI) rejects a misspelt outcome or mode,
and :func:`values` gives the same words at run time (the results schema's ``enum``s, the policy
schema, the reports' legends).
"""

from __future__ import annotations

import typing
from typing import Literal

#: what the gate acts on, per rule: ``not_run`` when the rule's capability was left out of the run
Outcome = Literal["pass", "warn", "fail", "not_run"]
#: what the data say of a limit rule (``undecided`` only while the audit may still buy items)
Decision = Literal["pass", "fail", "inconclusive", "not_measurable", "undecided"]
#: how a limit rule decides (:mod:`auditor.policy.rules`)
Mode = Literal["evidence", "point", "confident", "non_inferiority"]
#: what a violated limit is (a rule's ``action:``)
Action = Literal["fail", "warn"]
#: what an inconclusive / not measurable rule, a label finding or a noise floor becomes
OnFinding = Literal["pass", "warn", "fail"]
#: the gate's decision
VerdictValue = Literal["pass", "fail"]
#: what a rule judges: a metric's limit against the base (``limit``), against the previously approved
#: adapter (``baseline_limit``), the nominal label's DriftScore (``drift``), the label's presence or
#: policy entry (``label``), the base replay (``noise_floor``), the adapter's effect (``no_effect``),
#: the declared base (``declared_base``)
RuleKind = Literal["limit", "baseline_limit", "drift", "label", "noise_floor", "no_effect", "declared_base"]
#: which way a limit bounds the movement
LimitDirection = Literal["drop", "rise"]
#: the role a variant plays in one comparison (results.json's item keys): the base model, the audited
#: adapter, the previously approved adapter (``--baseline``)
Role = Literal["base", "adapter", "baseline"]
#: how a metric is aggregated over items (:class:`~auditor.records.MetricSpec`)
Aggregate = Literal["mean", "max_gap", "excess_gap"]
#: how an item is answered (lm-evaluation-harness's ``output_type``): decoded, or scored by log-likelihood
OutputType = Literal["generate_until", "multiple_choice"]


def values(vocabulary: object) -> tuple[str, ...]:
    """The words of one ``Literal`` vocabulary, in declaration order (``values(Outcome)``)."""
    return tuple(str(v) for v in typing.get_args(vocabulary))
