"""The policy file's JSON Schema (draft 2020-12): what keys a policy may have and their ranges.

:data:`POLICY_SCHEMA` validates a policy once the policies it ``extends:`` are merged under it
(:func:`auditor.policy.extends.merge_policies`); ``extends`` itself is checked against
:data:`EXTENDS_SCHEMA` in each file of the chain.
"""

from __future__ import annotations

from typing import Any

_ACTION = {"enum": ["fail", "warn"]}


_PTS = {"type": "number", "minimum": 0, "maximum": 100}


_PCT = {"type": "number", "minimum": 0, "maximum": 10000}


MODES = ("evidence", "point", "confident", "non_inferiority")


LIMIT_KEYS = ("max_drop_pts", "max_rise_pts", "max_drop_pct", "max_rise_pct")

#: ``extends:``: the policy this one is merged over, a bundled policy's name (``default``,
#: ``release``) or a file path relative to this file
EXTENDS_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 1000}

POLICY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version"],
    "properties": {
        "version": {"const": 1},
        "extends": EXTENDS_SCHEMA,
        "metrics": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "anyOf": [{"required": [k]} for k in LIMIT_KEYS],
                "properties": {"max_drop_pts": _PTS, "max_rise_pts": _PTS, "max_drop_pct": _PCT,
                               "max_rise_pct": _PCT, "mode": {"enum": list(MODES)}, "action": _ACTION},
            },
        },
        "statistics": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "confidence": {"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 1},
                "n_resamples": {"type": "integer", "minimum": 200, "maximum": 100000},
                "seed": {"type": "integer", "minimum": 0},
                "multiplicity": {"enum": ["bh", "none"]},
                "min_items": {"type": "integer", "minimum": 1},
                "on_inconclusive": {"enum": ["pass", "warn", "fail"]},
                "on_not_measurable": {"enum": ["pass", "warn", "fail"]},
                "alpha": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
                "looks": {"type": "integer", "minimum": 1, "maximum": 10},
                "beta": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
                "clear_harm": {"type": "number", "minimum": 1, "maximum": 10},
                "spending": {"type": "number", "minimum": 0.5, "maximum": 5},
            },
        },
        "on_noise_floor": _ACTION,
        "labels": {
            "type": "object",
            # a label → {target, off_target}, or one name: another label, a capability or a metric
            # (object keywords apply to a mapping only, minLength to a name only)
            "additionalProperties": {
                "type": ["object", "string"],
                "minLength": 1,
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
                "mode": {"enum": list(MODES)},
            },
        },
        "on_base_mismatch": _ACTION,
        "on_no_effect": _ACTION,
        "baseline": {
            "type": "object",
            "additionalProperties": False,
            "required": ["metrics"],
            "properties": {"metrics": {"$ref": "#/properties/metrics"}},
        },
    },
}
