"""The view model every output shares: display cells, group cards, chart geometry, item rows.

The HTML report, the Markdown summary and the terminal table read one audit's
:class:`~auditor.results.AuditResult` through these functions, so a number is formatted the same
way wherever it is shown. Fraction metrics are shown in points (0–100), count metrics in their unit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..records import (
    AgreementWithBase,
    Budget,
    DriftResult,
    MetricComparison,
    RuleOutcome,
    TokenizerFiles,
    VocabResize,
)
from ..records.training_run import RunSummary
from ..results import AuditResult, ItemRecord
from ..scorers import SCORERS
from ..util.text import strip_controls

GROUP_TITLES = {"CAN": "CAN — knowledge and skills", "WILL": "WILL — default behaviour",
                "HOW": "HOW — protocol execution", "COND": "COND — conditional behaviour"}


def _num(x: Any, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _single_cluster(c: MetricComparison) -> bool:
    """Items that are variants of one question: a bootstrap interval of zero width that means nothing."""
    return 0 < c.n_clusters < 2


def comparison_cells(c: MetricComparison) -> dict[str, str]:
    """Display strings for one comparison row (HTML, Markdown and terminal share them).

    Fraction metrics are shown in points (0–100), count metrics in their unit.
    Keys: base, adapter, delta, ci, rel, p, q, test, discordant, unit.
    """
    frac = c.unit == "fraction"
    scale = 100.0 if frac else 1.0
    ci = "—"  # also for a single cluster, whose bootstrap interval has zero width and means nothing
    if c.ci_low is not None and c.ci_high is not None and not _single_cluster(c):
        ci = f"[{c.ci_low + 0.0:+.1f}, {c.ci_high + 0.0:+.1f}]"
    disc = c.discordant or {}
    return {
        "base": f"{scale * c.base:.1f}",
        "adapter": f"{scale * c.adapter:.1f}",
        "delta": f"{c.delta + 0.0:+.1f}",
        "unit": "points" if frac else c.unit,
        "ci": ci,
        "rel": "—" if c.rel_delta_pct is None else f"{c.rel_delta_pct:+.0f}%",
        "p": _num(c.p_value, ".3g"),
        "q": _num(c.p_adjusted, ".3g"),
        "test": c.test or "—",
        "discordant": f"{disc['base_only']} / {disc['adapter_only']}" if disc else "—",
    }


def share_pct(share: float) -> str:
    """A share (fraction in [0, 1]) in whole percent, never rounded to 0% or 100% when it is neither."""
    pct = 100.0 * share
    if 0.0 < pct < 0.5:
        return "<1%"
    if 99.5 <= pct < 100.0:
        return ">99%"
    return f"{pct:.0f}%"


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``, ..."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def same_as_base_cells(comparisons: Sequence[MetricComparison], agreement: AgreementWithBase) -> list[str]:
    """The capability table's "same as base" column, one cell per comparison row: on a capability's first row the
    share of its generated answers that are exactly the base's (percent; ``—`` for a capability with no generated
    answer, multiple choice scored by log-likelihood), empty on its further rows."""
    cells, seen = [], set()
    for c in comparisons:
        if c.capability in seen:
            cells.append("")
            continue
        seen.add(c.capability)
        a = agreement.capabilities.get(c.capability)
        cells.append("—" if a is None or a.identical is None else share_pct(a.identical))
    return cells


def agreement_sentence(agreement: AgreementWithBase) -> str | None:
    """One sentence on how many of the adapter's generated answers differ from the base's and where the first
    differing word falls on average; None when the audit generated no answer (multiple choice only)."""
    a = agreement.overall
    if a.identical is None or not a.n_items:
        return None
    answers = f"generated answer{'s' if a.n_items != 1 else ''}"
    if a.first_difference_word is None:
        return f"The adapter changed none of its {a.n_items} {answers}: each is the base's, word for word."
    word = ordinal(int(a.first_difference_word + 0.5))  # the mean position, rounded half up
    return (f"The adapter changed {share_pct(1.0 - a.identical)} of its {a.n_items} {answers} at all (the first differing "
            f"word: {word} on average).")


def direction(c: MetricComparison) -> str:
    """'worse', 'better', 'moved' or 'unclear' for a comparison: worse/better only
    when its whole confidence interval of Δ lies on that side of zero; 'moved'
    for a count metric (words, tokens) whose interval excludes zero."""
    lo, hi = c.ci_low, c.ci_high
    if lo is None or hi is None or _single_cluster(c):  # one cluster: no interval to speak of
        return "unclear"
    if c.unit != "fraction" and (hi < 0 or lo > 0):
        return "moved"  # a length in words or tokens moved: neither better nor worse by itself
    if hi < 0 or lo > 0:
        up = lo > 0
        return "better" if up == bool(c.higher_is_better) else "worse"
    return "unclear"


def group_summary(result: AuditResult) -> list[dict[str, Any]]:
    """One card per capability group (CAN, WILL, HOW, COND) that ran.

    Each card: ``group``, ``title``, ``capabilities`` (names), ``n_metrics``,
    ``worse`` / ``better`` (metrics whose confidence interval of Δ lies wholly on
    that side of zero), ``moved`` (count metrics, e.g. words, that moved), ``rules`` (outcome → count over the policy rules on this
    group's metrics) and ``status`` (fail, warn or pass: the worst rule outcome).
    """
    group_of = {it.capability: it.group for it in result.items}
    for c in result.comparisons:
        group_of.setdefault(c.capability, c.group)
    cards = []
    for g in [*GROUP_TITLES, *sorted(set(group_of.values()) - set(GROUP_TITLES))]:
        caps = sorted(c for c, gg in group_of.items() if gg == g)
        if not caps:
            continue
        comps = [c for c in result.comparisons if c.group == g]
        rules = [r for r in result.verdict.rules if r.capability in caps]
        counts = {o: sum(r.outcome == o for r in rules) for o in ("fail", "warn", "pass", "not_run")}
        status = "fail" if counts["fail"] else "warn" if counts["warn"] else "pass"
        cards.append({"group": g, "title": GROUP_TITLES.get(g, g), "capabilities": caps, "n_metrics": len(comps),
                      "worse": [c.metric for c in comps if direction(c) == "worse"],
                      "better": [c.metric for c in comps if direction(c) == "better"],
                      "moved": [f"{c.metric} ({c.delta + 0.0:+.1f} {c.unit})" for c in comps
                                if direction(c) == "moved"],
                      "rules": counts, "status": status})
    return cards


def _nice_limit(x: float) -> float:
    for step in (5, 10, 20, 25, 50, 100):
        if x <= step:
            return float(step)
    return float(100 * -(-x // 100))


def chart_groups(result: AuditResult, width: int = 300) -> list[dict[str, Any]]:
    """Geometry of the per-capability chart (inline SVG), one panel per group.

    Only fraction metrics are drawn (points, 0–100). Each row has ``metric``,
    ``y``, ``bx`` / ``ax`` (x of base and adapter on the 0–100 panel, px),
    ``dx`` / ``lox`` / ``hix`` (x of Δ and its CI whisker on the ±``span``
    points panel, px), ``direction`` and the display strings of
    :func:`comparison_cells`. Count metrics (words, tokens) stay in the table.
    """
    rows_by_group: dict[str, list[dict[str, Any]]] = {}
    fr = [c for c in result.comparisons if c.unit == "fraction"]
    ext = [abs(v) for c in fr for v in (c.delta, c.ci_low, c.ci_high) if v is not None]
    span = _nice_limit(max(ext, default=0.0))
    row_h = 22
    for c in fr:
        rows = rows_by_group.setdefault(c.group, [])
        lo = c.ci_low if c.ci_low is not None else c.delta
        hi = c.ci_high if c.ci_high is not None else c.delta
        to_d = lambda v: round(width / 2 + (v / span) * (width / 2 - 4), 1)  # noqa: E731
        rows.append({"metric": c.metric, "y": 18 + len(rows) * row_h,
                     "bx": round(4 + c.base * (width - 8), 1), "ax": round(4 + c.adapter * (width - 8), 1),
                     "dx": to_d(c.delta), "lox": to_d(lo), "hix": to_d(hi),
                     "direction": direction(c), "cells": comparison_cells(c)})
    out = []
    for g in [*GROUP_TITLES, *sorted(set(rows_by_group) - set(GROUP_TITLES))]:
        if g in rows_by_group:
            rows = rows_by_group[g]
            out.append({"group": g, "title": GROUP_TITLES.get(g, g), "rows": rows,
                        "height": 26 + len(rows) * row_h, "span": span, "width": width})
    return out


def reason(detail: Any, scorer: str | None = None) -> str:
    """The scorer's detail as one readable line: the scorer's own ``explain`` where it has one (IFEval:
    each instruction with ✓/✗ strict and loose), else the detail's keys and values."""
    if not isinstance(detail, dict) or not detail:
        return ""
    explain = getattr(SCORERS.get(scorer or ""), "explain", None)
    if explain is not None and (text := explain(detail)):
        return text
    parts = []
    for k, v in detail.items():
        parts.append(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}")
    text = "; ".join(parts)
    return text if len(text) <= 600 else text[:599] + "…"


def _fmt_scores(scores: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, (int, float)) else f"{k} —" for k, v in scores.items())


def _conversation(item: ItemRecord) -> str:
    """The item's prompt; for a multi-turn item every turn, role first (the
    instruction of turn 1 is what a multi-turn probe checks in turn 3)."""
    msgs: Sequence[Mapping[str, str]] = item.messages or ()
    if len(msgs) <= 1:
        return item.prompt
    return "\n\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in msgs)


def primary_metrics(result: AuditResult) -> dict[str, tuple[str, bool]]:
    """Capability → (its first metric's per-item score name, higher is better)."""
    primary: dict[str, tuple[str, bool]] = {}
    for c in result.comparisons:
        primary.setdefault(c.capability, (c.metric.split(".", 1)[1], c.higher_is_better))
    return primary


def item_rows(result: AuditResult, primary: dict[str, tuple[str, bool]] | None = None) -> list[dict[str, Any]]:
    """The per-item browser's rows, regressions first (largest loss first), then
    improvements, then unchanged and unscored items, each by id.

    Each row: ``id``, ``capability``, ``group``, ``outcome`` (regression,
    improvement, same or unscored, on the capability's first metric),
    ``metric``, ``base_value`` / ``adapter_value`` (per-item scores as
    fractions or the metric's unit; None when unscored), ``loss``, ``changed``
    (the outputs differ), ``prompt``, ``base_text`` / ``adapter_text``,
    ``base_scores`` / ``adapter_scores`` and ``base_reason`` /
    ``adapter_reason`` (the scorer's detail). All text is raw; the template
    and the browser script escape it. ``primary``: :func:`primary_metrics` of
    ``result``, when the caller has it already.
    """
    primary = primary_metrics(result) if primary is None else primary
    scorer_of = result.suite.scorers
    order = {"regression": 0, "improvement": 1, "same": 2, "unscored": 3}
    rows: list[dict[str, Any]] = []
    for it in result.items:
        metric, hib = primary.get(it.capability, ("", True))
        assert it.base is not None and it.adapter is not None  # every item of a results.json has both answers
        b, a = it.base.scores.get(metric), it.adapter.scores.get(metric)
        if b is None or a is None:
            outcome, loss = "unscored", 0.0
        else:
            loss = (b - a) if hib else (a - b)
            outcome = "regression" if loss > 0 else "improvement" if loss < 0 else "same"
        rows.append({"id": it.id, "capability": it.capability, "group": it.group, "outcome": outcome,
                     "metric": metric, "base_value": b, "adapter_value": a, "loss": loss,
                     "changed": it.base.text != it.adapter.text,
                     "prompt": strip_controls(_conversation(it)),
                     "base_text": strip_controls(it.base.text),
                     "adapter_text": strip_controls(it.adapter.text),
                     "base_scores": _fmt_scores(it.base.scores),
                     "adapter_scores": _fmt_scores(it.adapter.scores),
                     "base_reason": strip_controls(reason(it.base.detail, scorer_of.get(it.capability))),
                     "adapter_reason": strip_controls(reason(it.adapter.detail, scorer_of.get(it.capability)))})
    rows.sort(key=lambda r: (order[r["outcome"]], -abs(r["loss"]), r["id"]))
    return rows


def adapter_card(result: AuditResult) -> dict[str, Any]:
    """What the report's adapter card shows: rank summary (real ranks from the
    tensors, which ``rank_pattern`` can raise above ``r``), size in MiB, and
    whether the declared base matches the audited one."""
    a = result.adapter
    by_rank: dict[int, int] = {}
    for rank in (a.ranks or {}).values():
        by_rank[int(rank)] = by_rank.get(int(rank), 0) + 1
    declared, audited, status = a.declared_base, result.base.name, a.declared_base_status
    # the inspection's status where results.json has it (a declared folder that is the audited base matches)
    match = None if not declared or status in ("none", "unknown") else \
        status in ("match", "local_folder") if status else declared == audited
    return {"ranks": sorted(by_rank.items()), "size_mib": a.size_bytes / 2**20,
            "base_match": match, "audited_base": audited,
            "tokenizer": tokenizer_lines(a.tokenizer_files), "prompts": prompt_lines(result.run.prompts),
            "vocabulary": vocab_line(a.vocab_resize)}


def vocab_line(r: VocabResize | None) -> str | None:
    """The adapter card's "vocabulary" row for an adapter trained with added tokens (None: not resized)."""
    if r is None:
        return None
    listed = ", ".join(r.added[:8]) + (", ..." if r.n_added > len(r.added[:8]) else "")
    return (f"resized from {r.base_size:,} to {r.size:,} tokens for the adapter's answers ({r.n_added} added: "
            f"{listed or 'not named'}; {r.how}: {', '.join(r.modules)}; its tokenizer: {r.tokenizer_file}); "
            "the base's answers use the base's embeddings and tokenizer")


def tokenizer_lines(t: TokenizerFiles | None) -> list[str]:
    """The adapter card's "tokenizer files" row: what the folder ships and how it compares with the base's."""
    if t is None or not t.files:
        return ["none (the base's tokenizer and chat template serve the adapter)"]
    out = [", ".join(t.files)]
    out.append({"none": "chat template: none shipped",
                "identical": f"chat template ({t.template_file}): identical to the base's",
                "differs": f"chat template ({t.template_file}): differs from the base's "
                           f"(sha256 {(t.template_sha256 or '')[:12]}… vs {(t.base_template_sha256 or '')[:12]}…)",
                "invalid": f"chat template ({t.template_file}): {t.template_error}"}[t.chat_template])
    size = f"{t.vocab_size} tokens" if t.vocab_size is not None else "size not stated"
    vocab_file = any(f in t.files for f in ("tokenizer.json", "vocab.json", "tokenizer.model"))
    extent = "" if vocab_file else " (no vocabulary file: its added tokens and declared size only)"
    out.append({"none": "vocabulary: none shipped",
                "identical": f"vocabulary: identical to the base's ({size}, {t.added_tokens} added tokens){extent}",
                "differs": f"vocabulary: differs from the base's ({size} vs {t.base_vocab_size}; "
                           f"{', '.join(t.new_tokens[:8]) or 'same tokens'} not at the base's ids){extent}"}[t.vocabulary])
    out += [f"{name}: {mine!r} (the base's: {base!r})" for name, (mine, base) in sorted(t.special_tokens.items())]
    return out


def prompt_lines(prompts: Mapping[str, Mapping[str, str]] | None) -> list[str]:
    """The adapter card's "prompts" row: per variant, the chat template and tokenizer that rendered them."""
    return [(f"{variant}: plain prompts (no chat template: the item's text, no role markers, as lm-eval prompts a "
             f"base model), tokenizer {p.get('tokenizer', 'base')}" if p['chat_template'] == "none" else
             f"{variant}: chat template {p['chat_template']} ({p['template_file']}, sha256 "
             f"{p['template_sha256'][:12]}…), tokenizer {p.get('tokenizer', 'base')}")
            for variant, p in (prompts or {}).items()]


def limit_note(limit: int, budget: Budget | None = None) -> str:
    """What a ``--limit`` run is worth, said next to its verdict (HTML banner, summary.md, checklist.md, the
    terminal); with its ``budget`` (``run.budget``), whether rounds could decide what it left undecided."""
    rounds = "" if budget is None or budget.items else \
        "; no rounds for undecided rules (--limit buys none unless --budget asks for them)"
    return (f"at most {limit} item{'s' if limit != 1 else ''} per capability: a quick check with wide intervals, "
            f"not the full suite's verdict{rounds}")


def rules_by_outcome(rules: Sequence[RuleOutcome],
                     order: tuple[str, ...] = ("fail", "warn", "pass", "not_run")) -> list[RuleOutcome]:
    """The rules sorted by outcome in ``order`` (failing first by default); other outcomes last."""
    return sorted(rules, key=lambda r: order.index(r.outcome) if r.outcome in order else len(order))


def index_rows(results: Sequence[AuditResult], folders: Sequence[str], run: RunSummary | None = None
               ) -> list[dict[str, Any]]:
    """One row per adapter of a multi-adapter index (index.html, a merge's summary.md): ``path``, ``verdict``,
    nominal ``label``, ``drift`` (DriftScore in points, formatted), its report ``folder`` and ``href``, the
    ``failing`` rules and, for a training run (``run``), the checkpoint's ``step``."""
    return [{"path": r.adapter.path, "verdict": r.verdict.verdict, "label": r.drift.label,
             "drift": _num(r.drift.drift_score_pts, "+.1f"), "folder": folder, "href": f"{folder}/report.html",
             "failing": r.verdict.failing, "step": run.checkpoints[k].step if run is not None else None}
            for k, (r, folder) in enumerate(zip(results, folders))]


def failing_rules(result: AuditResult) -> list[RuleOutcome]:
    return [r for r in result.verdict.rules if r.outcome == "fail"]


def no_drift_note(drift: DriftResult, rules: Sequence[RuleOutcome]) -> str | None:
    """Why a labelled adapter has no DriftScore (the nominal-label rule's reason, from ``rules``), or None
    when it has one or carries no label (the missing label is a rule of its own)."""
    if drift.drift_score_pts is not None or drift.label is None:
        return None
    rule = next((r for r in rules if r.rule_id.startswith("nominal-label/")), None)
    return rule.reason if rule is not None else "DriftScore not computed"
