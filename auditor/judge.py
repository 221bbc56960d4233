"""Stage 6 — judge: policy rules → verdict.

A policy is a YAML file validated with a JSON Schema (``POLICY_SCHEMA``);
faults are reported with the key path and line. Each rule yields a
:class:`~auditor.records.RuleOutcome` (``pass`` / ``warn`` / ``fail``) with
its reason; the verdict is ``fail`` if any rule fails, else ``pass``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import AuditInputError
from .records import AdapterInfo, DriftResult, MetricComparison, RuleOutcome, Verdict

DEFAULT_POLICY = Path(__file__).resolve().parent / "policies" / "default.yaml"
if not DEFAULT_POLICY.is_file():  # source checkout: policies/ lives at the repository root
    DEFAULT_POLICY = Path(__file__).resolve().parent.parent / "policies" / "default.yaml"

_ACTION = {"enum": ["fail", "warn"]}
_PTS = {"type": "number", "minimum": 0, "maximum": 100}
POLICY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version"],
    "properties": {
        "version": {"const": 1},
        "metrics": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "minProperties": 1,
                "properties": {"max_drop_pts": _PTS, "max_rise_pts": _PTS},
            },
        },
        "labels": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["target"],
                "properties": {
                    "target": {"type": "string"},
                    "off_target": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                },
            },
        },
        "drift": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_drift_score_pts": {"type": "number", "minimum": 0, "maximum": 200},
                "on_label_mismatch": _ACTION,
                "on_unknown_label": _ACTION,
                "on_missing_label": _ACTION,
            },
        },
        "on_base_mismatch": _ACTION,
        "on_no_effect": _ACTION,
    },
}


@dataclass(frozen=True)
class Policy:
    """A validated policy (see ``policies/default.yaml`` for the meaning of each key)."""

    path: str
    raw: dict[str, Any]

    @property
    def metric_limits(self) -> dict[str, dict[str, float]]:
        return self.raw.get("metrics", {})

    @property
    def labels(self) -> dict[str, dict[str, Any]]:
        return self.raw.get("labels", {})

    @property
    def drift(self) -> dict[str, Any]:
        d = {"max_drift_score_pts": 15.0, "on_label_mismatch": "fail", "on_unknown_label": "warn",
             "on_missing_label": "warn"}
        d.update(self.raw.get("drift", {}))
        return d

    @property
    def on_base_mismatch(self) -> str:
        return self.raw.get("on_base_mismatch", "warn")


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


def _duplicate_key(node: yaml.Node | None) -> tuple[str, int] | None:
    """First key that appears twice in one mapping (YAML keeps the last silently)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.MappingNode):
            seen: set[str] = set()
            for k, v in n.value:
                if k.value in seen:
                    return str(k.value), k.start_mark.line + 1
                seen.add(k.value)
                stack.append(v)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return None


def _non_finite(obj: Any, path: str = "") -> str | None:
    """Key path of the first NaN/inf number (JSON Schema's "number" admits them)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path or "(top level)"
    if isinstance(obj, dict):
        for k, v in obj.items():
            if (hit := _non_finite(v, f"{path}.{k}" if path else str(k))):
                return hit
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            if (hit := _non_finite(v, f"{path}.{i}")):
                return hit
    return None


def load_policy(path: str | Path | None, metric_names: list[str]) -> Policy:
    """Load and validate a policy.

    Args:
        path: policy YAML, or None for the default policy.
        metric_names: the suite's metrics (``<capability>.<metric>``); every
            metric the policy names must be one of them.

    Raises:
        AuditInputError: unreadable or invalid YAML, YAML aliases (refused:
            "billion laughs"), schema violations, unknown metric names,
            naming the key path and line.
    """
    p = Path(path) if path is not None else DEFAULT_POLICY
    if not p.is_file():
        raise AuditInputError(p, "policy file not found")
    text = p.read_text(encoding="utf-8", errors="replace")
    try:
        if any(isinstance(ev, yaml.AliasEvent) for ev in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise AuditInputError(p, "YAML aliases (*name) are not allowed in a policy")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except RecursionError:
        raise AuditInputError(p, "YAML nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise AuditInputError(p, f"invalid YAML{f' at line {mark.line + 1}' if mark else ''}") from None
    if not isinstance(raw, dict):
        raise AuditInputError(p, "a policy must be a YAML mapping")
    dup = _duplicate_key(node)
    if dup:
        raise AuditInputError(p, f"line {dup[1]}: duplicate key {dup[0]!r}")
    bad = _non_finite(raw)
    if bad:
        raise AuditInputError(p, f"{bad}: limits must be finite numbers")
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
                   f"the suite has {sorted(known)}")

    for m in raw.get("metrics", {}):
        check(m, ["metrics", m])
    for label, spec in raw.get("labels", {}).items():
        check(spec["target"], ["labels", label, "target"])
        for i, m in enumerate(spec.get("off_target", [])):
            check(m, ["labels", label, "off_target", i])
    return Policy(str(p), raw)


def judge(policy: Policy, comparisons: list[MetricComparison], drift: DriftResult, adapter: AdapterInfo) -> Verdict:
    """Apply the policy to one adapter's comparisons.

    Returns:
        Verdict with one RuleOutcome per rule evaluated; ``fail`` if any fails.
    """
    by = {c.metric: c for c in comparisons}
    rules: list[RuleOutcome] = []
    for metric, lim in policy.metric_limits.items():
        if metric not in by:
            rules.append(RuleOutcome(f"{metric}: limits", "not_run",
                                     f"capability {metric.split('.')[0]} was not part of this run"))
            continue
        c = by[metric]
        # (policy key, rule name, movement in the limited direction, verb)
        verb = "rose" if c.delta_pts > 0 else "dropped" if c.delta_pts < 0 else "changed"
        for key, kind, moved in (("max_drop_pts", "drop", -c.delta_pts), ("max_rise_pts", "rise", c.delta_pts)):
            if key not in lim:
                continue
            ok = moved <= lim[key] + 1e-9
            rules.append(RuleOutcome(
                f"{metric}: max {kind}", "pass" if ok else "fail",
                f"{metric} {verb} by {abs(c.delta_pts):.1f} points "
                f"({100 * c.base:.1f} → {100 * c.adapter:.1f}); limit {lim[key]:g} points {kind}",
                value=round(moved, 6), limit=lim[key]))

    d = policy.drift
    if drift.label is None:
        rules.append(RuleOutcome("nominal label: present", d["on_missing_label"],
                                 "no nominal label given (--label) or found in the adapter's model card; "
                                 "DriftScore not computed"))
    elif drift.label in policy.labels and drift.target_metric is None:
        rules.append(RuleOutcome("nominal label: DriftScore", "not_run",
                                 f"label {drift.label!r}: its target/off-target capabilities were not part of this run"))
    elif drift.target_metric is None:
        rules.append(RuleOutcome("nominal label: known to policy", d["on_unknown_label"],
                                 f"label {drift.label!r} has no target metric in the policy; DriftScore not computed"))
    else:
        assert drift.drift_score_pts is not None
        rules.append(RuleOutcome(
            "nominal label: DriftScore", d["on_label_mismatch"] if drift.mismatch else "pass",
            f"label {drift.label!r} promises {drift.target_metric}: TargetGain {drift.target_gain_pts:+.1f}, "
            f"OffTargetGain {drift.off_target_gain_pts:+.1f}, DriftScore {drift.drift_score_pts:+.1f} points "
            f"(limit {d['max_drift_score_pts']:g})" + (" — label mismatch" if drift.mismatch else ""),
            value=round(drift.drift_score_pts, 6), limit=d["max_drift_score_pts"]))

    if adapter.no_effect:
        rules.append(RuleOutcome("adapter has an effect", policy.raw.get("on_no_effect", "fail"),
                                 "every lora_B tensor is zero: the adapter cannot change the base model"))
    for w in adapter.warnings:
        if "declares base" in w:
            rules.append(RuleOutcome("declared base matches", policy.on_base_mismatch, w))
    warnings = list(adapter.warnings)
    verdict = "fail" if any(r.outcome == "fail" for r in rules) else "pass"
    return Verdict(verdict, rules, warnings)
