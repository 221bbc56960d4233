"""``audit report RESULTS_JSON``: every report re-rendered from a results.json, and/or its Hub files written,
without loading any model."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import EXIT_PASS, EXIT_POLICY_FAIL, AuditInputError
from ..reports.hub_files import HubOutputs
from ..reports.terminal import print_summary
from ..reports.terminal import t as _t
from .console import console, echo_json
from .hub_options import hub_click_options


@click.command("report")
@click.argument("results_json", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="Folder to write the reports to (needed unless --eval-results or --model-card is given).")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "checklist"]), default="table",
              show_default=True, help="What to print: the summary table (stderr), JSON or a release checklist (stdout).")
@hub_click_options
def report_cmd(results_json: Path, out: Path | None, quiet: bool, as_json: bool, fmt: str, eval_results: Path | None,
               eval_results_dataset: str | None, model_card: str | None, overwrite: bool) -> None:
    """Re-render every report from a results.json, and/or write its Hub files, without loading any model."""
    from ..reports import ReportRenderError, load_results, render_checklist, report_folder_names, write_reports
    from ..reports.hub_files import check_hub_outputs, hub_targets, write_hub_outputs, written_line

    hub = HubOutputs(eval_results, eval_results_dataset, model_card, overwrite)
    hub.check_options()
    if out is None and not hub.wanted:
        raise click.UsageError("give --out DIR (the reports), --eval-results DIR or --model-card FILE")
    result = load_results(results_json)
    # {adapter} is the adapter's name as the run names it: its folder (a hub adapter: its repo's name or subfolder)
    ref = result.adapter.hub or {}
    targets = hub_targets(hub, report_folder_names([ref.get("subfolder") or ref.get("repo_id") or result.adapter.path]),
                          nested=False)
    if hub.wanted:  # every file checked before any is written
        check_hub_outputs(hub, targets, [c.metric for c in result.comparisons])
    paths: dict[str, Path] = {}
    try:
        if out is not None:
            paths = write_reports(result, out, keep_results=False)
    except ReportRenderError as e:
        raise AuditInputError(results_json, e.fault) from None
    written = write_hub_outputs(result, targets[0], hub) if hub.wanted else None
    fmt = "json" if as_json else fmt
    if not quiet:
        print_summary(console, result)
        if "report.html" in paths:
            console.print(f"report: {_t(paths['report.html'])} (and the other reports in {_t(out)})")
        if written is not None:
            console.print(_t(written_line(written)))
    if fmt == "json":
        echo_json(result.to_dict())
    elif fmt == "checklist":
        click.echo(render_checklist(result), nl=False)
    sys.exit(EXIT_PASS if result.passed else EXIT_POLICY_FAIL)
