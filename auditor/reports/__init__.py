"""Stage 7 — reports: every output of an audit, rendered from its :class:`~auditor.results.AuditResult`.

* :mod:`.view`: the view model shared by every format and the terminal;
* :mod:`.html`: report.html and index.html; :mod:`.markdown`: summary.md and checklist.md;
  :mod:`.junit`: junit.xml; :mod:`.sarif`: results.sarif;
* :mod:`.results_file`: results.json written and read back (schema-checked, then typed);
* :mod:`.terminal`: the summary table on stderr.

``audit report results.json --out DIR`` re-renders every output without a model. Model output is
untrusted text: the HTML is rendered by jinja2 with autoescape on, Markdown cells are escaped, and
XML is written by ElementTree (which escapes).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import jinja2

from ..errors import AuditInputError
from ..records.training_run import RunSummary
from ..results import AuditResult
from ..util.files import atomic_write
from .html import render_html, render_index
from .junit import render_junit
from .markdown import render_checklist, render_summary_md
from .results_file import load_results, results_json
from .sarif import render_sarif
from .training_run import run_json, run_summary

REPORT_FILES = ("results.json", "report.html", "summary.md", "junit.xml", "results.sarif", "checklist.md")


class ReportRenderError(AuditInputError):
    """The results cannot be rendered (incomplete or invalid data); ``audit report`` names its file."""

    def __init__(self, fault: str) -> None:
        super().__init__("results", fault)


def _write(path: Path, text: str) -> None:
    try:
        atomic_write(path, text.encode("utf-8"), mode=0o644)  # reports are meant to be shared
    except OSError as e:
        raise AuditInputError(path, f"cannot be written ({e.strerror or type(e).__name__})") from None


def write_reports(result: AuditResult, out: Path, keep_results: bool = True) -> dict[str, Path]:
    """Write every output into ``out`` (atomically, file by file); return their paths.

    Everything is rendered in memory first, then written, so the folder never
    mixes two runs. When an output cannot be rendered and ``keep_results`` is
    true (an audit), results.json is still written, alone (the other report
    files are removed), so a long audit's results are never lost to a report
    fault (``audit report`` re-renders them later); ``audit report`` passes
    False and leaves the folder as it was.

    Raises:
        AuditInputError: ``out`` cannot hold the reports.
        ReportRenderError: the results cannot be rendered.
    """
    check_out_dir(out)
    try:
        text = results_json(result)
    except AuditInputError as e:
        raise ReportRenderError(e.fault) from None
    try:
        rendered = {
            "results.json": text,
            "report.html": render_html(result),
            "summary.md": render_summary_md(result, f"{out.name or 'audit-report'}/report.html"),
            "junit.xml": render_junit(result),
            "results.sarif": render_sarif(result),
            "checklist.md": render_checklist(result),
        }
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, jinja2.UndefinedError) as e:
        if keep_results:
            # an audit's results are never lost: results.json alone, no stale report beside it
            for name in REPORT_FILES:
                (out / name).unlink(missing_ok=True)
            _write(out / "results.json", text)
        raise ReportRenderError(f"incomplete or invalid results data ({type(e).__name__}: {e})") from None
    paths = {}
    for name, body in rendered.items():
        _write(out / name, body)
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


def write_index(results: list[AuditResult], folders: list[str], out: Path, run: RunSummary | None = None) -> Path:
    """Write ``index.html`` for a multi-adapter audit or a training run's (``run``: its trajectory charts on top;
    :func:`auditor.reports.html.render_index`)."""
    _write(out / "index.html", render_index(results, folders, run))
    return out / "index.html"


def write_run_json(summary: RunSummary, out: Path) -> Path:
    """Write ``out/run.json``, checked against ``auditor/schemas/run.schema.json``
    (:func:`auditor.reports.training_run.run_json`).

    Raises:
        AuditInputError: ``out`` cannot be written.
    """
    _write(out / "run.json", run_json(summary))
    return out / "run.json"


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


__all__ = ["REPORT_FILES", "ReportRenderError", "check_out_dir", "load_results", "render_checklist", "render_html",
           "render_junit", "render_sarif", "render_summary_md", "report_folder_names", "run_summary",
           "write_index", "write_reports", "write_run_json"]
