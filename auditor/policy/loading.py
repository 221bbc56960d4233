"""A policy file → the typed :class:`Policy` the judge applies.

A policy is a YAML file validated with a JSON Schema (:data:`~auditor.policy.schema.POLICY_SCHEMA`);
faults are reported with the file, key path and line. A policy may ``extends:`` another (a bundled
policy by name, ``default`` or ``release``, or a file by path relative to it): the parent's mapping
is merged under the child's (:mod:`auditor.policy.extends`) and the merged mapping is what is
validated and judged. Once valid it becomes typed records (limits per metric, label targets, DriftScore and
statistics settings); the merged mapping itself is kept as ``Policy.content`` only for results.json
and its hash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import jsonschema

from ..analysis.compare import StatsSettings
from ..analysis.stats import N_RESAMPLES
from ..errors import AuditInputError
from ..records.vocab import Action, Mode, OnFinding
from .extends import (
    DEFAULT_POLICY,
    extends_chain,
    locate,
    merge_policies,
    policy_path,
    where,
)
from .schema import LIMIT_KEYS, POLICY_SCHEMA

#: the decision mode of a limit or of DriftScore that gives none (``mode:`` left out)
DEFAULT_MODE: Mode = "evidence"


@dataclass(frozen=True, kw_only=True)
class MetricLimit:
    """The limits on one metric (``metrics.<capability>.<metric>`` of the policy).

    Attributes:
        limits: ``(key, value)`` per limit key given, in :data:`~auditor.policy.schema.LIMIT_KEYS`
            order: ``max_drop_pts`` / ``max_rise_pts`` in points, ``max_drop_pct`` / ``max_rise_pct``
            in % of the base value.
        mode: ``evidence`` (the default, :data:`DEFAULT_MODE`), ``point``, ``confident`` or
            ``non_inferiority`` (see :mod:`auditor.policy.decisions`).
        action: what a violated limit is: ``fail`` or ``warn``.
    """

    limits: tuple[tuple[str, float], ...]
    mode: Mode = DEFAULT_MODE
    action: Action = "fail"

    @classmethod
    def from_policy(cls, spec: dict[str, Any]) -> MetricLimit:
        return cls(limits=tuple((k, float(spec[k])) for k in LIMIT_KEYS if k in spec),
                   mode=spec.get("mode", DEFAULT_MODE), action=spec.get("action", "fail"))


@dataclass(frozen=True, kw_only=True)
class LabelTarget:
    """A nominal label's promise: the target metric and the off-target ones (``labels.<label>``).

    Attributes:
        target: the metric the label promises to improve (``<capability>.<metric>``, a fraction).
        off_target: the metrics it should leave alone; OffTargetGain is the mean of their gains.
        capability: set when the policy maps the label to a capability (``medical: knowledge``):
            ``target`` is then that capability's first metric and ``off_target`` the metrics of the
            other capabilities the policy's labels promise; a run that leaves some of them out
            computes OffTargetGain over the ones it has. None for ``{target:, off_target:}``.
    """

    target: str
    off_target: tuple[str, ...] = ()
    capability: str | None = None


@dataclass(frozen=True, kw_only=True)
class DriftSettings:
    """The ``drift:`` section: DriftScore's limit (points), its decision mode and the outcomes of a
    label mismatch, an unknown label and a missing one."""

    max_drift_score_pts: float = 15.0
    on_label_mismatch: Action = "fail"
    on_unknown_label: OnFinding = "warn"
    on_missing_label: OnFinding = "warn"
    mode: Mode = DEFAULT_MODE


@dataclass(frozen=True, kw_only=True)
class StatisticsPolicy:
    """The ``statistics:`` section: interval level, resamples, seed, multiplicity adjustment
    (``bh`` or ``none``), the fewest items a rule decides on, what an inconclusive rule and a rule
    the base cannot show are, and the ``evidence`` mode's settings: ``alpha`` (the false-fail rate
    allowed over all rules and looks together, a fraction), ``looks`` (at most this many looks:
    the suite's items, then one per round of items), ``beta`` (the miss rate allowed for a
    regression of ``clear_harm`` × the limit, per look) and ``clear_harm``
    (:mod:`auditor.policy.decisions`), and ``spending``, the exponent ρ of the alpha-spending plan
    over the looks (:func:`auditor.policy.decisions.alpha_at_look`)."""

    confidence: float = 0.95
    n_resamples: int = N_RESAMPLES
    seed: int = 0
    multiplicity: str = "bh"
    min_items: int = 10
    on_inconclusive: OnFinding = "warn"
    on_not_measurable: OnFinding = "warn"
    alpha: float = 0.05
    looks: int = 4
    beta: float = 0.05
    clear_harm: float = 2.0
    spending: float = 2.0

    @property
    def settings(self) -> StatsSettings:
        """What :func:`auditor.analysis.compare_metrics` needs of it."""
        return StatsSettings(confidence=self.confidence, n_resamples=self.n_resamples, seed=self.seed)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """A validated policy (see ``policies/default.yaml`` for the meaning of each key).

    Attributes:
        path: the policy file.
        content: the validated YAML mapping (for results.json and its canonical hash only).
        metrics: metric → its limits against the base.
        baseline_metrics: metric → its limits against the previously approved adapter
            (``--baseline``): the ``baseline.metrics`` section, else ``metrics``.
        labels: nominal label → its target and off-target metrics.
        drift, statistics: the ``drift:`` and ``statistics:`` sections with their defaults.
        on_base_mismatch, on_no_effect, on_noise_floor: ``fail`` or ``warn``.
        warnings: what in the file is valid but likely meant otherwise (a ``*_pts`` limit between 0 and
            1, which reads as a fraction written where points are meant), one line each naming the file,
            key path and line.
    """

    path: str
    content: Mapping[str, Any]
    metrics: Mapping[str, MetricLimit] = field(default_factory=dict)
    baseline_metrics: Mapping[str, MetricLimit] = field(default_factory=dict)
    labels: Mapping[str, LabelTarget] = field(default_factory=dict)
    drift: DriftSettings = DriftSettings()
    statistics: StatisticsPolicy = StatisticsPolicy()
    on_base_mismatch: OnFinding = "warn"
    on_no_effect: OnFinding = "fail"
    on_noise_floor: OnFinding = "warn"
    warnings: tuple[str, ...] = ()

    def promise(self, label: str | None, metrics_in_run: Iterable[str]) -> LabelTarget | None:
        """What ``label`` promises in a run that measured ``metrics_in_run``: its :class:`LabelTarget`,
        a capability-mapped label's off-target metrics narrowed to the run's; None when the label is
        None or has no entry (no DriftScore), or when the run left out its target or an off-target
        metric (for a capability-mapped label: every off-target metric)."""
        mapping = self.labels.get(label) if label else None
        if mapping is None:
            return None
        in_run = set(metrics_in_run)
        if mapping.capability is not None:
            mapping = replace(mapping, off_target=tuple(m for m in mapping.off_target if m in in_run))
            if not mapping.off_target:
                return None
        return mapping if {mapping.target, *mapping.off_target} <= in_run else None

    def missing_for(self, label: str | None, metrics_in_run: Iterable[str]) -> list[str]:
        """The capabilities (``<capability>`` of ``<capability>.<metric>``, in the label's order) a run that
        measured ``metrics_in_run`` would need for ``label``'s DriftScore (:meth:`promise`); empty when it
        has them or the label has no entry."""
        mapping = self.labels.get(label) if label else None
        if mapping is None or self.promise(label, metrics_in_run) is not None:
            return []
        in_run = set(metrics_in_run)
        wanted = [mapping.target, *mapping.off_target]
        if mapping.capability is not None and any(m in in_run for m in mapping.off_target):
            wanted = [mapping.target]  # a capability-mapped label computes OffTargetGain over the ones it has
        return list(dict.fromkeys(m.split(".", 1)[0] for m in wanted if m not in in_run))

    @classmethod
    def from_content(cls, path: str, raw: dict[str, Any],
                     labels: Mapping[str, LabelTarget] | None = None) -> Policy:
        """The typed policy of a mapping that passed :data:`POLICY_SCHEMA` and the metric-name checks.

        ``labels``: the resolved label promises (:func:`resolve_labels`); None reads the mapping's
        ``{target:, off_target:}`` entries only (a label mapped to a capability needs the suite's
        metrics, which :func:`load_policy` has).
        """
        metrics = {m: MetricLimit.from_policy(s) for m, s in raw.get("metrics", {}).items()}
        baseline = (raw.get("baseline") or {}).get("metrics")
        if labels is None:
            labels = {k: LabelTarget(target=v["target"], off_target=tuple(v.get("off_target", [])))
                      for k, v in raw.get("labels", {}).items() if isinstance(v, dict)}
        return cls(
            path=path, content=raw, metrics=metrics,
            baseline_metrics=metrics if baseline is None else {m: MetricLimit.from_policy(s) for m, s in baseline.items()},
            labels=labels,
            drift=DriftSettings(**raw.get("drift", {})),
            statistics=StatisticsPolicy(**raw.get("statistics", {})),
            on_base_mismatch=raw.get("on_base_mismatch", "warn"), on_no_effect=raw.get("on_no_effect", "fail"),
            on_noise_floor=raw.get("on_noise_floor", "warn"))


def resolve_labels(raw_labels: Mapping[str, Any], first_metric: Mapping[str, str], known: set[str],
                   fault: Callable[[list[Any], str], NoReturn]) -> dict[str, LabelTarget]:
    """The promise of every label of a (validated) policy's ``labels:`` section.

    An entry is ``{target: <metric>, off_target: [<metric>, ...]}``, or one name, resolved in this
    order: another label of the policy (``chat: instruction`` promises what ``instruction`` does), a
    capability (``medical: knowledge``: TargetGain on that capability's first metric, OffTargetGain
    the mean over the other capabilities the policy's labels promise, one metric each: the first
    label's target for it), or a metric id (``medical: knowledge.acc``, the same with that
    metric).

    Args:
        raw_labels: the ``labels:`` mapping.
        first_metric: capability → its first metric (``knowledge`` → ``knowledge.acc``).
        known: every metric a policy may name.
        fault: ``fault(keypath, message)`` raises the :class:`AuditInputError` for a key.

    Raises:
        AuditInputError: (through ``fault``) a name that is no label, capability or metric, labels
            that name each other in a cycle, or a label mapped to a capability no other label leaves
            room beside (no off-target metric).
    """
    out: dict[str, LabelTarget] = {}

    def resolve(name: str, trail: tuple[str, ...]) -> tuple[str, tuple[str, ...] | None]:
        """(target metric, explicit off-target metrics or None for "the others")."""
        v = raw_labels[name]
        if isinstance(v, dict):
            return v["target"], tuple(v.get("off_target", []))
        if v in raw_labels and v != name:
            if v in trail:
                fault(["labels", name], f"labels name each other in a cycle: {' → '.join((*trail, name, v))}")
            return resolve(v, (*trail, name))
        if v in first_metric:
            return first_metric[v], None
        if v in known:
            return v, None
        fault(["labels", name], f"{v!r} is not another label of this policy, a capability or a metric; "
                                f"capabilities: {', '.join(sorted(first_metric))}")

    resolved = {name: resolve(name, ()) for name in raw_labels}
    promised: dict[str, str] = {}  # capability → the first label's target metric for it
    for target, _ in resolved.values():
        promised.setdefault(target.split(".", 1)[0], target)
    for name, (target, off) in resolved.items():
        if off is not None:
            out[name] = LabelTarget(target=target, off_target=off)
            continue
        cap = target.split(".", 1)[0]
        others = tuple(m for c, m in promised.items() if c != cap)
        if not others:
            fault(["labels", name], f"{name!r} promises {cap}, and no other label promises another capability: "
                                    "DriftScore needs off-target metrics (give {target:, off_target:})")
        out[name] = LabelTarget(target=target, off_target=others, capability=cap)
    return out


def load_policy(path: str | Path | None, metric_names: list[str], units: dict[str, str] | None = None) -> Policy:
    """Load and validate a policy (and the policies it ``extends:``).

    Args:
        path: policy YAML, a bundled policy's name (``release``: as ``extends:`` names it), or None for the
            default policy.
        metric_names: the metrics a policy may name (``<capability>.<metric>``:
            the suite's and the built-in presets'); any other name is refused.
        units: metric → unit (``fraction``, ``words``, ...); ``*_pts`` limits and
            DriftScore labels are refused on metrics that are not fractions. A capability's first
            metric (what a label mapped to that capability promises) is its first in ``units``
            when given, else in ``metric_names``: the order the scorer lists them.

    Raises:
        AuditInputError: unreadable or invalid YAML, a file over
            :data:`~auditor.policy.extends.MAX_POLICY_BYTES`, YAML aliases (refused: "billion laughs"),
            nesting deeper than :data:`auditor.util.safe_yaml.MAX_FLOW_DEPTH`, duplicate keys,
            non-finite numbers, schema violations, unknown metric names, a label that maps to no
            capability, metric or label, an ``extends:`` that names no bundled policy or file, a cycle
            of ``extends:`` or more than :data:`~auditor.policy.extends.MAX_EXTENDS_DEPTH` files in one
            chain; naming the file, key path and line (of the file in the chain that sets the key).
    """
    p = policy_path(path) if path is not None else DEFAULT_POLICY
    chain = extends_chain(p)
    raw: dict[str, Any] = {}
    for f in reversed(chain):
        raw = merge_policies(raw, f.raw)

    def fault(keypath: list[Any], msg: str) -> NoReturn:
        file, line = locate(chain, keypath)
        raise AuditInputError(file, f"{where(keypath, line)}: {msg}")

    errors = sorted(jsonschema.Draft202012Validator(POLICY_SCHEMA).iter_errors(raw), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        e = errors[0]
        keypath = list(e.absolute_path)
        msg = e.message
        if e.validator == "additionalProperties":
            keypath_extra = [k for k in (e.instance or {}) if k not in (e.schema.get("properties") or {})]
            if keypath_extra:
                keypath = keypath + [keypath_extra[0]]
                msg = f"unknown key {keypath_extra[0]!r}"
        fault(keypath, msg)
    known = set(metric_names)

    def check(name: str, keypath: list[Any]) -> None:
        if name not in known:
            fault(keypath, f"unknown metric {name!r}; known metrics: {', '.join(sorted(known))}")

    units = units or {}

    def check_points(name: str, keypath: list[Any], what: str) -> None:
        if units.get(name, "fraction") != "fraction":
            fault(keypath, f"{name} is measured in {units[name]}, not points: {what}")

    warnings: list[str] = []
    for section in (["metrics"], ["baseline", "metrics"]):
        limits = raw.get("metrics", {}) if section == ["metrics"] else (raw.get("baseline") or {}).get("metrics", {})
        for m, lim in limits.items():
            check(m, [*section, m])
            for key in ("max_drop_pts", "max_rise_pts"):
                if key in lim:
                    check_points(m, [*section, m, key], "use max_drop_pct / max_rise_pct (% of the base)")
                    if 0 < lim[key] < 1:
                        file, line = locate(chain, [*section, m, key])
                        warnings.append(f"{file}: {where([*section, m, key], line)}: {lim[key]:g} is less than "
                                        f"one point; *_pts limits are written in points (a limit of "
                                        f"{lim[key] * 100:g} points is written {lim[key] * 100:g}, not {lim[key]:g})")
    raw_labels = raw.get("labels", {})
    for label, spec in raw_labels.items():
        if isinstance(spec, dict):
            check(spec["target"], ["labels", label, "target"])
            for i, m in enumerate(spec.get("off_target", [])):
                check(m, ["labels", label, "off_target", i])
    first_metric: dict[str, str] = {}
    for m in (units or metric_names):
        first_metric.setdefault(m.split(".", 1)[0], m)
    labels = resolve_labels(raw_labels, first_metric, known, fault)
    for label, lt in labels.items():  # every target first: a label's own fault before its effect on the others
        check_points(lt.target, ["labels", label, *(["target"] if isinstance(raw_labels[label], dict) else [])],
                     "it cannot enter DriftScore")
    for label, lt in labels.items():
        for i, m in enumerate(lt.off_target):
            check_points(m, ["labels", label, *(["off_target", i] if isinstance(raw_labels[label], dict) else [])],
                         "it cannot enter DriftScore")
    return replace(Policy.from_content(str(p), raw, labels), warnings=tuple(warnings))
