"""Stage 7 — report: results.json, report.html, summary.md, junit.xml.

Everything is rendered from the plain ``results`` dict that is also written
as ``results.json``, so ``audit report results.json --out DIR`` re-renders
every output without a model. Model output is untrusted text: the HTML is
rendered by jinja2 with autoescape on, Markdown cells are escaped, and XML is
written by ElementTree (which escapes).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jinja2
import jsonschema
import markupsafe

from .cachedir import atomic_write
from .errors import AuditInputError

RESULTS_SCHEMA_VERSION = 3
#: JSON Schema (draft 2020-12) of results.json, shipped in the package
RESULTS_SCHEMA_PATH = Path(__file__).parent / "schemas" / "results.schema.json"
REPORT_FILES = ("results.json", "report.html", "summary.md", "junit.xml", "results.sarif", "checklist.md")
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("auditor", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    # every value shown loses its control characters (ESC, BEL, C1) before it is escaped
    # (Markup, i.e. our own script and tojson's already-escaped JSON, is left as it is)
    finalize=lambda v: strip_controls(v) if isinstance(v, str) and not isinstance(v, markupsafe.Markup) else v,
)
_ENV.globals["cells"] = lambda c: comparison_cells(c)


def _atomic_write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"), mode=0o644)  # reports are meant to be shared


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """Drop C0/C1 control characters except tab and newline (ANSI/OSC escape
    sequences lose their ESC and become inert text; XML 1.0 forbids most of them)."""
    return _CONTROLS.sub("", text)


def _num(x: Any, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def comparison_cells(c: dict[str, Any]) -> dict[str, str]:
    """Display strings for one comparison row (HTML, Markdown and terminal share them).

    Fraction metrics are shown in points (0–100), count metrics in their unit.
    Keys: base, adapter, delta, ci, rel, p, q, test, discordant, unit.
    """
    frac = c.get("unit", "fraction") == "fraction"
    scale = 100.0 if frac else 1.0
    ci = "—"  # also for a single cluster, whose bootstrap interval has zero width and means nothing
    if c.get("ci_low") is not None and c.get("ci_high") is not None and not 0 < c.get("n_clusters", 2) < 2:
        ci = f"[{c['ci_low'] + 0.0:+.1f}, {c['ci_high'] + 0.0:+.1f}]"
    disc = c.get("discordant") or {}
    return {
        "base": f"{scale * c['base']:.1f}",
        "adapter": f"{scale * c['adapter']:.1f}",
        "delta": f"{c['delta'] + 0.0:+.1f}",
        "unit": "points" if frac else c["unit"],
        "ci": ci,
        "rel": "—" if c.get("rel_delta_pct") is None else f"{c['rel_delta_pct']:+.0f}%",
        "p": _num(c.get("p_value"), ".3g"),
        "q": _num(c.get("p_adjusted"), ".3g"),
        "test": c.get("test") or "—",
        "discordant": f"{disc['base_only']} / {disc['adapter_only']}" if disc else "—",
    }



GROUP_TITLES = {"CAN": "CAN — knowledge and skills", "WILL": "WILL — default behaviour",
                "HOW": "HOW — protocol execution", "COND": "COND — conditional behaviour"}


def _direction(c: dict[str, Any]) -> str:
    """'worse', 'better', 'moved' or 'unclear' for a comparison: worse/better only
    when its whole confidence interval of Δ lies on that side of zero; 'moved'
    for a count metric (words, tokens) whose interval excludes zero."""
    lo, hi = c.get("ci_low"), c.get("ci_high")
    if lo is None or hi is None or 0 < c.get("n_clusters", 2) < 2:  # one cluster: no interval to speak of
        return "unclear"
    if c.get("unit", "fraction") != "fraction" and (hi < 0 or lo > 0):
        return "moved"  # a length in words or tokens moved: neither better nor worse by itself
    if hi < 0 or lo > 0:
        up = lo > 0
        return "better" if up == bool(c["higher_is_better"]) else "worse"
    return "unclear"


def _rule_capability(rule: str, capabilities: set[str]) -> str | None:
    cap = rule.split(":", 1)[0].split(".", 1)[0].strip()
    return cap if cap in capabilities else None


def group_summary(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One card per capability group (CAN, WILL, HOW, COND) that ran.

    Each card: ``group``, ``title``, ``capabilities`` (names), ``n_metrics``,
    ``worse`` / ``better`` (metrics whose confidence interval of Δ lies wholly on
    that side of zero), ``moved`` (count metrics, e.g. words, that moved), ``rules`` (outcome → count over the policy rules on this
    group's metrics) and ``status`` (fail, warn or pass: the worst rule outcome).
    """
    group_of = {it["capability"]: it["group"] for it in results["items"]}
    for c in results["comparisons"]:
        group_of.setdefault(c["capability"], c["group"])
    cards = []
    for g in [*GROUP_TITLES, *sorted(set(group_of.values()) - set(GROUP_TITLES))]:
        caps = sorted(c for c, gg in group_of.items() if gg == g)
        if not caps:
            continue
        comps = [c for c in results["comparisons"] if c["group"] == g]
        rules = [r for r in results["verdict"]["rules"] if _rule_capability(str(r["rule"]), set(caps))]
        counts = {o: sum(r["outcome"] == o for r in rules) for o in ("fail", "warn", "pass", "not_run")}
        status = "fail" if counts["fail"] else "warn" if counts["warn"] else "pass"
        cards.append({"group": g, "title": GROUP_TITLES.get(g, g), "capabilities": caps, "n_metrics": len(comps),
                      "worse": [c["metric"] for c in comps if _direction(c) == "worse"],
                      "better": [c["metric"] for c in comps if _direction(c) == "better"],
                      "moved": [f"{c['metric']} ({c['delta'] + 0.0:+.1f} {c['unit']})" for c in comps
                                if _direction(c) == "moved"],
                      "rules": counts, "status": status})
    return cards


def _nice_limit(x: float) -> float:
    for step in (5, 10, 20, 25, 50, 100):
        if x <= step:
            return float(step)
    return float(100 * -(-x // 100))


def chart_groups(results: dict[str, Any], width: int = 300) -> list[dict[str, Any]]:
    """Geometry of the per-capability chart (inline SVG), one panel per group.

    Only fraction metrics are drawn (points, 0–100). Each row has ``metric``,
    ``y``, ``bx`` / ``ax`` (x of base and adapter on the 0–100 panel, px),
    ``dx`` / ``lox`` / ``hix`` (x of Δ and its CI whisker on the ±``span``
    points panel, px), ``direction`` and the display strings of
    :func:`comparison_cells`. Count metrics (words, tokens) stay in the table.
    """
    rows_by_group: dict[str, list[dict[str, Any]]] = {}
    fr = [c for c in results["comparisons"] if c.get("unit", "fraction") == "fraction"]
    ext = [abs(v) for c in fr for v in (c["delta"], c.get("ci_low"), c.get("ci_high")) if v is not None]
    span = _nice_limit(max(ext, default=0.0))
    row_h = 22
    for c in fr:
        rows = rows_by_group.setdefault(c["group"], [])
        lo = c["ci_low"] if c.get("ci_low") is not None else c["delta"]
        hi = c["ci_high"] if c.get("ci_high") is not None else c["delta"]
        to_d = lambda v: round(width / 2 + (v / span) * (width / 2 - 4), 1)  # noqa: E731
        rows.append({"metric": c["metric"], "y": 18 + len(rows) * row_h,
                     "bx": round(4 + c["base"] * (width - 8), 1), "ax": round(4 + c["adapter"] * (width - 8), 1),
                     "dx": to_d(c["delta"]), "lox": to_d(lo), "hix": to_d(hi),
                     "direction": _direction(c), "cells": comparison_cells(c)})
    out = []
    for g in [*GROUP_TITLES, *sorted(set(rows_by_group) - set(GROUP_TITLES))]:
        if g in rows_by_group:
            rows = rows_by_group[g]
            out.append({"group": g, "title": GROUP_TITLES.get(g, g), "rows": rows,
                        "height": 26 + len(rows) * row_h, "span": span, "width": width})
    return out


def _reason(detail: Any) -> str:
    """The scorer's detail as one readable line (IFEval: each instruction with ✓/✗ strict and loose)."""
    if not isinstance(detail, dict) or not detail:
        return ""
    ins, fs, fl = detail.get("instructions"), detail.get("followed_strict"), detail.get("followed_loose")
    if isinstance(ins, list) and isinstance(fs, list) and isinstance(fl, list) and len(ins) == len(fs) == len(fl):
        return "; ".join(f"{i} {'✓' if s else '✗'} strict {'✓' if lo else '✗'} loose" for i, s, lo in zip(ins, fs, fl))
    parts = []
    for k, v in detail.items():
        parts.append(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}")
    text = "; ".join(parts)
    return text if len(text) <= 600 else text[:599] + "…"


def _fmt_scores(scores: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, (int, float)) else f"{k} —" for k, v in scores.items())


def _conversation(item: dict[str, Any]) -> str:
    """The item's prompt; for a multi-turn item every turn, role first (the
    instruction of turn 1 is what a multi-turn probe checks in turn 3)."""
    msgs = item.get("messages") or []
    if len(msgs) <= 1:
        return item["prompt"]
    return "\n\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in msgs)


def primary_metrics(results: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Capability → (its first metric's per-item score name, higher is better)."""
    primary: dict[str, tuple[str, bool]] = {}
    for c in results["comparisons"]:
        primary.setdefault(c["capability"], (c["metric"].split(".", 1)[1], c["higher_is_better"]))
    return primary


def item_rows(results: dict[str, Any], primary: dict[str, tuple[str, bool]] | None = None) -> list[dict[str, Any]]:
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
    ``results``, when the caller has it already.
    """
    primary = primary_metrics(results) if primary is None else primary
    order = {"regression": 0, "improvement": 1, "same": 2, "unscored": 3}
    rows = []
    for it in results["items"]:
        metric, hib = primary.get(it["capability"], ("", True))
        b, a = it["base"]["scores"].get(metric), it["adapter"]["scores"].get(metric)
        if b is None or a is None:
            outcome, loss = "unscored", 0.0
        else:
            loss = (b - a) if hib else (a - b)
            outcome = "regression" if loss > 0 else "improvement" if loss < 0 else "same"
        rows.append({"id": it["id"], "capability": it["capability"], "group": it["group"], "outcome": outcome,
                     "metric": metric, "base_value": b, "adapter_value": a, "loss": loss,
                     "changed": it["base"]["text"] != it["adapter"]["text"],
                     "prompt": strip_controls(_conversation(it)),
                     "base_text": strip_controls(it["base"]["text"]),
                     "adapter_text": strip_controls(it["adapter"]["text"]),
                     "base_scores": _fmt_scores(it["base"]["scores"]),
                     "adapter_scores": _fmt_scores(it["adapter"]["scores"]),
                     "base_reason": strip_controls(_reason(it["base"].get("detail"))),
                     "adapter_reason": strip_controls(_reason(it["adapter"].get("detail")))})
    rows.sort(key=lambda r: (order[r["outcome"]], -abs(r["loss"]), r["id"]))
    return rows


def adapter_card(results: dict[str, Any]) -> dict[str, Any]:
    """What the report's adapter card shows: rank summary (real ranks from the
    tensors, which ``rank_pattern`` can raise above ``r``), size in MiB, and
    whether the declared base matches the audited one."""
    a = results["adapter"]
    by_rank: dict[int, int] = {}
    for rank in (a.get("ranks") or {}).values():
        by_rank[int(rank)] = by_rank.get(int(rank), 0) + 1
    declared, audited = a.get("declared_base"), results["base"]["name"]
    return {"ranks": sorted(by_rank.items()), "size_mib": a["size_bytes"] / 2**20,
            "base_match": None if not declared else declared == audited, "audited_base": audited}


_BROWSER_JS = (Path(__file__).parent / "templates" / "browser.js").read_text(encoding="utf-8")
_BROWSER_JS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_BROWSER_JS.encode("utf-8")).digest()).decode()



def render_html(results: dict[str, Any]) -> str:
    """The self-contained HTML report: one file, no network (inline CSS, inline
    SVG charts, one inline script allowed by its sha256 in the page's
    Content-Security-Policy; the items are a JSON data block, rendered by the
    script with ``textContent``). Model output and adapter text are escaped
    by jinja2's autoescape and by ``tojson``."""
    primary = primary_metrics(results)
    return _ENV.get_template("report.html.j2").render(
        groups=group_summary(results), charts=chart_groups(results), browser_rows=item_rows(results, primary),
        primary=primary, card=adapter_card(results),
        rules_by_outcome=sorted(results["verdict"]["rules"],
                                key=lambda r: ("fail", "warn", "pass", "not_run").index(r["outcome"])
                                if r["outcome"] in ("fail", "warn", "pass", "not_run") else 4),
        script=_BROWSER_JS, script_hash=_BROWSER_JS_HASH, **results)


def _md(text: Any) -> str:
    """Escape text for a Markdown table cell."""
    s = strip_controls(str(text).replace("\r", " ").replace("\n", " ")).replace("\\", "\\\\").replace("|", "\\|")
    for ch in "<>*_`[]#":
        s = s.replace(ch, "\\" + ch)
    return s


#: GitHub refuses PR comments over 65,536 characters; the summary stays under this
SUMMARY_MAX_CHARS = 60_000


def limit_note(limit: int) -> str:
    """What a ``--limit`` run is worth, said next to its verdict (HTML banner, summary.md)."""
    return (f"at most {limit} item{'s' if limit != 1 else ''} per capability: a quick check with wide intervals, "
            "not the full suite's verdict")


_ENV.globals["limit_note"] = limit_note


def render_summary_md(results: dict[str, Any], report_name: str = "report.html") -> str:
    """Short Markdown summary for ``$GITHUB_STEP_SUMMARY`` or a PR comment (untrusted
    names are escaped plain text, never inside code spans, where escapes do not work):
    verdict, failing rules, the capability table (Δ in points with its CI),
    DriftScore, and ``report_name`` (the full report's link-friendly name).
    At most :data:`SUMMARY_MAX_CHARS` characters (the table is cut, saying so)."""
    v = results["verdict"]
    icon = "✅" if v["verdict"] == "pass" else "❌"
    lines = [f"## {icon} adapter-auditor: {v['verdict'].upper()}", "",
             f"Adapter **{_md(Path(results['adapter']['path']).name)}** on base **{_md(results['base']['name'])}**, "
             f"suite {_md(results['suite']['name'])}.", ""]
    if results["run"].get("limit"):
        lines += [f"> **--limit {results['run']['limit']}:** {limit_note(results['run']['limit'])}", ""]
    failing = [r for r in v["rules"] if r["outcome"] == "fail"]
    if failing:
        lines += ["**Failing rules**", ""] + [f"- {_md(r['rule'])}: {_md(r['reason'])}" for r in failing] + [""]
    lines += _comparison_table(results["comparisons"])
    if results.get("baseline"):
        lines += ["", f"**Against the previous release** {_md(Path(results['baseline']['adapter']['path']).name)} "
                      "(`--baseline`)", ""]
        lines += _comparison_table(results["baseline"]["comparisons"], "previous", "candidate")
    d = results["drift"]
    if d["drift_score_pts"] is not None:
        lines += ["", f"Nominal label **{_md(d['label'])}**: TargetGain {d['target_gain_pts']:+.1f}, "
                      f"OffTargetGain {d['off_target_gain_pts']:+.1f}, DriftScore {d['drift_score_pts']:+.1f} points"
                      + (f" ({100 * d.get('confidence', 0.95):.0f}% CI [{d['ci_low_pts']:+.1f}, {d['ci_high_pts']:+.1f}])"
                         if d.get("ci_low_pts") is not None else "")
                      + (" (label mismatch)" if d["mismatch"] else "")]
    lines += ["", "Δ: adapter − base, in points for rates. CI: paired bootstrap. p: exact McNemar for pass/fail "
                  "items, Wilcoxon signed-rank otherwise, permutation for context gaps."]
    lines += ["", f"Full report: {_md(report_name)} (with every item's base and adapter output)"]
    text = "\n".join(lines) + "\n"
    if len(text) > SUMMARY_MAX_CHARS:
        note = "\n\n… cut to fit a PR comment; see the full report.\n"
        text = text[: SUMMARY_MAX_CHARS - len(note)].rsplit("\n", 1)[0] + note
    return text


def _comparison_table(comparisons: list[dict[str, Any]], left: str = "base", right: str = "adapter") -> list[str]:
    conf = comparisons[0].get("confidence", 0.95) if comparisons else 0.95
    lines = [f"| group | metric | {left} | {right} | Δ | {100 * conf:.0f}% CI | p | {left}-only / {right}-only |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in comparisons:
        k = comparison_cells(c)
        unit = "" if k["unit"] == "points" else f" {k['unit']}"
        lines.append(f"| {_md(c['group'])} | {_md(c['metric'])} | {k['base']} | {k['adapter']} | {k['delta']}{unit} | "
                     f"{k['ci']} | {k['p']} | {k['discordant']} |")
    return lines


def render_checklist(results: dict[str, Any]) -> str:
    """A Markdown release checklist to paste into a release issue: one box per
    policy rule (ticked only when it passed; a warning or a rule not run is
    left for a person to sign off), each with its outcome and evidence (the
    rule's reason: values, interval, limit, mode), then the hashes that
    identify what was audited and the sign-off lines."""
    v, a = results["verdict"], results["adapter"]
    lines = [f"## Release checklist: {_md(Path(a['path']).name)} — {v['verdict'].upper()}", "",
             f"- adapter {_md(a['path'])}, weights sha256 `{_md(a['sha256'])}`",
             f"- base {_md(results['base']['name'])} (sha256 `{_md(results['base']['content_hash'])}`)",
             f"- policy {_md(results['policy']['path'])} (sha256 `{_md(results['policy'].get('sha256', '—'))}`), "
             f"suite {_md(results['suite']['name'])} ({len(results['items'])} items, sha256 "
             f"`{_md(results['suite'].get('items_sha256', '—'))}`)"]
    if results.get("baseline"):
        pa = results["baseline"]["adapter"]
        lines.append(f"- previous release (`--baseline`) {_md(pa['path'])}, weights sha256 `{_md(pa['sha256'])}`")
    lines.append(f"- audited {_md(results['run']['created_at'])} by adapter-auditor {_md(results['run']['auditor_version'])}")
    lines += ["", "### Policy rules", ""]
    label = {"pass": "pass", "fail": "**FAIL**", "warn": "warning — needs a reviewer's sign-off",
             "not_run": "not run — needs a reviewer's sign-off"}
    order = ("fail", "warn", "not_run", "pass")
    for r in sorted(v["rules"], key=lambda r: order.index(r["outcome"]) if r["outcome"] in order else 4):
        box = "x" if r["outcome"] == "pass" else " "
        lines.append(f"- [{box}] {_md(r['rule'])} — {label.get(r['outcome'], _md(r['outcome']))}: {_md(r['reason'])}")
    lines += ["", "### Sign-off", "", "- [ ] The report (`report.html`) was read, regressions included",
              "- [ ] Release manager: name, date"]
    return "\n".join(lines) + "\n"


def render_junit(results: dict[str, Any]) -> str:
    """JUnit XML (the Jenkins/Surefire dialect CI dashboards read): one test case
    per policy rule; a failing rule is a ``<failure>`` whose message is the
    reason, a rule not run is ``<skipped>``, a warning is noted in ``<system-out>``."""
    rules = results["verdict"]["rules"]
    total_s = (results.get("run", {}).get("timings") or {}).get("total_s")
    suite = ET.Element("testsuite", name="adapter-auditor", tests=str(len(rules)),
                       failures=str(sum(r["outcome"] == "fail" for r in rules)), errors="0",
                       skipped=str(sum(r["outcome"] == "not_run" for r in rules)))
    if isinstance(total_s, (int, float)) and total_s >= 0:
        suite.set("time", f"{total_s:.3f}")
    for r in rules:
        name, reason = strip_controls(str(r["rule"])), strip_controls(str(r["reason"]))
        case = ET.SubElement(suite, "testcase", classname="policy", name=name)
        if r["outcome"] == "fail":
            ET.SubElement(case, "failure", message=reason).text = reason
        elif r["outcome"] == "not_run":
            ET.SubElement(case, "skipped", message=reason)
        elif r["outcome"] == "warn":
            ET.SubElement(case, "system-out").text = "warning: " + reason
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _rule_id(rule: str) -> str:
    """A stable SARIF ruleId from a policy rule name ('math.numeric_match: max drop' → 'math.numeric_match/max-drop')."""
    head, _, tail = str(rule).partition(":")
    slug = lambda t: re.sub(r"[^A-Za-z0-9._]+", "-", t.strip()).strip("-")  # noqa: E731
    return "/".join(x for x in (slug(head), slug(tail)) if x) or "rule"


def _artifact_uri(path: str) -> str:
    p = Path(path)
    return p.as_uri() if p.is_absolute() else p.as_posix()


def render_sarif(results: dict[str, Any]) -> str:
    """SARIF 2.1.0 log (OASIS): one ``result`` per failing (level ``error``) or
    warning (level ``warning``) policy rule, located on the adapter's weights
    file, so code-scanning views list the gate's findings on the adapter PR.
    Every policy rule that ran is a ``reportingDescriptor`` of the driver."""
    rules = [r for r in results["verdict"]["rules"] if r["outcome"] != "not_run"]
    ids: list[str] = []
    for r in rules:
        rid, k = _rule_id(r["rule"]), 2
        while rid in ids:
            rid, k = f"{_rule_id(r['rule'])}-{k}", k + 1
        ids.append(rid)
    a = results["adapter"]
    weights = a.get("weights_file") or a["path"]
    location = {"physicalLocation": {"artifactLocation": {"uri": _artifact_uri(strip_controls(weights))}}}
    sarif_results = []
    for idx, (rid, r) in enumerate(zip(ids, rules)):
        if r["outcome"] not in ("fail", "warn"):
            continue
        props = {k: r.get(k) for k in ("value", "limit", "mode", "decision", "ci", "p_value", "p_adjusted", "n_items")
                 if r.get(k) is not None}
        sarif_results.append({
            "ruleId": rid, "ruleIndex": idx, "level": "error" if r["outcome"] == "fail" else "warning",
            "message": {"text": strip_controls(f"{r['rule']}: {r['reason']}")},
            "locations": [location],
            "partialFingerprints": {"adapterRule/v1": hashlib.sha256(f"{a['sha256']}|{rid}".encode()).hexdigest()},
            "properties": props,
        })
    log = {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "adapter-auditor", "version": str(results["run"]["auditor_version"]),
                "rules": [{"id": rid, "name": strip_controls(str(r["rule"])),
                           "shortDescription": {"text": strip_controls(str(r["rule"]))},
                           "defaultConfiguration": {"level": "error" if r["outcome"] == "fail" else "warning"
                                                    if r["outcome"] == "warn" else "note"}}
                          for rid, r in zip(ids, rules)]}},
            "artifacts": [{"location": location["physicalLocation"]["artifactLocation"],
                           "hashes": {"sha-256": a["sha256"]}}],
            "invocations": [{"executionSuccessful": True}],
            "results": sarif_results,
            "properties": {"verdict": results["verdict"]["verdict"], "base": strip_controls(str(results["base"]["name"])),
                           "nominalLabel": None if results["drift"].get("label") is None
                           else strip_controls(str(results["drift"]["label"]))},
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def write_reports(results: dict[str, Any], out: Path, keep_results: bool = True) -> dict[str, Path]:
    """Write every output into ``out`` (atomically, file by file); return their paths.

    Everything is rendered in memory first, then written, so the folder never
    mixes two runs. When an output cannot be rendered and ``keep_results`` is
    true (an audit), results.json is still written, alone (the other report
    files are removed), so a long audit's results are never lost to a report
    fault (``audit report`` re-renders them later); ``audit report`` passes
    False and leaves the folder as it was.

    Raises:
        AuditInputError: ``out`` cannot hold the reports, or the results cannot be rendered.
    """
    check_out_dir(out)
    try:
        text = json.dumps(results, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    except (TypeError, ValueError) as e:
        raise AuditInputError("results", f"cannot be written as JSON ({type(e).__name__}: {e})") from None
    try:
        rendered = {
            "results.json": text,
            "report.html": render_html(results),
            "summary.md": render_summary_md(results, f"{out.name or 'audit-report'}/report.html"),
            "junit.xml": render_junit(results),
            "results.sarif": render_sarif(results),
            "checklist.md": render_checklist(results),
        }
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, jinja2.UndefinedError) as e:
        if keep_results:
            # an audit's results are never lost: results.json alone, no stale report beside it
            for name in REPORT_FILES:
                (out / name).unlink(missing_ok=True)
            _write(out / "results.json", text)
        raise AuditInputError("results", f"incomplete or invalid results data ({type(e).__name__}: {e})") from None
    paths = {}
    for name, body in rendered.items():
        _write(out / name, body)
        paths[name] = out / name
    return paths


def _write(path: Path, text: str) -> None:
    try:
        _atomic_write(path, text)
    except OSError as e:
        raise AuditInputError(path, f"cannot be written ({e.strerror or type(e).__name__})") from None


def report_folder_names(paths: list[str]) -> list[str]:
    """One report sub-folder name per adapter of a multi-adapter audit: the
    adapter folder's name (the weights file's folder), made safe and unique."""
    names: list[str] = []
    for p in paths:
        stem = Path(p).name if Path(p).suffix != ".safetensors" else Path(p).parent.name
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "adapter"
        name, k = stem, 2
        while name in names or name in ("index.html",):
            name, k = f"{stem}-{k}", k + 1
        names.append(name)
    return names


def write_index(results_list: list[dict[str, Any]], folders: list[str], out: Path) -> Path:
    """Write ``index.html`` for a multi-adapter audit: one row per adapter with
    its verdict, nominal label, DriftScore (points), failing rules and a link."""
    rows = []
    for r, folder in zip(results_list, folders):
        d = r["drift"]
        rows.append({"path": r["adapter"]["path"], "verdict": r["verdict"]["verdict"], "label": d.get("label"),
                     "drift": _num(d.get("drift_score_pts"), "+.1f"), "folder": folder,
                     "href": f"{folder}/report.html",
                     "failing": [x for x in r["verdict"]["rules"] if x["outcome"] == "fail"]})
    n_fail = sum(row["verdict"] == "fail" for row in rows)
    html = _ENV.get_template("index.html.j2").render(
        rows=rows, n_fail=n_fail, verdict="fail" if n_fail else "pass",
        base=results_list[0]["base"]["name"], suite=results_list[0]["suite"]["name"])
    _atomic_write(out / "index.html", html)
    return out / "index.html"


def check_out_dir(out: Path) -> None:
    """Refuse an output path that cannot hold the reports, before any work is done.

    Raises:
        AuditInputError: ``out`` (or a parent) is a file, a report name in it is a
            folder, or the folder cannot be created or written.
    """
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            raise AuditInputError(p, "--out must be a folder, but this is a file")
    for name in REPORT_FILES:
        if (out / name).is_dir():
            raise AuditInputError(out / name, "is a folder; the report file cannot be written")
    # write a probe file into the nearest folder that exists, now rather than after a long
    # audit (creating nothing: an audit refused for bad input leaves no empty --out behind)
    here = next((p for p in (out, *out.parents) if p.exists()), Path("."))
    try:
        with tempfile.NamedTemporaryFile(dir=here, prefix=".auditor-write-check-"):
            pass
    except OSError as e:
        raise AuditInputError(out, f"--out cannot be written in {here} ({e.strerror or type(e).__name__})") from None


@functools.cache
def _results_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(RESULTS_SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_error(data: Any) -> str | None:
    """The first violation of the results.json schema (``auditor/schemas/results.schema.json``)
    as one line naming its key path, or None when ``data`` is valid."""
    errors = sorted(_results_validator().iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return None
    e = errors[0]
    where = ".".join(map(str, e.absolute_path)) or "top level"
    return f"does not match the results schema v{RESULTS_SCHEMA_VERSION} at {where}: {strip_controls(e.message)[:160]}"


def load_results(path: Path) -> dict[str, Any]:
    """Read a results.json written by this tool.

    Raises:
        AuditInputError: not readable JSON, or not a results file of a known schema version.
    """
    def _no_constant(name: str) -> None:
        raise ValueError(f"non-standard JSON number {name}")

    def _finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"number {text[:40]} is out of range")
        return value

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_no_constant, parse_float=_finite)
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # lone surrogates cannot be written back
    except (OSError, UnicodeDecodeError) as e:
        raise AuditInputError(path, f"cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise AuditInputError(path, f"invalid JSON: {e.msg} at line {e.lineno}") from None
    except UnicodeEncodeError:
        raise AuditInputError(path, "text with lone UTF-16 surrogates (\\ud800-\\udfff) cannot be reported") from None
    except ValueError as e:
        raise AuditInputError(path, f"invalid JSON: {str(e)[:120]}") from None
    except RecursionError:
        raise AuditInputError(path, "JSON nested too deeply") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if type(version) is not int or version != RESULTS_SCHEMA_VERSION:
        raise AuditInputError(path, f"not an adapter-auditor results.json (schema_version {RESULTS_SCHEMA_VERSION})")
    error = schema_error(data)
    if error:
        raise AuditInputError(path, error)
    v = data["verdict"]
    rules = v["rules"]
    if not rules:
        raise AuditInputError(path, "verdict.rules is empty: an audit always judges at least one rule")
    seen: set[str] = set()
    for it in data["items"]:
        if it["id"] in seen:
            raise AuditInputError(path, f"item id {strip_controls(it['id'])[:80]!r} appears twice in items")
        seen.add(it["id"])
    for c in data["comparisons"]:
        lo, hi = c["ci_low"], c["ci_high"]
        if lo is not None and hi is not None and lo > hi:
            raise AuditInputError(path, f"comparisons: {strip_controls(c['metric'])[:80]} has ci_low {lo} above "
                                        f"ci_high {hi}")
    if (v["verdict"] == "fail") != any(r["outcome"] == "fail" for r in rules):
        raise AuditInputError(path, f"verdict {v['verdict']!r} contradicts its rules (a verdict fails exactly when a rule fails)")
    return data
