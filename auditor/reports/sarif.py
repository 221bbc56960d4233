"""results.sarif: SARIF 2.1.0 (OASIS), each failing or warning policy rule as a result located on
the adapter's weights file, so code-scanning views list the gate's findings on the adapter PR.

A result's ``ruleId`` is the rule's stable :attr:`~auditor.records.RuleOutcome.rule_id`
(``math.numeric_match/max-drop``), the same across runs, so code scanning tracks one alert per rule."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..results import AuditResult
from ..util.text import strip_controls

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_PROPS = ("value", "limit", "mode", "decision", "ci", "p_value", "p_adjusted", "n_items")


def _artifact_uri(path: str) -> str:
    p = Path(path)
    return p.as_uri() if p.is_absolute() else p.as_posix()


def render_sarif(result: AuditResult) -> str:
    """SARIF 2.1.0 log: one ``result`` per failing (level ``error``) or warning (level ``warning``)
    policy rule; every policy rule that ran is a ``reportingDescriptor`` of the driver."""
    rules = [r for r in result.verdict.rules if r.outcome != "not_run"]
    ids: list[str] = []
    for r in rules:  # the rule's stable id (unique within a verdict; a suffix guards results.json edited by hand)
        rid, k = r.rule_id or "rule", 2
        while rid in ids:
            rid, k = f"{r.rule_id or 'rule'}-{k}", k + 1
        ids.append(rid)
    a = result.adapter
    weights = a.weights_file or a.path
    location = {"physicalLocation": {"artifactLocation": {"uri": _artifact_uri(strip_controls(weights))}}}
    sarif_results = []
    for idx, (rid, r) in enumerate(zip(ids, rules)):
        if r.outcome not in ("fail", "warn"):
            continue
        props = {k: getattr(r, k) for k in _PROPS if getattr(r, k) is not None}
        sarif_results.append({
            "ruleId": rid, "ruleIndex": idx, "level": "error" if r.outcome == "fail" else "warning",
            "message": {"text": strip_controls(f"{r.rule}: {r.reason}")},
            "locations": [location],
            "partialFingerprints": {"adapterRule/v1": hashlib.sha256(f"{a.sha256}|{rid}".encode()).hexdigest()},
            "properties": props,
        })
    log = {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "adapter-auditor", "version": str(result.run.auditor_version),
                "rules": [{"id": rid, "name": strip_controls(str(r.rule)),
                           "shortDescription": {"text": strip_controls(str(r.rule))},
                           "defaultConfiguration": {"level": "error" if r.outcome == "fail" else "warning"
                                                    if r.outcome == "warn" else "note"}}
                          for rid, r in zip(ids, rules)]}},
            "artifacts": [{"location": location["physicalLocation"]["artifactLocation"],
                           "hashes": {"sha-256": a.sha256}}],
            "invocations": [{"executionSuccessful": True}],
            "results": sarif_results,
            "properties": {"verdict": result.verdict.verdict, "base": strip_controls(str(result.base.name)),
                           "nominalLabel": None if result.drift.label is None
                           else strip_controls(str(result.drift.label))},
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
