"""Stage 6 — the policy: a YAML file (:mod:`.schema`, :mod:`.loading`) and the rule engine that
turns one adapter's comparisons into rule outcomes and a verdict (:mod:`.rules`)."""

from .loading import DEFAULT_POLICY, LabelTarget, MetricLimit, Policy, load_policy
from .rules import BASELINE_PREFIX, judge, mismatch_kind

__all__ = ["DEFAULT_POLICY", "LabelTarget", "MetricLimit", "Policy", "load_policy", "BASELINE_PREFIX", "judge",
           "mismatch_kind"]
