"""Report data the report tests share: a hand-written results.json mapping whose every text field holds hostile
markup, and its typed record."""

from __future__ import annotations

from auditor.results import AuditResult

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"> | **bold** `code`'


def _typed(r):
    """The typed record the reports render, from a results.json mapping."""
    return AuditResult.from_dict(r)


def _complete(r):
    """A results.json mapping as the writer writes it: every key of the records (their defaults where the
    hand-written mapping leaves one out)."""
    return AuditResult.from_dict(r).to_dict()


def _results():
    items = []
    for i, (b, a) in enumerate([(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]):
        items.append({"id": f"math/m{i}", "capability": "math", "group": "CAN", "prompt": f"q{i} {HOSTILE}",
                      "rendered_prompt": "r", "max_new_tokens": 8, "target": {"answer": 1},
                      "base": {"text": "base " + HOSTILE, "n_tokens": 3, "scores": {"numeric_match": b}, "detail": {}},
                      "adapter": {"text": "adapter " + HOSTILE, "n_tokens": 3, "scores": {"numeric_match": a},
                                  "detail": {}}})
    return _complete({
        "schema_version": 9,
        "verdict": {"verdict": "fail", "warnings": [HOSTILE],
                    "rules": [{"rule": "math.numeric_match: max drop", "rule_id": "math.numeric_match/max-drop",
                               "kind": "limit", "metric": "math.numeric_match", "outcome": "fail",
                               "reason": "r " + HOSTILE,
                               "value": 1, "limit": 0, "mode": "point", "decision": "fail", "ci": [-10.0, 70.0],
                               "p_value": None, "p_adjusted": None, "n_items": 3},
                              {"rule": "declared base matches", "rule_id": "declared-base-matches",
                               "kind": "declared_base", "outcome": "warn", "reason": "w", "value": None,
                               "limit": None, "mode": None, "decision": None, "ci": None, "p_value": None,
                               "p_adjusted": None, "n_items": None}]},
        "adapter": {"path": "x/" + HOSTILE, "weights_file": "w", "sha256": "0" * 64, "peft_type": "LORA", "r": 8,
                    "lora_alpha": 16, "target_modules": ["q_proj"], "ranks": {}, "n_tensors": 2, "size_bytes": 1,
                    "declared_base": HOSTILE, "nominal_label": None, "matched_modules": 1, "warnings": [],
                    "max_rank": 8},
        "base": {"name": "b", "path": "p", "source": "local", "content_hash": "f" * 64},
        "suite": {"name": "smoke", "version": 1, "path": "s", "item_ids": [i["id"] for i in items],
                  "items_sha256": "a" * 64},
        "policy": {"path": "policy.yaml", "content": {}, "sha256": "b" * 64},
        "comparisons": [{"metric": "math.numeric_match", "capability": "math", "group": "CAN", "n_items": 3,
                         "base": 2 / 3, "adapter": 2 / 3, "delta": 0.0, "delta_unit": "points", "rel_delta_pct": 0.0,
                         "higher_is_better": True, "unit": "fraction", "aggregate": "mean", "n_clusters": 3,
                         "confidence": 0.95, "ci_low": -33.3, "ci_high": 33.3, "rel_ci_pct": [-50.0, 50.0],
                         "test": "mcnemar_exact", "p_value": 1.0, "p_adjusted": 1.0,
                         "discordant": {"base_only": 1, "adapter_only": 1}}],
        "drift": {"label": HOSTILE, "label_source": "--label", "target_metric": None, "off_target_metrics": [],
                  "target_gain_pts": None, "off_target_gain_pts": None, "drift_score_pts": None, "mismatch": False,
                  "ci_low_pts": None, "ci_high_pts": None, "confidence": 0.95},
        "items": items,
        "noise_floor": None,
        "baseline": None,
        "statistics": {"confidence": 0.95, "n_resamples": 100, "seed": 0, "multiplicity": "bh", "min_items": 1},
        "run": {"backend": "hf", "dtype": "float32", "batch_size": 4, "limit": None, "decoding": "greedy",
                "new_tokens": {}, "timings": {"load_s": 1, "generate_s": 2, "total_s": 3}, "versions": {"python": "3"},
                "auditor_version": "0", "created_at": "now", "capabilities": ["math"]},
    })
