"""The public Python API: audit adapters from a notebook or a training script.

>>> from auditor import audit
>>> result = audit("path/to/adapter", suite="smoke", label="math", budget="auto,10m", log=print)
>>> result.verdict.verdict, [r.rule for r in result.verdict.failing]
>>> result.comparisons[0].delta, result.drift.drift_score_pts    # points
>>> trainer.log(result.flat_metrics())                          # {"audit/verdict_pass": 1.0, ...}

The keyword arguments are the ``audit`` command's options under their Python names: the fields of
:class:`~auditor.options.AuditOptions` (``base``, ``policy``, ``suite``, ``label``, ``limit``,
``capabilities``, ``batch_size``, ``backend``, ...) and the command's own names where they differ
(:data:`CLI_NAMES`: ``budget="10m"``, ``no_cache=True``, ``quiet=True``, ``max_adapter_size="500MB"``);
or a typed ``options=AuditOptions(...)``, which keywords beside it override. Nothing is printed
unless ``log`` is given (it gets plain text), and no report file is written unless ``out`` is.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import AuditInputError
from .inspect.checkpoints import TrainingRun
from .options import AuditOptions, parse_budget
from .records.training_run import RunSummary
from .results import AuditResult

if TYPE_CHECKING:
    from .reports.hub import HubOutputs

#: the ``audit`` command's option names (click's Python names) that are not :class:`AuditOptions` fields,
#: each with the fields it sets: ``budget`` (``--budget``, read by :func:`auditor.options.parse_budget`),
#: ``no_cache`` (``--no-cache``: ``cache=not no_cache``), ``quiet`` (``--quiet``: ``progress=not quiet``, and
#: no log lines), ``max_adapter_size`` (``--max-adapter-size``: a size such as ``"500MB"``, in bytes)
CLI_NAMES: dict[str, tuple[str, ...]] = {
    "budget": ("budget_items", "budget_seconds", "budget_tokens"),
    "no_cache": ("cache",),
    "quiet": ("progress",),
    "max_adapter_size": ("max_adapter_bytes",),
}
_FIELDS = tuple(f.name for f in dataclasses.fields(AuditOptions))


def audit_options(options: AuditOptions | None = None, **keywords: Any) -> AuditOptions:
    """The :class:`AuditOptions` that :func:`audit` runs with: ``options`` (or, without it, the defaults
    with ``progress=False``: an API call draws no progress bars unless asked) with ``keywords`` applied
    over it (a keyword overrides the same setting of ``options``).

    ``keywords`` are :class:`AuditOptions` fields or the command's names in :data:`CLI_NAMES`:
    ``budget`` as ``--budget`` reads it (``"auto"``, ``40`` items, ``"10m"``, ``"20ktok"``, ``"auto,20m"``),
    ``no_cache`` and ``quiet`` (bools), ``max_adapter_size`` (``"500MB"``, ``"8GiB"`` or bytes).

    Raises:
        TypeError: an unknown option name (the message names it and the known names closest to it), a
            command's name given together with a field it sets (``budget`` and ``budget_items``), a
            non-bool ``no_cache`` / ``quiet``, or ``options`` that is not an :class:`AuditOptions`.
        AuditInputError: a ``budget`` or ``max_adapter_size`` the command would refuse (the one line
            names the option).
    """
    if options is not None and not isinstance(options, AuditOptions):
        raise TypeError(f"options must be an auditor.AuditOptions, not {type(options).__name__}")
    unknown = [k for k in keywords if k not in _FIELDS and k not in CLI_NAMES]
    if unknown:
        known = [*_FIELDS, *CLI_NAMES, "out", "log", "options", "eval_results", "eval_results_dataset", "model_card",
                 "overwrite"]
        hints = [f"{k!r}" + (f" (did you mean {', '.join(map(repr, close))}?)"
                             if (close := difflib.get_close_matches(k, known, n=3)) else "") for k in unknown]
        raise TypeError(f"unknown audit option{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; the options "
                        "are auditor.AuditOptions' fields and the command's names " + ", ".join(CLI_NAMES))
    fields = {k: v for k, v in keywords.items() if k in _FIELDS}
    for name, sets in CLI_NAMES.items():
        if name not in keywords:
            continue
        if both := [f for f in sets if f in keywords]:
            raise TypeError(f"give {name}= or {', '.join(both)}=, not both ({name} sets {', '.join(sets)})")
        fields.update(_cli_value(name, keywords[name]))
    return dataclasses.replace(options if options is not None else AuditOptions(progress=False), **fields)


def _cli_value(name: str, value: Any) -> dict[str, Any]:
    """The fields one of :data:`CLI_NAMES` sets."""
    if name == "budget":
        try:
            return dict(zip(CLI_NAMES[name], parse_budget(value)))
        except ValueError as e:
            raise AuditInputError("budget", str(e)) from None
    if name == "max_adapter_size":
        from .inspect.paths import parse_size

        return {"max_adapter_bytes": None if value is None else parse_size(value, "max_adapter_size")}
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return {CLI_NAMES[name][0]: not value}  # no_cache → cache, quiet → progress


def plain_log(log: Callable[[str], Any] | None, quiet: bool = False) -> Callable[[str], None]:
    """What the pipeline logs to for an API caller: ``log`` fed plain text, or nothing with ``log=None`` or
    ``quiet=True``. The pipeline's progress lines carry rich markup (``[yellow]warning:[/]``, untrusted names
    escaped as ``\\[``): rich's own parser renders them to their text, and control characters are dropped."""
    from rich.text import Text

    from .util.text import strip_controls

    def say(message: str) -> None:
        if log is not None and not quiet:
            log(strip_controls(Text.from_markup(message).plain))
    return say


def report_folders(adapters: tuple[str, ...], out: Path, nested: bool = False) -> list[Path]:
    """The report folder of each adapter (``out`` itself for one, ``out/<folder name>`` for several or
    with ``nested``: a training run's checkpoints), each checked before any audit starts.

    Raises:
        AuditInputError: a folder that cannot hold the reports.
    """
    from .reports import check_no_folders, check_out_dir, report_folder_names

    if len(adapters) == 1 and not nested:
        check_out_dir(out)
        return [out]
    folders = [out / n for n in report_folder_names(list(adapters))]
    for f in folders:
        check_out_dir(f)
    check_no_folders(out, ("index.html", "run.json"))  # the index beside them
    return folders


def expand_run(adapters: tuple[str, ...], checkpoints: str | None, stop_at_first_fail: bool, allow_bin: bool = False
               ) -> tuple[tuple[str, ...], TrainingRun | None]:
    """The adapters to audit: a training run folder given alone (``checkpoint-N/`` folders in it, not itself an
    adapter; with ``--checkpoints`` or ``--stop-at-first-fail`` it may be one too, as a Trainer's output_dir after
    ``save_model()``) becomes its selected checkpoints in step order (``checkpoints``: ``--checkpoints``, default
    all; ``allow_bin``: ``--allow-bin``, checkpoints saved as adapter_model.bin are taken too).

    Raises:
        AuditInputError: ``--checkpoints`` or ``--stop-at-first-fail`` without a run folder, a run folder given
            with other adapters, or a fault of the run (:func:`auditor.inspect.checkpoints.training_run`).
    """
    from .inspect.checkpoints import is_run_dir, training_run

    # with --checkpoints or --stop-at-first-fail, a Trainer's output_dir that is an adapter too (its final
    # save_model()) is the run its checkpoint-N folders make; without them it is that final adapter
    asked = checkpoints is not None or stop_at_first_fail
    runs = [a for a in adapters if is_run_dir(a, adapter_too=asked and len(adapters) == 1)]
    if runs and len(adapters) > 1:
        raise AuditInputError(runs[0], "is a training run folder (checkpoint-N folders): audit it alone, or give "
                                       "its checkpoint folders as adapters")
    if not runs:
        if checkpoints is not None or stop_at_first_fail:
            what = "--checkpoints" if checkpoints is not None else "--stop-at-first-fail"
            raise AuditInputError(what, "needs a training run folder (one holding checkpoint-N folders) as the "
                                        "one argument")
        return adapters, None
    run = training_run(runs[0], checkpoints or "all", stop_at_first_fail, allow_bin)
    return tuple(str(c.path) for c in run.checkpoints), run


def hub_outputs_for(adapters: tuple[str, ...], opts: AuditOptions, hub: HubOutputs | None, nested: bool
                    ) -> list[tuple[Path | None, Path | None]]:
    """Each adapter's Hub files (:func:`auditor.reports.hub_targets`: evaluation results folder, model card),
    checked before any audit: every file a metric of the suite could write (the metric ids read from its
    manifest, no item loaded). Empty without ``hub`` (or when it asks for none).

    Raises:
        AuditInputError: options that do not go together, or a target that cannot be written (an existing
            file without ``overwrite`` included).
    """
    from .reports import check_hub_outputs, hub_targets, report_folder_names

    if hub is None:
        return []
    if not hub.wanted:
        hub.check_options()  # --eval-results-dataset or --overwrite alone
        return []
    targets = hub_targets(hub, report_folder_names(list(adapters)), nested)
    metrics: list[str] = []
    if hub.eval_results is not None:
        from .scorers import SCORERS
        from .suite.manifest import manifest_metric_ids

        metrics = manifest_metric_ids(opts.suite, opts.capabilities, scorers=SCORERS)
    check_hub_outputs(hub, targets, metrics)
    return targets


def audit_and_report(adapters: tuple[str, ...], opts: AuditOptions, out: Path | None, log: Callable[[str], Any],
                     run: TrainingRun | None = None, hub: HubOutputs | None = None
                     ) -> tuple[list[AuditResult], list[dict[str, Path]], Path | None, RunSummary | None]:
    """Audit ``adapters`` (one base pass) and, with ``out``, write each one's reports and, for several, the
    index: what :func:`audit_many` and the ``audit`` command share. For a training run (``run``: its selected
    checkpoints are ``adapters``, in step order), each report goes to ``out/checkpoint-N/``, and ``out/run.json``
    and ``out/index.html`` (with the trajectory charts) are written too; ``run.stop_at_first_fail`` ends the run
    after the first checkpoint that fails. With ``hub``, each adapter's evaluation results and model card section
    are written too (:func:`hub_outputs_for`: where, checked before the audit starts).

    Returns:
        The results in the order given (for a run stopped early, those audited), each one's report files
        (report name → path; empty without ``out``), the index (None for one adapter or without ``out``) and,
        for a run, its run.json record (:class:`~auditor.records.training_run.RunSummary`; else None).

    Raises:
        AuditInputError: any fault in the inputs, before a verdict.
    """
    from .pipeline import run_audits
    from .reports import run_summary, write_hub_outputs, write_index, write_reports, write_run_json
    from .reports.hub import written_line
    from .reports.terminal import t

    folders = report_folders(adapters, out, nested=run is not None) if out is not None else []
    targets = hub_outputs_for(adapters, opts, hub, nested=run is not None)
    stop = (lambda r: not r.passed) if run is not None and run.stop_at_first_fail else None
    results = run_audits(adapters, opts, log=log, stop_after=stop)
    paths = [write_reports(result, folder) for result, folder in zip(results, folders)]
    if hub is not None:
        for result, target in zip(results, targets):
            log(t(written_line(write_hub_outputs(result, target, hub))))
    summary = None if run is None else run_summary(run.run_dir, run.selection, run.checkpoints, results,
                                                   [f.name for f in folders] or [None] * len(adapters))
    if summary is not None and out is not None:
        write_run_json(summary, out)
    index = (write_index(results, [f.name for f in folders], out, summary)
             if out is not None and (len(adapters) > 1 or summary is not None) else None)
    return results, paths, index, summary


def audit_many(adapters: list[str] | tuple[str, ...], *, options: AuditOptions | None = None,
               out: str | Path | None = None, log: Callable[[str], Any] | None = None,
               eval_results: str | Path | None = None, eval_results_dataset: str | None = None,
               model_card: str | Path | None = None, overwrite: bool = False, **keywords: Any) -> list[AuditResult]:
    """Audit several adapters of one base against one base pass (see :func:`audit`); each one's Hub files go to
    ``eval_results/<name>/.eval_results/`` and ``model_card`` with ``{adapter}`` replaced by its name.

    Returns:
        One :class:`~auditor.results.AuditResult` per adapter, in the order given.

    Raises:
        AuditInputError: any fault in the inputs (one line: ``e.one_line()``), before a verdict.
        TypeError: an unknown option name, or one given twice (:func:`audit_options`).
    """
    from .reports.hub import HubOutputs

    opts = audit_options(options, **keywords)
    hub = HubOutputs(eval_results=None if eval_results is None else Path(eval_results), dataset=eval_results_dataset,
                     model_card=None if model_card is None else str(model_card), overwrite=overwrite)
    results, _, _, _ = audit_and_report(tuple(str(a) for a in adapters), opts, None if out is None else Path(out),
                                     plain_log(log, quiet=keywords.get("quiet") is True), hub=hub)
    return results


def audit(adapter: str | Path, *, options: AuditOptions | None = None, out: str | Path | None = None,
          log: Callable[[str], Any] | None = None, eval_results: str | Path | None = None,
          eval_results_dataset: str | None = None, model_card: str | Path | None = None, overwrite: bool = False,
          **keywords: Any) -> AuditResult:
    """Audit one adapter against its base model and a policy.

    Args:
        adapter: a PEFT adapter folder, its ``adapter_model.safetensors``, or a hub id
            ``owner/name[@revision][:path/in/repo]``.
        options: a typed :class:`~auditor.options.AuditOptions`, taken as it is (its ``progress``
            defaults to True, the command's); None: the defaults, without progress bars.
        out: a folder to write the reports into (report.html, results.json, summary.md, junit.xml,
            results.sarif, checklist.md); None writes nothing.
        log: called with each progress line as plain text (``log=print`` prints them); None prints
            nothing.
        eval_results: a folder for the Hugging Face Hub's evaluation results: ``.eval_results/<metric id>.yaml``
            in it, the adapter's score per metric with the base's and Δ in ``notes``
            (:mod:`auditor.reports.eval_results`); needs ``eval_results_dataset``.
        eval_results_dataset: ``owner/name[@revision]``, the Hub dataset (a registered Benchmark) they name.
        model_card: a model card file for the "Audit against the base" section (:mod:`auditor.reports.model_card`).
        overwrite: replace existing evaluation results files and the section of an existing model card (the rest
            of the card kept byte for byte); without it an existing file is refused before the audit.
        **keywords: the command's options under their Python names, over ``options`` where both give
            one (:func:`audit_options`): :class:`~auditor.options.AuditOptions` fields, e.g.
            ``suite="smoke"``, ``policy="policies/default.yaml"``, ``label="math"``,
            ``capabilities=("math",)``, ``limit=10``, ``base="path/to/hf-model"``, ``backend="hf"``,
            and the command's own names ``budget="auto,20m"`` (items, a time, new tokens, as
            ``--budget``), ``no_cache=True``, ``quiet=True`` (no progress bars, no log lines),
            ``max_adapter_size="500MB"``.

    Returns:
        The typed :class:`~auditor.results.AuditResult`: ``verdict`` (with every rule's outcome and
        reason), ``comparisons`` (per metric: base and adapter as fractions, Δ in points with its 95%
        interval and p-value), ``drift`` (TargetGain, OffTargetGain, DriftScore in points), ``items``
        (every prompt with both answers and their scores); ``result.passed``; ``result.to_dict()`` is
        results.json's content; ``result.flat_metrics()`` the figures as one flat ``str → float``
        mapping for ``trainer.log`` or ``wandb.log``.

    Raises:
        AuditInputError: any fault in the inputs (one line: ``e.one_line()``), a ``budget`` or
            ``max_adapter_size`` the command would refuse included, before a verdict.
        TypeError: an unknown option name (the message lists the closest known ones), or a command's
            name given with a field it sets (``budget`` and ``budget_items``).
    """
    return audit_many([str(adapter)], options=options, out=out, log=log, eval_results=eval_results,
                      eval_results_dataset=eval_results_dataset, model_card=model_card, overwrite=overwrite,
                      **keywords)[0]
