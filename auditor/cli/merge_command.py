"""``audit merge SHARDS ...``: one index of many adapters from the results.json files of CI shards
(:mod:`auditor.reports.merge`), without loading any model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import EXIT_PASS, EXIT_POLICY_FAIL, AuditInputError
from ..reports.merge import merge_shards, write_merged
from ..reports.terminal import print_adapter_summary, t
from .console import console


@click.command("merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(), default="audit-report", show_default=True,
              help="Folder for the merged index: index.html, summary.md and one report folder per adapter.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors; the exit code carries the verdict.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {verdict, adapters: [results.json's content, ...]} on stdout, as `audit A B --json`.")
def merge_cmd(shards: tuple[Path, ...], out: str, quiet: bool, as_json: bool) -> None:
    """Merge the results of CI shards into one index, without loading any model.

    \b
    SHARDS: the shards' report folders (as `audit ... --out shard-N` wrote them; searched for
    results.json at any depth, so a folder of downloaded artifacts will do) or results.json files.
    Every file is checked as `audit report` checks one; the same adapter in two shards, and shards
    audited against another base, suite, policy or --baseline, or with another backend, --dtype or
    --chat-template, are refused. OUT (a folder of its own: not a shard, nor holding one) gets what
    `audit A B C --out OUT` writes (one report folder per adapter, re-rendered, and index.html; rows
    in adapter path order) plus summary.md, the index in Markdown for $GITHUB_STEP_SUMMARY. The exit
    code is that run's: 1 when any adapter does not pass.
    """
    if not out:  # Path("") would be the current folder
        raise AuditInputError("--out", "is empty: give the folder for the merged index (e.g. --out audit-report)")
    results = [s.result for s in merge_shards(shards, Path(out))]
    merged = write_merged(results, Path(out))
    passed = all(r.passed for r in results)
    if not quiet:
        for result, paths in zip(results, merged.paths):
            print_adapter_summary(console, result, paths["report.html"], several=True)
        n_fail = sum(r.verdict.verdict == "fail" for r in results)
        console.print(f"{n_fail} of {len(results)} adapters fail; index: {t(merged.index)}")
    if as_json:  # as `audit A B --json`
        click.echo(json.dumps({"verdict": "pass" if passed else "fail", "adapters": [r.to_dict() for r in results]},
                              indent=2, ensure_ascii=False))
    sys.exit(EXIT_PASS if passed else EXIT_POLICY_FAIL)
