"""Stage 7 — report: results.json, report.html, summary.md, junit.xml.

Everything is rendered from the plain ``results`` dict that is also written
as ``results.json``, so ``audit report results.json --out DIR`` re-renders
every output without a model. Model output is untrusted text: the HTML is
rendered by jinja2 with autoescape on, Markdown cells are escaped, and XML is
written by ElementTree (which escapes).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jinja2

from .cachedir import atomic_write
from .errors import AuditInputError

RESULTS_SCHEMA_VERSION = 2
REPORT_FILES = ("results.json", "report.html", "summary.md", "junit.xml")
_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("auditor", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
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
    ci = "—"
    if c.get("ci_low") is not None and c.get("ci_high") is not None:
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


def worst_regressions(results: dict[str, Any], n: int = 8) -> list[dict[str, Any]]:
    """Items the adapter made worse on their capability's first metric, largest first."""
    primary: dict[str, tuple[str, bool]] = {}
    for c in results["comparisons"]:
        primary.setdefault(c["capability"], (c["metric"].split(".", 1)[1], c["higher_is_better"]))
    rows = []
    for it in results["items"]:
        metric, hib = primary[it["capability"]]
        b, a = it["base"]["scores"].get(metric), it["adapter"]["scores"].get(metric)
        if b is None or a is None:
            continue
        loss = (b - a) if hib else (a - b)
        if loss > 0:
            rows.append({"id": it["id"], "metric": metric, "base_value": b, "adapter_value": a, "loss": loss,
                         "prompt": it["prompt"], "base_text": it["base"]["text"], "adapter_text": it["adapter"]["text"]})
    rows.sort(key=lambda r: (-r["loss"], r["id"]))
    return rows[:n]


def render_html(results: dict[str, Any]) -> str:
    """The self-contained HTML report (no external resources)."""
    return _ENV.get_template("report.html.j2").render(regressions=worst_regressions(results), **results)


def _md(text: Any) -> str:
    """Escape text for a Markdown table cell."""
    s = strip_controls(str(text).replace("\r", " ").replace("\n", " ")).replace("\\", "\\\\").replace("|", "\\|")
    for ch in "<>*_`[]#":
        s = s.replace(ch, "\\" + ch)
    return s


def render_summary_md(results: dict[str, Any]) -> str:
    """Short Markdown summary for ``$GITHUB_STEP_SUMMARY`` or a PR comment."""
    v = results["verdict"]
    icon = "✅" if v["verdict"] == "pass" else "❌"
    lines = [f"## {icon} adapter-auditor: {v['verdict'].upper()}", "",
             f"Adapter `{_md(Path(results['adapter']['path']).name)}` on base `{_md(results['base']['name'])}`, "
             f"suite {_md(results['suite']['name'])}.", ""]
    failing = [r for r in v["rules"] if r["outcome"] == "fail"]
    if failing:
        lines += ["**Failing rules**", ""] + [f"- {_md(r['rule'])}: {_md(r['reason'])}" for r in failing] + [""]
    conf = results["comparisons"][0].get("confidence", 0.95) if results["comparisons"] else 0.95
    lines += [f"| group | metric | base | adapter | Δ | {100 * conf:.0f}% CI | p | base-only / adapter-only |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in results["comparisons"]:
        k = comparison_cells(c)
        unit = "" if k["unit"] == "points" else f" {k['unit']}"
        lines.append(f"| {_md(c['group'])} | {_md(c['metric'])} | {k['base']} | {k['adapter']} | {k['delta']}{unit} | "
                     f"{k['ci']} | {k['p']} | {k['discordant']} |")
    d = results["drift"]
    if d["drift_score_pts"] is not None:
        lines += ["", f"Nominal label **{_md(d['label'])}**: TargetGain {d['target_gain_pts']:+.1f}, "
                      f"OffTargetGain {d['off_target_gain_pts']:+.1f}, DriftScore {d['drift_score_pts']:+.1f} points"
                      + (f" ({100 * d.get('confidence', 0.95):.0f}% CI [{d['ci_low_pts']:+.1f}, {d['ci_high_pts']:+.1f}])"
                         if d.get("ci_low_pts") is not None else "")
                      + (" (label mismatch)" if d["mismatch"] else "")]
    lines += ["", "Δ: adapter − base, in points for rates. CI: paired bootstrap. p: exact McNemar for pass/fail "
                  "items, Wilcoxon signed-rank otherwise, permutation for context gaps."]
    lines += ["", "Full report: `report.html`"]
    return "\n".join(lines) + "\n"


def render_junit(results: dict[str, Any]) -> str:
    """JUnit XML: one test case per policy rule; a failing rule is a <failure>."""
    rules = results["verdict"]["rules"]
    suite = ET.Element("testsuite", name="adapter-auditor", tests=str(len(rules)),
                       failures=str(sum(r["outcome"] == "fail" for r in rules)),
                       skipped=str(sum(r["outcome"] == "not_run" for r in rules)))
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


def write_reports(results: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write every output into ``out`` (atomically, file by file); return their paths."""
    try:
        rendered = {
        "results.json": json.dumps(results, indent=2, ensure_ascii=False, sort_keys=False) + "\n",
        "report.html": render_html(results),
        "summary.md": render_summary_md(results),
        "junit.xml": render_junit(results),
        }
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, jinja2.UndefinedError) as e:
        raise AuditInputError("results", f"incomplete or invalid results data ({type(e).__name__}: {e})") from None
    check_out_dir(out)
    paths = {}
    for name, text in rendered.items():
        _atomic_write(out / name, text)
        paths[name] = out / name
    return paths


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
        AuditInputError: ``out`` (or a parent) is a file, or a report name in it is a folder.
    """
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            raise AuditInputError(p, "--out must be a folder, but this is a file")
    for name in REPORT_FILES:
        if (out / name).is_dir():
            raise AuditInputError(out / name, "is a folder; the report file cannot be written")


def load_results(path: Path) -> dict[str, Any]:
    """Read a results.json written by this tool.

    Raises:
        AuditInputError: not readable JSON, or not a results file of a known schema version.
    """
    def _no_constant(name: str) -> None:
        raise ValueError(f"non-standard JSON number {name}")

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_no_constant)
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
    v = data.get("verdict")
    rules = v.get("rules") if isinstance(v, dict) else None
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise AuditInputError(path, "verdict.rules is missing or not a list of rules")
    if v.get("verdict") not in ("pass", "fail"):
        raise AuditInputError(path, f"verdict.verdict must be 'pass' or 'fail', not {str(v.get('verdict'))[:40]!r}")
    bad = [r.get("outcome") for r in rules if r.get("outcome") not in ("pass", "warn", "fail", "not_run")]
    if bad:
        raise AuditInputError(path, f"a rule outcome must be pass, warn, fail or not_run, not {str(bad[0])[:40]!r}")
    if (v["verdict"] == "fail") != any(r["outcome"] == "fail" for r in rules):
        raise AuditInputError(path, f"verdict {v['verdict']!r} contradicts its rules (a verdict fails exactly when a rule fails)")
    return data
