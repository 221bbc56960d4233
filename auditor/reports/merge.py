"""``audit merge``: one index of many adapters from the results.json files of several shards.

A fleet of adapters audited as CI shards (a matrix job each, ``audit A B --out shard-0``, ``audit C D --out
shard-1``) comes back as folders of results.json files. :func:`merge_shards` reads them (each checked as ``audit
report`` checks one: :func:`~auditor.reports.results_file.load_results`), refuses what one multi-adapter run would
never hold together, and :func:`write_merged` writes what that run writes: each adapter's reports re-rendered in
``out/<adapter folder name>/`` and ``out/index.html``, plus ``out/summary.md``, the Markdown index for
``$GITHUB_STEP_SUMMARY`` (:func:`~auditor.reports.markdown.render_index_md`). ``audit merge`` is its
command (:mod:`auditor.cli.merge_command`).

Refused (one line naming the file, exit code 2):

* the same adapter in two results files (same content digest: weights and config, as ``audit A A`` refuses it),
  or one adapter path audited with two different contents (results from two commits): shards must not overlap,
  and picking one of two verdicts would hide which one the gate used;
* results audited against another base (its folder digest), suite (name, version and the suite's own items:
  ``--capability`` and ``--limit`` change them), policy (its canonical sha256) or ``--baseline`` adapter than the
  first file's: one index would mix verdicts that were not judged alike;
* results generated otherwise (:func:`generation_setting`): another backend or decoding, another ``--dtype`` (also
  what ``--dtype auto`` chose on another runner), or prompts rendered otherwise (``--chat-template``, its
  template's content, ``--chat-template-arg``, a suite's worked examples): the base's answers differ, so the base pass the index says is
  shared was not. What a CI matrix varies freely stays free: paths, the runner's machine and placement, batch sizes
  and engine sizing, the cache's location, timings, versions of the packages.
* an ``--out`` that is or holds an input (it would overwrite a shard's reports: the merged files are refused
  before anything is written).

The rows are in adapter path order (the order the GitHub Action lists changed adapters), whatever the order of the
shards, so a merge is the same however the matrix split the adapters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AuditInputError
from ..results import AuditResult
from ..util.files import write_text_file
from ..util.hashing import canonical_sha256
from ..util.text import strip_controls
from .markdown import render_index_md
from .results_file import load_results


@dataclass(frozen=True)
class Shard:
    """One results file of a merge: where it was read from and the audit it holds."""

    path: Path
    result: AuditResult


@dataclass(frozen=True)
class MergedReports:
    """What :func:`write_merged` wrote: each adapter's report folder and files (report name → path), in row order,
    ``index.html`` and ``summary.md``."""

    folders: list[Path]
    paths: list[dict[str, Path]]
    index: Path
    summary: Path


def check_out_holds_no_input(paths: Sequence[Path], out: Path) -> None:
    """Refuse an ``--out`` that is a shard given as input, or a folder that holds one (``--out .`` with the shards
    below it): the merge would write over that shard's reports (its index.html, its adapters' folders) and, on a
    second merge, skip its results as an earlier merge's copies. ``--out`` inside an input folder is fine (its
    copies are skipped: :func:`results_files`).

    Raises:
        AuditInputError: naming ``--out``.
    """
    inside = out.resolve()
    for p in paths:
        if p.resolve().is_relative_to(inside):
            what = "is the shard" if p.resolve() == inside else "holds the input"
            raise AuditInputError("--out", f"{out} {what} {p}: the merge would write over the shards' reports; "
                                           "give --out a folder of its own (e.g. --out audit-report)")


def results_files(paths: Sequence[Path], out: Path | None = None) -> list[Path]:
    """The results.json files that ``paths`` name: a file as it is, a folder searched for ``results.json`` at any
    depth (a shard's ``--out`` folder: ``results.json`` for one adapter, ``<name>/results.json`` for several; a
    folder of downloaded artifacts: one level more). Files inside ``out`` (an earlier merge's re-rendered copies)
    are left out; a file named twice is read once.

    Returns:
        Paths in the order given, each folder's files sorted.

    Raises:
        AuditInputError: a path that does not exist, a folder holding no results.json, or an ``out`` that is or
            holds one of ``paths`` (:func:`check_out_holds_no_input`).
    """
    if out is not None:
        check_out_holds_no_input(paths, out)
    inside = out.resolve() if out is not None else None
    found: dict[Path, Path] = {}
    for p in paths:
        if p.is_dir():
            hits = sorted(f for f in p.rglob("results.json") if f.is_file()
                          and not (inside is not None and f.resolve().is_relative_to(inside)))
            if not hits:
                raise AuditInputError(p, "holds no results.json (give shard report folders, as `audit --out` "
                                         "wrote them, or results.json files)")
        elif p.exists():
            hits = [p]
        else:
            raise AuditInputError(p, "no such file or folder")
        for f in hits:
            found.setdefault(f.resolve(), f)
    return list(found.values())


def audit_setting(result: AuditResult) -> dict[str, tuple[str, str]]:
    """What every audit of one index must share, as ``{what: (identity, one line naming it)}``, the identities
    content digests (paths differ between machines): the base (its folder digest), the suite (name, version and
    the sha256 of its own items, those of the first look: rounds add items per adapter; its line names the
    capabilities audited and ``--limit``, the options that choose the items), the policy (the canonical
    sha256 of its content) and the ``--baseline`` adapter (its content digest)."""
    b, s, p = result.base, result.suite, result.policy
    own_items = canonical_sha256([[it.id, [dict(m) for m in it.messages], it.max_new_tokens, it.target]
                                  for it in result.items if it.round == 1])
    base = b.folder_sha256 or b.content_hash
    prev = result.baseline.adapter if result.baseline is not None else None
    prev_digest = "" if prev is None else prev.content_sha256 or prev.sha256
    # what chose the items, named as the options that did: --capability, --limit
    chosen = f"--capability {' '.join(result.run.capabilities)}" + (
        f", --limit {result.run.limit}" if result.run.limit else "")
    return {
        "base": (base, f"base {b.name!r} (folder sha256 {base[:12]})"),
        "suite": (f"{s.name}\0{s.version}\0{own_items}",
                  f"suite {s.name!r} v{s.version} with {chosen} (items sha256 {own_items[:12]})"),
        "policy": (p.sha256, f"policy {p.path!r} (sha256 {p.sha256[:12]})"),
        "baseline": (prev_digest, "no --baseline" if prev is None else
                     f"--baseline {prev.path!r} (sha256 {prev_digest[:12]})"),
    }


def generation_setting(result: AuditResult) -> dict[str, tuple[str, str] | None]:
    """What changes the answers, beyond :func:`audit_setting`, as ``{what: (identity, one line naming it)}``, None
    where this result cannot tell (it agrees with any):

    * ``backend``: the backend that generated (hf, vllm, openai) and its decoding;
    * ``dtype``: the weights' dtype (``--dtype``, or what ``auto`` chose on that runner);
    * ``chat template``: how the base's prompts were rendered: the template's content (sha256; the plain prompts of
      ``--chat-template none`` have their own), the tokenizer, ``--chat-template-arg`` and a folded system role;
    * ``template args``: ``--chat-template-arg`` as any templated variant records it (None when every variant was
      prompted plainly: the args then change nothing);
    * ``adapter template``: for an adapter that ships its own chat template (differing from the base's), whether its
      answers were prompted with it (``--chat-template adapter``, the default) or not (``base``, ``none``, FILE);
      None for an adapter that ships none, which both settings prompt alike;
    * ``prompt``: the first look's rendered prompts (what the base was asked, a suite's worked examples included:
      ``fewshot`` samples are in no item's messages).

    Paths (template files, tokenizer folders), batch sizes, engine sizing, the machine and timings are left out:
    CI shards on other runners differ in them and their answers do not.
    """
    run = result.run
    prompts: dict[str, dict[str, Any]] = {v: dict(p) for v, p in (run.prompts or {}).items()}
    base = prompts.get("base")
    templated = [p for p in prompts.values() if p.get("chat_template") != "none"]
    args: dict[str, Any] | None = dict(templated[0].get("template_args") or {}) if templated else None
    out: dict[str, tuple[str, str] | None] = {
        "backend": (f"{run.backend}\0{run.decoding}", f"backend {run.backend} ({run.decoding} decoding)"),
        "dtype": (run.dtype, f"dtype {run.dtype} ({run.dtype_reason or 'as recorded'})"),
        "chat template": None, "template args": None, "adapter template": None,
    }
    if base is not None:
        plain = base.get("chat_template") == "none"
        out["chat template"] = (
            canonical_sha256([base.get("template_sha256"), base.get("tokenizer"), base.get("template_args") or {},
                              base.get("system_role")]),
            "the base prompted " + ("plainly (--chat-template none)" if plain else
                                    f"with the template sha256 {str(base.get('template_sha256'))[:12]}"
                                    + (f", system role {base['system_role']}" if base.get("system_role") else "")))
    if args is not None:
        out["template args"] = (canonical_sha256(args), "--chat-template-arg " + (
            " ".join(f"{k}={json.dumps(v)}" for k, v in sorted(args.items())) or "none"))
    own = result.adapter.tokenizer_files
    if own is not None and own.chat_template == "differs" and "adapter" in prompts:
        used = prompts["adapter"].get("chat_template") == "adapter"
        out["adapter template"] = (str(used), "the adapter's own chat template " + (
            "used (--chat-template adapter)" if used else "not used (--chat-template base, none or FILE)"))
    first_look = canonical_sha256([[it.id, it.rendered_prompt] for it in result.items if it.round == 1])
    out["prompt"] = (first_look, f"the items' rendered prompts (sha256 {first_look[:12]}, worked examples included)")
    return out


def adapter_identity(result: AuditResult) -> str:
    """The adapter's content digest (weights and config; the weights' sha256 for results that lack it)."""
    return result.adapter.content_sha256 or result.adapter.sha256


def merge_shards(paths: Sequence[Path], out: Path | None = None) -> list[Shard]:
    """Read and check every results.json that ``paths`` name (:func:`results_files`), in adapter path order.

    Raises:
        AuditInputError: a file that is not a results.json of this schema version (unreadable, invalid, newer or
            older, a run.json), an adapter in two files, or an audit setting that differs from the first file's
            (see the module doc); the line names the file and, for a clash, the file it clashes with.
    """
    shards = [Shard(f, load_results(f)) for f in results_files(paths, out)]
    #: what → (identity, its line, the file that set it): the first file that records it
    setting: dict[str, tuple[str, str, Path]] = {}
    by_digest: dict[str, Shard] = {}
    by_path: dict[str, Shard] = {}
    for shard in shards:
        r = shard.result
        named_settings: dict[str, tuple[str, str] | None] = {**audit_setting(r), **generation_setting(r)}
        for what, named in named_settings.items():
            if named is None:
                continue
            key, line = named
            if what not in setting:
                setting[what] = (key, line, shard.path)
            elif key != setting[what][0]:
                first_key, first_line, first_path = setting[what]
                generated = what not in ("base", "suite", "policy", "baseline")
                raise AuditInputError(shard.path, (
                    f"another {what} than {first_path}: {line}, not {first_line}; "
                    + ("the items were asked otherwise (another suite's worked examples or prompt text): merge the "
                       "shards of one audit" if what == "prompt" else
                       "the base pass the index says is shared was not: audit every shard with the same backend, "
                       "--dtype (pin it: auto follows each runner's hardware) and --chat-template options"
                       if generated else
                       "one index would mix verdicts judged differently: merge the shards of one audit (one base, "
                       "suite, policy and --baseline)")))
        digest = adapter_identity(r)
        if (seen := by_digest.get(digest)) is not None:
            raise AuditInputError(shard.path, f"audits the same adapter (weights and config sha256 {digest[:12]}) "
                                              f"as {seen.path}: each adapter belongs to one shard (do the shards' "
                                              "adapter lists overlap, or is a stale artifact among them?)")
        if (seen := by_path.get(r.adapter.path)) is not None:
            raise AuditInputError(shard.path, f"audits adapter {strip_controls(r.adapter.path)!r} with other "
                                              f"content (sha256 {digest[:12]}) than {seen.path} "
                                              f"({adapter_identity(seen.result)[:12]}): results of two commits?")
        by_digest[digest] = by_path[r.adapter.path] = shard
    return sorted(shards, key=lambda s: (s.result.adapter.path, adapter_identity(s.result)))


def check_merge_out(results: Sequence[AuditResult], out: Path) -> list[Path]:
    """Each adapter's report folder under ``out`` (``out/<adapter folder name>``, as a multi-adapter run names
    them: :func:`~auditor.reports.report_folder_names`), each checked before anything is written.

    Raises:
        AuditInputError: a folder that cannot hold the reports, or an index file (index.html, summary.md) that is a
            folder.
    """
    from . import check_no_folders, check_out_dir, report_folder_names

    check_out_dir(out)
    check_no_folders(out, ("index.html", "summary.md"))
    folders = [out / n for n in report_folder_names([r.adapter.path for r in results])]
    for f in folders:
        check_out_dir(f)
    return folders


def write_merged(results: Sequence[AuditResult], out: Path) -> MergedReports:
    """Write what a multi-adapter run writes for ``results`` (in that order): each one's reports re-rendered
    into its folder (:func:`~auditor.reports.write_reports`, as ``audit report`` does), ``out/index.html``
    (:func:`~auditor.reports.write_index`), and ``out/summary.md`` (the Markdown index with the summaries of the
    adapters that did not pass, :func:`~auditor.reports.markdown.render_index_md`).

    Raises:
        AuditInputError: ``out`` cannot hold the reports, or a result cannot be rendered (naming its adapter).
    """
    from . import ReportRenderError, write_index, write_reports

    folders = check_merge_out(results, out)
    paths = []
    for result, folder in zip(results, folders):
        try:
            paths.append(write_reports(result, folder, keep_results=False))
        except ReportRenderError as e:
            raise AuditInputError(result.adapter.path, e.fault) from None
    index = write_index(list(results), [f.name for f in folders], out)
    summaries = [(p["summary.md"].read_text(encoding="utf-8")) for p in paths]
    write_text_file(out / "summary.md", render_index_md(list(results), [f.name for f in folders], summaries))
    return MergedReports(folders, paths, index, out / "summary.md")
