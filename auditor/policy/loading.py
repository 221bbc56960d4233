"""A policy file → the typed :class:`Policy` the judge applies.

A policy is a YAML file validated with a JSON Schema (:data:`~auditor.policy.schema.POLICY_SCHEMA`);
faults are reported with the key path and line. Once valid it becomes typed records (limits per
metric, label targets, DriftScore and statistics settings); the mapping itself is kept as
``Policy.content`` only for results.json and its hash.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..analysis.compare import StatsSettings
from ..analysis.stats import N_RESAMPLES
from ..errors import AuditInputError
from ..records.vocab import Action, Mode, OnFinding
from ..util.safe_yaml import load_yaml_text
from .schema import LIMIT_KEYS, POLICY_SCHEMA

DEFAULT_POLICY = Path(__file__).resolve().parent.parent / "policies" / "default.yaml"
if not DEFAULT_POLICY.is_file():  # source checkout: policies/ lives at the repository root
    DEFAULT_POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"


@dataclass(frozen=True, kw_only=True)
class MetricLimit:
    """The limits on one metric (``metrics.<capability>.<metric>`` of the policy).

    Attributes:
        limits: ``(key, value)`` per limit key given, in :data:`~auditor.policy.schema.LIMIT_KEYS`
            order: ``max_drop_pts`` / ``max_rise_pts`` in points, ``max_drop_pct`` / ``max_rise_pct``
            in % of the base value.
        mode: ``point``, ``confident`` or ``non_inferiority`` (see :mod:`auditor.policy.rules`).
        action: what a violated limit is: ``fail`` or ``warn``.
    """

    limits: tuple[tuple[str, float], ...]
    mode: Mode = "point"
    action: Action = "fail"

    @classmethod
    def from_policy(cls, spec: dict[str, Any]) -> MetricLimit:
        return cls(limits=tuple((k, float(spec[k])) for k in LIMIT_KEYS if k in spec), mode=spec.get("mode", "point"),
                   action=spec.get("action", "fail"))


@dataclass(frozen=True, kw_only=True)
class LabelTarget:
    """A nominal label's promise: the target metric and the off-target ones (``labels.<label>``)."""

    target: str
    off_target: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DriftSettings:
    """The ``drift:`` section: DriftScore's limit (points), its decision mode and the outcomes of a
    label mismatch, an unknown label and a missing one."""

    max_drift_score_pts: float = 15.0
    on_label_mismatch: Action = "fail"
    on_unknown_label: OnFinding = "warn"
    on_missing_label: OnFinding = "warn"
    mode: Mode = "point"


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

    @classmethod
    def from_content(cls, path: str, raw: dict[str, Any]) -> Policy:
        """The typed policy of a mapping that passed :data:`POLICY_SCHEMA` and the metric-name checks."""
        metrics = {m: MetricLimit.from_policy(s) for m, s in raw.get("metrics", {}).items()}
        baseline = (raw.get("baseline") or {}).get("metrics")
        return cls(
            path=path, content=raw, metrics=metrics,
            baseline_metrics=metrics if baseline is None else {m: MetricLimit.from_policy(s) for m, s in baseline.items()},
            labels={k: LabelTarget(target=v["target"], off_target=tuple(v.get("off_target", [])))
                    for k, v in raw.get("labels", {}).items()},
            drift=DriftSettings(**raw.get("drift", {})),
            statistics=StatisticsPolicy(**raw.get("statistics", {})),
            on_base_mismatch=raw.get("on_base_mismatch", "warn"), on_no_effect=raw.get("on_no_effect", "fail"),
            on_noise_floor=raw.get("on_noise_floor", "warn"))


def _line_of(node: yaml.Node | None, path: list[Any]) -> int | None:
    """1-based line of the YAML node at ``path`` (deepest existing key)."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next(((k, v) for k, v in node.value if k.value == str(key)), None)
            if nxt is None:
                break
            line, node = nxt[0].start_mark.line + 1, nxt[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _non_finite(obj: Any, path: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """Key path of the first NaN/inf number (JSON Schema's "number" admits them)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        if (hit := _non_finite(v, (*path, k))) is not None:
            return hit
    return None


#: a policy is a few KB; PyYAML is pure Python, so a large file alone could stall the audit
MAX_POLICY_BYTES = 1 << 20


def load_policy(path: str | Path | None, metric_names: list[str], units: dict[str, str] | None = None) -> Policy:
    """Load and validate a policy.

    Args:
        path: policy YAML, or None for the default policy.
        metric_names: the metrics a policy may name (``<capability>.<metric>``:
            the suite's and the built-in presets'); any other name is refused.
        units: metric → unit (``fraction``, ``words``, ...); ``*_pts`` limits and
            DriftScore labels are refused on metrics that are not fractions.

    Raises:
        AuditInputError: unreadable or invalid YAML, a file over
            :data:`MAX_POLICY_BYTES`, YAML aliases (refused: "billion laughs"),
            nesting deeper than :data:`auditor.util.safe_yaml.MAX_FLOW_DEPTH`, duplicate keys,
            non-finite numbers, schema violations, unknown metric names,
            naming the key path and line.
    """
    p = Path(path) if path is not None else DEFAULT_POLICY
    if not p.is_file():
        raise AuditInputError(p, "policy file not found")
    if p.stat().st_size > MAX_POLICY_BYTES:
        raise AuditInputError(p, f"{p.stat().st_size:,} bytes; a policy is at most {MAX_POLICY_BYTES:,} bytes")
    text = p.read_text(encoding="utf-8", errors="replace")
    node, raw = load_yaml_text(p, text, "a policy")
    if not isinstance(raw, dict):
        raise AuditInputError(p, "a policy must be a YAML mapping")
    bad = _non_finite(raw)
    if bad is not None:
        line = _line_of(node, list(bad))
        raise AuditInputError(p, f"{'.'.join(map(str, bad)) or '(top level)'}{f' (line {line})' if line else ''}: "
                                 "limits must be finite numbers")
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
        where = ".".join(map(str, keypath)) or "(top level)"
        line = _line_of(node, keypath)
        raise AuditInputError(p, f"{where}{f' (line {line})' if line else ''}: {msg}")
    known = set(metric_names)

    def check(name: str, keypath: list[Any]) -> None:
        if name not in known:
            line = _line_of(node, keypath)
            raise AuditInputError(
                p, f"{'.'.join(map(str, keypath))}{f' (line {line})' if line else ''}: unknown metric {name!r}; "
                   f"known metrics: {', '.join(sorted(known))}")

    units = units or {}

    def check_points(name: str, keypath: list[Any], what: str) -> None:
        if units.get(name, "fraction") != "fraction":
            line = _line_of(node, keypath)
            raise AuditInputError(
                p, f"{'.'.join(map(str, keypath))}{f' (line {line})' if line else ''}: {name} is measured in "
                   f"{units[name]}, not points: {what}")

    for section in (["metrics"], ["baseline", "metrics"]):
        limits = raw.get("metrics", {}) if section == ["metrics"] else (raw.get("baseline") or {}).get("metrics", {})
        for m, lim in limits.items():
            check(m, [*section, m])
            for key in ("max_drop_pts", "max_rise_pts"):
                if key in lim:
                    check_points(m, [*section, m, key], "use max_drop_pct / max_rise_pct (% of the base)")
    for label, spec in raw.get("labels", {}).items():
        check(spec["target"], ["labels", label, "target"])
        check_points(spec["target"], ["labels", label, "target"], "it cannot enter DriftScore")
        for i, m in enumerate(spec.get("off_target", [])):
            check(m, ["labels", label, "off_target", i])
            check_points(m, ["labels", label, "off_target", i], "it cannot enter DriftScore")
    return Policy.from_content(str(p), raw)
