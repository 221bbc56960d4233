"""Stage 7 — reports: every output of an audit, rendered from its :class:`~auditor.results.AuditResult`.

* :mod:`.view`: the view model shared by every format and the terminal;
* :mod:`.html`: report.html and index.html; :mod:`.markdown`: summary.md and checklist.md;
  :mod:`.junit`: junit.xml; :mod:`.sarif`: results.sarif;
* :mod:`.results_file`: results.json written and read back (schema-checked, then typed);
* :mod:`.terminal`: the summary table on stderr;
* :mod:`.merge`: ``audit merge``, the results.json files of CI shards → one index;
* :mod:`.eval_results`: the Hugging Face Hub's ``.eval_results/*.yaml``; :mod:`.model_card`: the "Audit against
  the base" section of a model card; :mod:`.hub_files`: where they go for each adapter.

``audit report results.json --out DIR`` re-renders every output without a model. Model output is
untrusted text: the HTML is rendered by jinja2 with autoescape on, Markdown cells are escaped, and
XML is written by ElementTree (which escapes).
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from ..errors import AuditInputError
from ..records.training_run import RunSummary
from ..results import AuditResult
from ..util.files import check_writable_folder, write_text_file
from .eval_results import write_eval_results
from .html import render_html, render_index
from .hub_files import HubOutputs, check_hub_outputs, hub_targets, write_hub_outputs
from .junit import render_junit
from .markdown import render_checklist, render_summary_md
from .model_card import write_model_card
from .results_file import load_results, results_json
from .run_json import run_json, run_summary
from .sarif import render_sarif

REPORT_FILES = ("results.json", "report.html", "summary.md", "junit.xml", "results.sarif", "checklist.md")


class ReportRenderError(AuditInputError):
    """The results cannot be rendered (incomplete or invalid data); ``audit report`` names its file."""

    def __init__(self, fault: str) -> None:
        super().__init__("results", fault)


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
            "summary.md": render_summary_md(result),
            "junit.xml": render_junit(result),
            "results.sarif": render_sarif(result),
            "checklist.md": render_checklist(result),
        }
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, jinja2.UndefinedError) as e:
        if keep_results:
            # an audit's results are never lost: results.json alone, no stale report beside it
            for name in REPORT_FILES:
                (out / name).unlink(missing_ok=True)
            write_text_file(out / "results.json", text)
        raise ReportRenderError(f"incomplete or invalid results data ({type(e).__name__}: {e})") from None
    paths = {}
    for name, body in rendered.items():
        write_text_file(out / name, body)
        paths[name] = out / name
    return paths


#: the files a multi-adapter report folder holds beside the adapters' folders (``audit A B --out``: index.html, and
#: run.json for a training run; ``audit merge``: summary.md too): never an adapter's folder name
INDEX_FILES = ("index.html", "summary.md", "run.json")


def report_folder_names(paths: list[str]) -> list[str]:
    """One report sub-folder name per adapter of a multi-adapter audit: the
    adapter folder's name (the weights file's folder), made safe and unique
    (``name-2``, ``name-3``, ...), never one of :data:`INDEX_FILES`; names are
    compared case-insensitively, so no two collide on a macOS or Windows disk."""
    names: list[str] = []
    taken = {n.casefold() for n in INDEX_FILES}
    for p in paths:
        stem = Path(p).name if Path(p).suffix != ".safetensors" else Path(p).parent.name
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "adapter"
        name, k = stem, 2
        while name.casefold() in taken:
            name, k = f"{stem}-{k}", k + 1
        names.append(name)
        taken.add(name.casefold())
    return names


def write_index(results: list[AuditResult], folders: list[str], out: Path, run: RunSummary | None = None) -> Path:
    """Write ``index.html`` for a multi-adapter audit or a training run's (``run``: its trajectory charts on top;
    :func:`auditor.reports.html.render_index`)."""
    write_text_file(out / "index.html", render_index(results, folders, run))
    return out / "index.html"


def write_run_json(summary: RunSummary, out: Path) -> Path:
    """Write ``out/run.json``, checked against ``auditor/data/schemas/run.schema.json``
    (:func:`auditor.reports.run_json.run_json`).

    Raises:
        AuditInputError: ``out`` cannot be written.
    """
    write_text_file(out / "run.json", run_json(summary))
    return out / "run.json"


def check_out_dir(out: Path) -> None:
    """Refuse an output path that cannot hold the reports, before any work is done.

    Raises:
        AuditInputError: ``out`` (or a parent) is a file, a report name in it is a
            folder, or the folder cannot be created or written.
    """
    check_writable_folder(out, "--out")  # now rather than after a long audit; creates nothing
    check_no_folders(out, REPORT_FILES)


def check_no_folders(out: Path, names: tuple[str, ...]) -> None:
    """Refuse a folder where one of the files ``names`` is to be written in ``out``.

    Raises:
        AuditInputError: naming that folder.
    """
    for name in names:
        if (out / name).is_dir():
            raise AuditInputError(out / name, "is a folder; the report file cannot be written")


__all__ = ["INDEX_FILES", "REPORT_FILES", "HubOutputs", "ReportRenderError", "check_hub_outputs", "check_no_folders",
           "check_out_dir", "hub_targets",
           "load_results", "render_checklist", "render_html", "render_junit", "render_sarif", "render_summary_md",
           "report_folder_names", "run_summary", "write_eval_results", "write_hub_outputs", "write_index",
           "write_model_card", "write_reports", "write_run_json"]
