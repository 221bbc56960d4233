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
from typing import Any

from .errors import AuditInputError
from .options import AuditOptions, parse_budget
from .results import AuditResult

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
    from .reports.hub_files import HubOutputs

    opts = audit_options(options, **keywords)
    hub = HubOutputs(eval_results=None if eval_results is None else Path(eval_results), dataset=eval_results_dataset,
                     model_card=None if model_card is None else str(model_card), overwrite=overwrite)
    from .pipeline import audit_and_report

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
