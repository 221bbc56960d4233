"""The Hugging Face Hub's evaluation results: ``.eval_results/<metric id>.yaml``, one file per metric.

The format is the Hub's (https://huggingface.co/docs/hub/eval-results; its specification is
``eval_results.yaml`` in github.com/huggingface/hub-docs): a YAML list of entries, each
``dataset: {id, task_id[, revision]}``, ``value`` and the optional ``date``, ``source: {url, name, user}``,
``verifyToken`` and ``notes``, in files under a model repository's ``.eval_results/`` folder. Entries are
built with ``huggingface_hub``'s own :class:`~huggingface_hub.EvalResultEntry` and
:func:`~huggingface_hub.eval_result_entries_to_yaml` (the library the Hub maintains for this format), then
dumped by PyYAML. The Hub's community-evals guidance puts each variant of a benchmark in its own file; here a
variant is one metric of the suite, so each file holds one entry and is named after its metric id (the
``task_id``).

What goes in, and why (an audit is not a leaderboard run):

- ``dataset.id`` is the Hub dataset the caller names (``--eval-results-dataset owner/name[@revision]``): the
  format requires a Hub dataset registered as a Benchmark, whose ``eval.yaml`` defines the tasks. The probe
  suites are hosted on no Hub dataset, and a standard benchmark's id (``openai/gsm8k``) would put a sample
  scored with this suite's prompts and scorers on that benchmark's leaderboard, so there is no default.
- ``task_id`` is the metric id (``ifeval.prompt_level_strict_acc``): a dataset hosting the suite defines one
  task per metric.
- ``value`` is the **adapter's** score on the metric: a fraction metric in points (0–100), a length in its unit
  (words, tokens), rounded to 2 decimals. A metric no item scored has no entry.
- ``notes`` carries what the value means against the base: the base's score, Δ (adapter − base) with its
  confidence interval, the p-value, the items, the suite, the verdict and the policy.
- ``date`` is when the audit ran (results.json's ``run.created_at``, ISO-8601). ``source`` (it needs a URL
  where the evidence lives) and ``verifyToken`` (Hub-run evaluations only) are left out.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml
from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from ..errors import AuditInputError
from ..records import MetricComparison
from ..results import AuditResult
from ..util.files import check_writable_folder, write_text_file
from .markdown import public_base_name

#: the folder of a model repository the Hub reads evaluation results from
EVAL_RESULTS_FOLDER = ".eval_results"


def parse_dataset(value: str, option: str = "--eval-results-dataset") -> tuple[str, str | None]:
    """``owner/name`` or ``owner/name@revision`` as (dataset id, revision or None), the id checked as the Hub
    checks repository ids (``huggingface_hub``'s ``validate_repo_id``).

    Raises:
        AuditInputError: not a Hub dataset id (the message names ``option``).
    """
    repo, _, revision = value.partition("@")
    try:
        validate_repo_id(repo)
    except HFValidationError as e:
        raise AuditInputError(option, f"{value!r} is not a Hub dataset id owner/name[@revision] ({e})") from None
    if "/" not in repo:  # the Hub's benchmark datasets live under an owner
        raise AuditInputError(option, f"{value!r} is not a Hub dataset id owner/name[@revision] (no owner)")
    if "@" in value and (not re.fullmatch(r"[\w./-]{1,200}", revision) or revision.startswith(("-", "."))
                         or ".." in revision):
        raise AuditInputError(option, f"{value!r}: the revision after @ is not a branch, tag or commit")
    return repo, revision or None


def eval_results_file(metric: str) -> str:
    """The file name of a metric's entry: its id, made safe as a file name, with ``.yaml``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", metric).strip(".") + ".yaml"


def _value(c: MetricComparison, x: float) -> float:
    """A score as written: points for a fraction, the metric's own unit otherwise, to 2 decimals."""
    return round((100.0 if c.is_fraction else 1.0) * x, 2)


def _notes(result: AuditResult, c: MetricComparison) -> str:
    """One line: the base's score, Δ with its interval, p, items, suite, verdict and policy."""
    unit = "points" if c.is_fraction else c.unit
    ci = (f" ({100 * c.confidence:.0f}% CI [{c.ci_low:+.2f}, {c.ci_high:+.2f}])"
          if c.ci_low is not None and c.ci_high is not None else "")
    p = f", p = {c.p_value:.3g}" if c.p_value is not None else ""
    better = "higher" if c.higher_is_better else "lower"
    return (f"adapter-auditor {result.run.auditor_version}: the adapter's {c.metric} in {unit} ({better} is "
            f"better) on {c.n_items} items of suite {result.suite.name}, greedy decoding; base "
            f"{public_base_name(result)}: {_value(c, c.base):.2f}, delta (adapter - base) {c.delta:+.2f} {c.delta_unit}{ci}"
            f"{p}; verdict {result.verdict.verdict.upper()} under policy {Path(result.policy.path).name}")


def eval_result_entries(result: AuditResult, dataset: str) -> dict[str, EvalResultEntry]:
    """File name → the entry of each metric the audit scored (see the module's docstring for the fields).

    Args:
        result: the audit.
        dataset: ``owner/name[@revision]``, the Hub dataset the entries name (:func:`parse_dataset`).

    Raises:
        AuditInputError: ``dataset`` is not a Hub dataset id.
    """
    repo, revision = parse_dataset(dataset)
    return {eval_results_file(c.metric): EvalResultEntry(
        dataset_id=repo, task_id=c.metric, dataset_revision=revision, value=_value(c, c.adapter),
        date=result.run.created_at or None, notes=_notes(result, c))
        for c in result.comparisons if not math.isnan(c.adapter)}


def render_eval_results(result: AuditResult, dataset: str) -> dict[str, str]:
    """File name → YAML text (a list of one entry, in the Hub's key order) for each scored metric.

    Raises:
        AuditInputError: ``dataset`` is not a Hub dataset id.
    """
    return {name: yaml.safe_dump(eval_result_entries_to_yaml([entry]), sort_keys=False, allow_unicode=True, width=1000)
            for name, entry in eval_result_entries(result, dataset).items()}


def check_eval_results(folder: Path, names: list[str], overwrite: bool = False) -> None:
    """Refuse, before anything is written, a ``folder`` (the model repository's root: the files go to
    ``folder/.eval_results/``) that cannot take the files ``names``: a file in its way, a folder that cannot
    be written, or one of the files existing already without ``overwrite``.

    Raises:
        AuditInputError: naming the path at fault.
    """
    target = folder / EVAL_RESULTS_FOLDER
    check_writable_folder(target, "--eval-results")
    for name in names:
        path = target / name
        if path.is_dir():
            raise AuditInputError(path, "is a folder; the evaluation results file cannot be written")
        if path.exists() and not overwrite:
            raise AuditInputError(path, "exists; it is not overwritten without --overwrite (or write the "
                                        "evaluation results to another --eval-results folder)")


def write_eval_results(result: AuditResult, folder: str | Path, dataset: str, overwrite: bool = False) -> list[Path]:
    """Write ``folder/.eval_results/<metric id>.yaml`` for each metric the audit scored (one entry each, see the
    module's docstring); ``folder`` mirrors the adapter's Hub repository, so ``hf upload OWNER/ADAPTER folder .``
    puts them where the Hub reads them. Nothing is written unless every file can be (:func:`check_eval_results`).

    Args:
        result: the audit (from :func:`auditor.audit`, or results.json through
            :func:`auditor.reports.load_results`).
        folder: the folder to write into (created when missing).
        dataset: ``owner/name[@revision]``: the Hub dataset (a registered Benchmark) the entries name.
        overwrite: replace files that exist already (else they are refused).

    Returns:
        The paths written, in the order of the audit's metrics.

    Raises:
        AuditInputError: ``dataset`` is not a Hub dataset id, or the folder or a file cannot be written (an
            existing file without ``overwrite`` included).
    """
    folder = Path(folder)
    files = render_eval_results(result, dataset)
    check_eval_results(folder, list(files), overwrite)
    paths = [folder / EVAL_RESULTS_FOLDER / name for name in files]
    for path, text in zip(paths, files.values()):
        write_text_file(path, text)
    return paths
