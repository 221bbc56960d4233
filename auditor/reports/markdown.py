"""summary.md (``$GITHUB_STEP_SUMMARY``, a pull-request comment) and checklist.md (release sign-off).

Untrusted names are escaped plain text (:func:`md`), never inside code spans, where escapes do not work.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..records import MetricComparison
from ..results import AuditResult
from ..util.text import strip_controls
from .view import (
    agreement_sentence,
    comparison_cells,
    failing_rules,
    index_rows,
    limit_note,
    no_drift_note,
    prompt_lines,
    rules_by_outcome,
    same_as_base_cells,
)

#: GitHub refuses PR comments over 65,536 characters; the summary stays under this
SUMMARY_MAX_CHARS = 60_000
#: GitHub takes at most 1 MiB of ``$GITHUB_STEP_SUMMARY`` per step; a merge's summary.md stays under this (UTF-8 bytes)
INDEX_MAX_BYTES = 1_000_000


def md(text: Any) -> str:
    """Escape text for a Markdown table cell."""
    s = strip_controls(str(text).replace("\r", " ").replace("\n", " ")).replace("\\", "\\\\").replace("|", "\\|")
    for ch in "<>*_`[]#":
        s = s.replace(ch, "\\" + ch)
    return s


def render_summary_md(result: AuditResult, report_name: str = "report.html") -> str:
    """Short Markdown summary for ``$GITHUB_STEP_SUMMARY`` or a PR comment (untrusted
    names are escaped plain text, never inside code spans, where escapes do not work):
    verdict, the chat templates when base and adapter were prompted differently, failing rules,
    the capability table (Δ in points with its CI; the share of each capability's generated answers that are the
    base's) and how many generated answers the adapter changed at all, DriftScore, and ``report_name`` (the full
    report's link-friendly name).
    At most :data:`SUMMARY_MAX_CHARS` characters (the table is cut, saying so)."""
    v = result.verdict
    icon = "✅" if v.verdict == "pass" else "❌"
    lines = [f"## {icon} adapter-auditor: {v.verdict.upper()}", "",
             f"Adapter **{md(Path(result.adapter.path).name)}** on base **{md(result.base.name)}**, "
             f"suite {md(result.suite.name)}; numeric path {md(result.run.dtype)} on {md(result.run.backend)}"
             + (", batch-invariant" if (result.run.hf or {}).get("batch_invariant") else "")
             + " (greedy answers differ between bf16 and fp32, so figures near a limit can too).", ""]
    if result.run.limit:
        lines += [f"> **--limit {result.run.limit}:** {limit_note(result.run.limit, result.run.budget)}", ""]
    prompts = result.run.prompts or {}
    if len({p.get("template_sha256") for p in prompts.values()}) > 1:  # the variants were prompted differently
        lines += ["Prompts rendered with: " + "; ".join(md(x) for x in prompt_lines(prompts)) + ".", ""]
    failing = failing_rules(result)
    if failing:
        lines += ["**Failing rules**", ""] + [f"- {md(r.rule)}: {md(r.reason)}" for r in failing] + [""]
    open_rules = [r for r in v.rules if r.decision in ("inconclusive", "not_measurable")]
    if open_rules:
        lines += ["**Not decided**", ""] + [
            f"- {md(r.rule)}: {'inconclusive' if r.decision == 'inconclusive' else 'not measurable on this base'}"
            + (f" on {r.n_items} items" if r.n_items else "")
            + (f" (about {r.items_to_decide} would likely decide it)" if r.items_to_decide else "") for r in open_rules] + [""]
    floor = result.noise_floor
    if floor is not None:
        within = [r for r in v.rules if r.within_noise]
        lines += [f"**Noise floor** (the base replayed in {md(floor.replay)}): {floor.n_differ} of {floor.n_items} "
                  "base answers changed" + ("; decided within that noise:" if within else
                                            "; no rule was decided within that noise."), ""]
        if within:
            lines += [f"- {md(r.rule)}: {r.decision}, {abs((r.value or 0) - (r.limit or 0)):.1f} from its limit "
                      f"(noise {r.noise:.1f})" for r in within] + [""]
    rounds = result.run.rounds[1:]
    if rounds:
        added = ", ".join(f"+{n} {md(c)}" for rd in rounds for c, n in (rd.new_items or {}).items())
        budget = result.run.budget
        lines += [f"Rounds: {len(rounds)} (undecided rules bought {added}; {budget.used_items if budget else 0} of "
                  f"{budget.items if budget else 0} budget items).", ""]
    lines += md_comparison_table(result.comparisons, same=same_as_base_cells(result.comparisons,
                                                                              result.agreement_with_base))
    if (sentence := agreement_sentence(result.agreement_with_base)) is not None:
        lines += ["", sentence]
    if result.baseline:
        lines += ["", f"**Against the previous release** {md(Path(result.baseline.adapter.path).name)} "
                      "(`--baseline`)", ""]
        lines += md_comparison_table(result.baseline.comparisons, "previous", "candidate")
    lines += md_drift_lines(result)
    lines += ["", "Δ: adapter − base, in points for rates. CI: paired bootstrap. p: exact McNemar for pass/fail "
                  "items, Wilcoxon signed-rank otherwise, permutation for context gaps. Same as base: the "
                  "capability's generated answers that are exactly the base's (— for multiple choice)."]
    lines += ["", f"Full report: {md(report_name)}, beside this file (with every item's base and adapter output)"]
    text = "\n".join(lines) + "\n"
    if len(text) > SUMMARY_MAX_CHARS:
        note = "\n\n… cut to fit a PR comment; see the full report.\n"
        text = text[: SUMMARY_MAX_CHARS - len(note)].rsplit("\n", 1)[0] + note
    return text


def render_index_md(results: Sequence[AuditResult], folders: Sequence[str], summaries: Sequence[str]) -> str:
    """The Markdown index of several adapters (``audit merge``'s summary.md, for ``$GITHUB_STEP_SUMMARY``): the
    verdict over all (FAIL when any adapter fails), a table with index.html's cells (adapter, verdict, nominal
    label, DriftScore in points, failing rules, report), then the ``summaries`` (each adapter's summary.md, in the
    order of ``results``) of the adapters that did not pass. At most :data:`INDEX_MAX_BYTES` bytes: summaries that
    do not fit are left out, then table rows, each saying how many."""
    rows = index_rows(results, folders)
    n_fail = sum(r["verdict"] == "fail" for r in rows)
    verdict = "fail" if n_fail else "pass"
    head = [f"# {'❌' if n_fail else '✅'} adapter-auditor: {verdict.upper()} ({n_fail} of {len(rows)} adapters fail)",
            "", f"Base **{md(results[0].base.name)}**, suite {md(results[0].suite.name)}; index: index.html.", "",
            "| adapter | verdict | nominal label | DriftScore (points) | failing rules | report |",
            "|---|---|---|---:|---|---|"]
    table = [f"| {md(r['path'])} | {r['verdict'].upper()} | {md(r['label'] or '—')} | {r['drift']} | "
             + ("; ".join(md(f.rule) for f in r["failing"]) or "—") + f" | {md(r['href'])} |" for r in rows]
    details = [s for r, s in zip(rows, summaries) if r["verdict"] != "pass"]
    size = len("\n".join(head).encode()) + 400  # room for the notes
    kept_rows = _fitting(table, size, INDEX_MAX_BYTES)
    size += sum(len(x.encode()) + 1 for x in table[:kept_rows])
    kept = _fitting(details, size, INDEX_MAX_BYTES)
    lines = head + table[:kept_rows]
    if kept_rows < len(table):
        lines.append(f"\n… {len(table) - kept_rows} more adapters left out to fit the job summary; see index.html.")
    lines += [""] + details[:kept]
    if kept < len(details):
        lines.append(f"… the summaries of {len(details) - kept} more adapters that did not pass are left out to fit; "
                     "see each adapter's summary.md.")
    return "\n".join(lines).rstrip("\n") + "\n"


def _fitting(parts: Sequence[str], used: int, limit: int) -> int:
    """How many of ``parts`` (from the first, each with a newline) fit in ``limit`` bytes after ``used``."""
    for k, part in enumerate(parts):
        used += len(part.encode()) + 1
        if used > limit:
            return k
    return len(parts)


def md_drift_lines(result: AuditResult) -> list[str]:
    """A blank line and the nominal label's line: TargetGain, OffTargetGain and DriftScore in points with its
    interval (and "label mismatch"), or why there is no DriftScore; nothing when neither applies."""
    d = result.drift
    if d.drift_score_pts is not None:
        return ["", f"Nominal label **{md(d.label)}**: TargetGain {d.target_gain_pts:+.1f}, "
                    f"OffTargetGain {d.off_target_gain_pts:+.1f}, DriftScore {d.drift_score_pts:+.1f} points"
                    + (f" ({100 * d.confidence:.0f}% CI [{d.ci_low_pts:+.1f}, {d.ci_high_pts:+.1f}])"
                       if d.ci_low_pts is not None else "")
                    + (" (label mismatch)" if d.mismatch else "")]
    if (why := no_drift_note(d, result.verdict.rules)) is not None:
        return ["", f"Nominal label **{md(d.label)}**: no DriftScore: {md(why)}"]
    return []


def public_base_name(result: AuditResult) -> str:
    """The base's name for files meant to be published (the Hub's eval results, a model card): a local folder's
    own name, not the auditing machine's absolute path (which results.json keeps)."""
    name = result.base.name
    return Path(name).name if result.base.source == "local" and Path(name).is_absolute() else name


def md_comparison_table(comparisons: Sequence[MetricComparison], left: str = "base", right: str = "adapter",
                        same: Sequence[str] | None = None) -> list[str]:
    """The Markdown table of ``comparisons`` (one row per metric: base, adapter, Δ in points for rates, its
    interval, p, discordant items, and with ``same`` its cells of a "same as base" column,
    :func:`~auditor.reports.view.same_as_base_cells`), as lines; untrusted names escaped (:func:`md`)."""
    conf = comparisons[0].confidence if comparisons else 0.95
    extra = (" same as base |", "---:|") if same is not None else ("", "")
    lines = [f"| group | metric | {left} | {right} | Δ | {100 * conf:.0f}% CI | p | {left}-only / {right}-only |"
             + extra[0], "|---|---|---:|---:|---:|---:|---:|---:|" + extra[1]]
    for n, c in enumerate(comparisons):
        k = comparison_cells(c)
        unit = "" if k["unit"] == "points" else f" {k['unit']}"
        lines.append(f"| {md(c.group)} | {md(c.metric)} | {k['base']} | {k['adapter']} | {k['delta']}{unit} | "
                     f"{k['ci']} | {k['p']} | {k['discordant']} |" + (f" {same[n]} |" if same is not None else ""))
    return lines


def render_checklist(result: AuditResult) -> str:
    """A Markdown release checklist to paste into a release issue: the ``--limit`` warning when the run had
    one, then one box per policy rule (ticked only when it passed; a warning or a rule not run is
    left for a person to sign off), each with its outcome and evidence (the
    rule's reason: values, interval, limit, mode), then the hashes that
    identify what was audited (the chat template and tokenizer of each variant's prompts included)
    and the sign-off lines."""
    v, a = result.verdict, result.adapter
    lines = [f"## Release checklist: {md(Path(a.path).name)} — {v.verdict.upper()}", "",
             f"- adapter {md(a.path)}, weights sha256 `{md(a.sha256)}`",
             f"- base {md(result.base.name)} (sha256 `{md(result.base.content_hash)}`"
             + (f"; {md(result.base.reason)})" if result.base.reason else ")"),
             f"- policy {md(result.policy.path)} (sha256 `{md(result.policy.sha256 or '—')}`), "
             f"suite {md(result.suite.name)} ({len(result.items)} items, sha256 "
             f"`{md(result.suite.items_sha256 or '—')}`)"]
    if result.run.limit:  # below the title's verdict, before the boxes it may leave unticked
        lines[2:2] = [f"> **--limit {result.run.limit}:** {limit_note(result.run.limit, result.run.budget)}", ""]
    if result.baseline:
        pa = result.baseline.adapter
        lines.append(f"- previous release (`--baseline`) {md(pa.path)}, weights sha256 `{md(pa.sha256)}`")
    lines += [f"- prompts of {md(x)}" for x in prompt_lines(result.run.prompts)]
    lines.append(f"- audited {md(result.run.created_at)} by adapter-auditor {md(result.run.auditor_version)}")
    lines += ["", "### Policy rules", ""]
    label = {"pass": "pass", "fail": "**FAIL**", "warn": "warning — needs a reviewer's sign-off",
             "not_run": "not run — needs a reviewer's sign-off"}
    for r in rules_by_outcome(v.rules, ("fail", "warn", "not_run", "pass")):
        box = "x" if r.outcome == "pass" else " "
        lines.append(f"- [{box}] {md(r.rule)} — {label.get(r.outcome, md(r.outcome))}: {md(r.reason)}")
    lines += ["", "### Sign-off", "", "- [ ] The report (`report.html`) was read, regressions included",
              "- [ ] Release manager: name, date"]
    return "\n".join(lines) + "\n"
