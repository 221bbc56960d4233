"""The report of a training run's audit (``audit RUN_DIR``): run.json, and the trajectory charts of index.html.

run.json (:class:`~auditor.records.training_run.RunSummary`) lists every selected checkpoint in step order with its
verdict, DriftScore, each metric's Δ and its 95% interval and its failing rules, then the last passing checkpoint
and the first failing one. It is checked against ``auditor/data/schemas/run.schema.json`` before it is written. The
charts are geometry only (numbers and the metric ids, escaped by the template): one inline SVG per metric of Δ
(points, or the metric's unit) with its interval over ``global_step``, the policy's limit drawn where it has one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ..inspect.checkpoints import Checkpoint
from ..records import MetricComparison, RuleOutcome, to_plain
from ..records.training_run import (
    RUN_SCHEMA_VERSION,
    CheckpointOutcome,
    FailingRule,
    MetricDelta,
    RunSummary,
)
from ..results import AuditResult
from .results_file import RUN_SCHEMA_PATH, first_schema_error

#: the chart's size (px): plot area inside the margins
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 320, 150, 44, 10, 12, 26


def _delta(c: MetricComparison) -> MetricDelta:
    return MetricDelta(metric=c.metric, capability=c.capability, group=c.group, delta=c.delta, ci_low=c.ci_low,
                       ci_high=c.ci_high, delta_unit=c.delta_unit, higher_is_better=c.higher_is_better)


def _failing(rules: Sequence[RuleOutcome]) -> tuple[FailingRule, ...]:
    return tuple(FailingRule(rule=r.rule, rule_id=r.rule_id, reason=r.reason) for r in rules if r.outcome == "fail")


def run_summary(run_dir: str, selection: str, checkpoints: Sequence[Checkpoint], results: Sequence[AuditResult],
                reports: Sequence[str | None]) -> RunSummary:
    """The run's record: ``results`` are the audits of the first ``len(results)`` of ``checkpoints`` (step order;
    fewer when ``--stop-at-first-fail`` stopped), ``reports`` each checkpoint's report folder relative to run.json."""
    rows = []
    for k, ck in enumerate(checkpoints):
        r = results[k] if k < len(results) else None
        rows.append(CheckpointOutcome(
            step=ck.step, step_source=ck.step_source, path=str(ck.path), report=reports[k] if r is not None else None,
            verdict="not_audited" if r is None else r.verdict.verdict,
            drift_score_pts=None if r is None else r.drift.drift_score_pts,
            # a metric no item of this checkpoint's audit scored (NaN) has no point on the chart
            deltas=() if r is None else tuple(_delta(c) for c in r.comparisons if not math.isnan(c.delta)),
            failing=() if r is None else _failing(r.verdict.rules)))
    passing = [c for c in rows if c.verdict == "pass"]
    failing = [c for c in rows if c.verdict == "fail"]
    first = results[0] if results else None
    return RunSummary(schema_version=RUN_SCHEMA_VERSION, run_dir=run_dir, selection=selection,
                      base=first.base.name if first else "", suite=first.suite.name if first else "",
                      policy=first.policy.path if first else "", stopped_early=len(results) < len(checkpoints),
                      checkpoints=tuple(rows), last_passing=passing[-1].step if passing else None,
                      first_failing=failing[0].step if failing else None,
                      first_failing_rules=failing[0].failing if failing else ())


def run_json(summary: RunSummary) -> str:
    """run.json's text, checked against the shipped schema.

    Raises:
        ValueError: the record does not match run.schema.json (a bug: the schema is generated from the records).
    """
    data = to_plain(summary)
    error = first_schema_error(RUN_SCHEMA_PATH, data)
    if error:
        raise ValueError(f"run.json does not match run.schema.json v{RUN_SCHEMA_VERSION} at {error}")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def limit_lines(results: Sequence[AuditResult]) -> dict[str, float]:
    """The policy's limit per metric as a Δ (points or the metric's unit: ``+limit`` for a ``max rise``, ``-limit``
    for a ``max drop``; relative ``*_pct`` limits are not drawn), from the audits' limit rules."""
    out: dict[str, float] = {}
    for r in (rule for res in results[:1] for rule in res.verdict.rules):
        if r.kind == "limit" and r.metric and r.limit is not None:
            if r.rule_id.endswith("/max-rise"):
                out[r.metric] = float(r.limit)
            elif r.rule_id.endswith("/max-drop"):
                out[r.metric] = -float(r.limit)
    return out


def _ticks(lo: float, hi: float) -> list[float]:
    span = hi - lo
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000, 1e9) if span / s <= 5)
    first = int(lo // step) * step
    return [first + k * step for k in range(int((hi - first) // step) + 1) if first + k * step >= lo - 1e-9]


def trajectory_charts(summary: RunSummary, limits: dict[str, float]) -> list[dict[str, Any]]:
    """One chart per metric, in the order of the first audited checkpoint's comparisons: ``metric``, ``unit``,
    ``points`` (per audited checkpoint: ``step``, ``x``, ``y``, ``ylo``, ``yhi`` in px, ``delta``, ``ci``,
    ``verdict``), ``zero`` (y of Δ = 0), ``limit_y`` (y of the policy's limit, or None), the axis ``ticks``
    (``y``, ``label``) and ``steps`` (``x``, ``label``), the width and height (px)."""
    audited = [c for c in summary.checkpoints if c.verdict != "not_audited"]
    if not audited:
        return []
    steps = [c.step for c in summary.checkpoints]
    s_lo, s_hi = min(steps), max(steps)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(step: int) -> float:
        return round(LEFT + (plot_w / 2 if s_hi == s_lo else (step - s_lo) / (s_hi - s_lo) * plot_w), 1)

    charts = []
    for d0 in audited[0].deltas:
        series = [(c, next((d for d in c.deltas if d.metric == d0.metric), None)) for c in audited]
        values = [v for _, d in series if d is not None for v in (d.delta, d.ci_low, d.ci_high) if v is not None]
        limit = limits.get(d0.metric)
        lo = min([0.0, *values, *([limit] if limit is not None else [])])
        hi = max([0.0, *values, *([limit] if limit is not None else [])])
        if hi - lo < 1e-9:
            lo, hi = lo - 1, hi + 1
        pad = (hi - lo) * 0.08
        lo, hi = lo - pad, hi + pad

        def y_of(v: float, lo: float = lo, hi: float = hi) -> float:
            return round(TOP + (hi - v) / (hi - lo) * plot_h, 1)

        points = [{"step": c.step, "x": x_of(c.step), "y": y_of(d.delta),
                   "ylo": y_of(d.ci_low if d.ci_low is not None else d.delta),
                   "yhi": y_of(d.ci_high if d.ci_high is not None else d.delta),
                   "delta": f"{d.delta:+.1f}",
                   "ci": "—" if d.ci_low is None or d.ci_high is None else f"[{d.ci_low:+.1f}, {d.ci_high:+.1f}]",
                   "verdict": c.verdict} for c, d in series if d is not None]
        charts.append({"metric": d0.metric, "group": d0.group, "unit": d0.delta_unit, "points": points,
                       "path": " ".join(f"{p['x']},{p['y']}" for p in points), "zero": y_of(0.0),
                       "limit_y": None if limit is None else y_of(limit), "limit": limit,
                       "ticks": [{"y": y_of(t), "label": f"{t:+g}"} for t in _ticks(lo, hi)],
                       "steps": [{"x": x_of(s), "label": str(s)} for s in steps],
                       "width": WIDTH, "height": HEIGHT, "left": LEFT, "right": WIDTH - RIGHT,
                       "bottom": HEIGHT - BOTTOM})
    return charts

