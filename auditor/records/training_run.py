"""run.json: the audit of a training run's checkpoints, one record per checkpoint in step order.

Units as everywhere (:mod:`auditor.records`): ``delta``, ``ci_low``, ``ci_high`` and ``drift_score_pts`` in
**points** for rates (adapter − base, ×100), the metric's own unit (words, tokens) otherwise (``delta_unit``).
The schema ``auditor/data/schemas/run.schema.json`` is generated from these records
(``python -m auditor.records.schema_files --write``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: run.json's schema version (its own, beside results.json's)
RUN_SCHEMA_VERSION = 1

#: what became of one checkpoint: the gate's verdict, or ``not_audited`` (after ``--stop-at-first-fail`` stopped)
CheckpointVerdict = Literal["pass", "fail", "not_audited"]


@dataclass(frozen=True, kw_only=True)
class MetricDelta:
    """One metric's movement at one checkpoint: ``delta`` with its 95% interval [``ci_low``, ``ci_high``]
    (None where no interval was computed), in ``delta_unit``."""

    metric: str
    capability: str
    group: str
    delta: float
    ci_low: float | None
    ci_high: float | None
    delta_unit: str
    higher_is_better: bool


@dataclass(frozen=True, kw_only=True)
class FailingRule:
    """A rule that failed at a checkpoint: its name, stable id and one-line reason."""

    rule: str
    rule_id: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class CheckpointOutcome:
    """One checkpoint of the run.

    Attributes:
        step: its ``global_step``; step_source: where the step came from (``trainer_state`` or ``folder name``).
        path: its folder as given; report: its report folder, relative to run.json (None when not audited).
        verdict: ``pass``, ``fail`` or ``not_audited``; drift_score_pts: DriftScore (points; None without a
            label the policy maps, or when not audited).
        deltas: every metric's Δ with its interval (empty when not audited); failing: the rules that failed.
    """

    step: int
    step_source: str
    path: str
    report: str | None
    verdict: CheckpointVerdict
    drift_score_pts: float | None
    deltas: tuple[MetricDelta, ...]
    failing: tuple[FailingRule, ...]


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """The audit of a training run (run.json).

    Attributes:
        run_dir: the run folder as given; selection: the ``--checkpoints`` value; base, suite, policy: what
            every checkpoint was audited with (one base pass for all).
        stopped_early: ``--stop-at-first-fail`` ended the run before its last selected checkpoint.
        checkpoints: every selected checkpoint in step order.
        last_passing: the step of the last checkpoint in step order that passes (None: none passes).
        first_failing: the step of the first checkpoint that fails (None: none fails); first_failing_rules:
            its failing rules.
    """

    schema_version: int
    run_dir: str
    selection: str
    base: str
    suite: str
    policy: str
    stopped_early: bool
    checkpoints: tuple[CheckpointOutcome, ...]
    last_passing: int | None
    first_failing: int | None
    first_failing_rules: tuple[FailingRule, ...]
