"""report.html and index.html: self-contained HTML, rendered by jinja2 with autoescape on.

One file, no network (inline CSS, inline SVG charts, one inline script allowed by its sha256 in
the page's Content-Security-Policy; the items are a JSON data block, rendered by the script with
``textContent``). Model output is untrusted: every value shown loses its control characters and is
escaped by jinja2's autoescape (and by ``tojson`` in the data block).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
from pathlib import Path

import jinja2
import markupsafe

from ..records.training_run import RunSummary
from ..results import AuditResult
from ..util.text import strip_controls
from .run_json import limit_lines, trajectory_charts
from .view import (
    adapter_card,
    agreement_sentence,
    chart_groups,
    comparison_cells,
    group_summary,
    index_rows,
    item_rows,
    limit_note,
    no_drift_note,
    primary_metrics,
    rules_by_outcome,
    same_as_base_cells,
)

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("auditor.reports", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    # every value shown loses its control characters (ESC, BEL, C1) before it is escaped
    # (Markup, i.e. our own script and tojson's already-escaped JSON, is left as it is)
    finalize=lambda v: strip_controls(v) if isinstance(v, str) and not isinstance(v, markupsafe.Markup) else v,
)
_ENV.globals["cells"] = comparison_cells
_ENV.globals["limit_note"] = limit_note
_ENV.globals["no_drift_note"] = no_drift_note

_BROWSER_JS = (Path(__file__).parent / "templates" / "browser.js").read_text(encoding="utf-8")
_BROWSER_JS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_BROWSER_JS.encode("utf-8")).digest()).decode()


def render_html(result: AuditResult) -> str:
    """The self-contained HTML report of one audit (see the module doc)."""
    primary = primary_metrics(result)
    parts = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    return _ENV.get_template("report.html.j2").render(
        groups=group_summary(result), charts=chart_groups(result), browser_rows=item_rows(result, primary),
        primary=primary, card=adapter_card(result), rules_by_outcome=rules_by_outcome(result.verdict.rules),
        same_as_base=same_as_base_cells(result.comparisons, result.agreement_with_base),
        agreement_sentence=agreement_sentence(result.agreement_with_base),
        script=_BROWSER_JS, script_hash=_BROWSER_JS_HASH, **parts)


def render_index(results: list[AuditResult], folders: list[str], run: RunSummary | None = None) -> str:
    """``index.html`` of a multi-adapter audit: one row per adapter with its verdict, nominal label,
    DriftScore (points), failing rules and a link to its report. For a training run (``run``), the checkpoints'
    step and the run's trajectory first: the last passing and first failing checkpoints, and one inline SVG chart
    per metric of Δ with its 95% interval over ``global_step`` (:func:`~auditor.reports.run_json.trajectory_charts`)."""
    rows = index_rows(results, folders, run)
    n_fail = sum(row["verdict"] == "fail" for row in rows)
    charts = trajectory_charts(run, limit_lines(results)) if run is not None else []
    return _ENV.get_template("index.html.j2").render(
        rows=rows, n_fail=n_fail, verdict="fail" if n_fail else "pass",
        base=results[0].base.name, suite=results[0].suite.name, run=run, charts=charts,
        not_audited=[c for c in run.checkpoints if c.verdict == "not_audited"] if run is not None else [])
