"""The summary printed on stderr at the end of an audit (rich tables), with the same cells as the
HTML and Markdown reports. Untrusted text loses its control characters and has rich markup escaped."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..policy.rules import NOT_IN_RUN
from ..records import MetricComparison
from ..records.training_run import RunSummary
from ..results import AuditResult
from ..util.text import terminal_text
from .view import agreement_sentence, comparison_cells, limit_note, no_drift_note, same_as_base_cells

t = terminal_text  # the short name the report modules use


def comparison_table(comparisons: Sequence[MetricComparison], title: str, left: str, right: str,
                     discordant: bool, same: Sequence[str] | None = None) -> Table:
    """One rich table of comparisons (the same cells as the HTML and Markdown reports); ``same``: the cells of a
    "same as base" column (:func:`~auditor.reports.view.same_as_base_cells`)."""
    tab = Table(title=title, title_justify="left")
    cols = (["group", "metric", left, right, "Δ", "95% CI", "p"] + ([f"{left}-only/{right}-only"] if discordant else [])
            + (["same as base"] if same is not None else []))
    widest = max((len(t(c.metric)) for c in comparisons), default=6)
    for col in cols:
        # the metric id whole on a narrow terminal (``knowledge.acc`` and ``knowledge.acc_norm`` must stay apart)
        metric = col == "metric"
        tab.add_column(col, justify="left" if col in ("group", "metric") else "right", no_wrap=metric,
                       min_width=widest if metric else None)
    for n, c in enumerate(comparisons):
        k = comparison_cells(c)
        unit = "" if k["unit"] == "points" else f" {t(k['unit'])}"
        tab.add_row(t(c.group), t(c.metric), k["base"], k["adapter"], k["delta"] + unit, k["ci"], k["p"],
                    *([k["discordant"]] if discordant else []), *([same[n]] if same is not None else []))
    return tab


def print_summary(console: Console, result: AuditResult) -> None:
    """The comparison table(s), how many generated answers the adapter changed, the DriftScore line, every rule that
    did not pass, and the verdict."""
    console.print(comparison_table(result.comparisons, "base → adapter (points for rates)", "base", "adapter",
                                   discordant=True,
                                   same=same_as_base_cells(result.comparisons, result.agreement_with_base)))
    if (sentence := agreement_sentence(result.agreement_with_base)) is not None:
        console.print(sentence)
    prev = result.baseline
    if prev:
        console.print(comparison_table(prev.comparisons, f"previous release ({t(prev.adapter.path)}) → candidate "
                                       f"({t(result.adapter.path)})", "previous", "candidate", discordant=False))
    d = result.drift
    if d.drift_score_pts is not None:
        console.print(f"nominal label [bold]{t(d.label)}[/] ({t(d.label_source)}): "
                      f"TargetGain {d.target_gain_pts:+.1f}, OffTargetGain {d.off_target_gain_pts:+.1f}, "
                      f"DriftScore {d.drift_score_pts:+.1f}" + ("  [red]label mismatch[/]" if d.mismatch else ""))
    elif (why := no_drift_note(d, result.verdict.rules)) is not None:
        console.print(f"nominal label [bold]{t(d.label)}[/] ({t(d.label_source)}): no DriftScore: {t(why)}")
    v = result.verdict
    left_out = [r for r in v.rules if r.outcome == "not_run" and r.reason.endswith(NOT_IN_RUN)]
    for r in v.rules:
        if r.outcome != "pass" and r not in left_out:
            colour = "red" if r.outcome == "fail" else "yellow"
            console.print(f"[{colour}]{t(r.outcome)}[/]: {t(r.rule)}: {t(r.reason)}")
    if left_out:
        audited = set(result.run.capabilities or ())
        missing = sorted({r.metric.split(".")[0] for r in left_out if r.metric} - audited)
        names = f": {', '.join(t(c) for c in missing)}" if missing else ""
        console.print(f"[yellow]not run[/] (capabilities not audited{names}): {len(left_out)} "
                      f"rule{'s' if len(left_out) != 1 else ''}")
    if result.run.limit:
        console.print(f"[yellow]--limit {result.run.limit}:[/] {t(limit_note(result.run.limit, result.run.budget))}")
    colour = "green" if v.verdict == "pass" else "red"
    console.print(f"[bold {colour}]verdict: {t(v.verdict).upper()}[/]")


def print_adapter_summary(console: Console, result: AuditResult, report: Path, several: bool) -> None:
    """:func:`print_summary` of one adapter of an audit, its path above it when the audit has ``several``, and the
    path of its ``report`` (report.html) below it."""
    if several:
        console.print(f"[bold]{t(result.adapter.path)}[/]")
    print_summary(console, result)
    console.print(f"report: {t(report)}")


def print_run_table(console: Console, run: RunSummary) -> None:
    """A training run's checkpoints (step × verdict × DriftScore × failing rules), then the last passing and the
    first failing checkpoint."""
    tab = Table(title=f"training run {t(run.run_dir)} ({len(run.checkpoints)} checkpoints, step order)",
                title_justify="left")
    for col in ("step", "checkpoint", "verdict", "DriftScore", "failing rules"):
        tab.add_column(col, justify="right" if col in ("step", "DriftScore") else "left")
    for c in run.checkpoints:
        colour = {"pass": "green", "fail": "red"}.get(c.verdict, "yellow")
        tab.add_row(str(c.step), t(Path(c.path).name), f"[{colour}]{t(c.verdict).upper().replace('_', ' ')}[/]",
                    "—" if c.drift_score_pts is None else f"{c.drift_score_pts:+.1f}",
                    "; ".join(t(f.rule) for f in c.failing) or ("—" if c.verdict != "not_audited" else "not audited"))
    console.print(tab)
    last = "none passes" if run.last_passing is None else f"step {run.last_passing}"
    console.print(f"[bold]last passing checkpoint:[/] {last}")
    if run.first_failing is not None:
        console.print(f"[bold]first failing checkpoint:[/] step {run.first_failing} "
                      f"({'; '.join(t(f.rule) for f in run.first_failing_rules)})")
