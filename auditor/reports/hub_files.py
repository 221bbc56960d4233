"""Where an audit's Hub files go: the evaluation results (:mod:`.eval_results`) and the model card's section
(:mod:`.model_card`) of each audited adapter, as ``--eval-results``, ``--eval-results-dataset``,
``--model-card`` and ``--overwrite`` ask (the ``audit`` and ``audit report`` commands, and the Python API).

One adapter: ``DIR/.eval_results/`` and the ``--model-card`` file. Several adapters, or a training run's
checkpoints: ``DIR/<name>/.eval_results/``, ``<name>`` being the adapter's report folder name
(:func:`auditor.reports.report_folder_names`: ``checkpoint-N`` for a run's checkpoint), and the model card path
must hold ``{adapter}``, which becomes that name (``cards/{adapter}.md``, or ``run/{adapter}/README.md`` for each
checkpoint's own card).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import AuditInputError
from ..results import AuditResult
from .eval_results import check_eval_results, eval_results_file, parse_dataset, write_eval_results
from .model_card import check_model_card, write_model_card

#: what ``--model-card`` holds for each adapter's name when several are audited
ADAPTER_FIELD = "{adapter}"


@dataclass(frozen=True)
class HubOutputs:
    """The Hub files an audit writes besides its reports.

    Attributes:
        eval_results: ``--eval-results``: the folder that mirrors the adapter's Hub repository (the files go to
            its ``.eval_results/``); None writes none.
        dataset: ``--eval-results-dataset``: ``owner/name[@revision]``, the Hub dataset the entries name.
        model_card: ``--model-card``: the model card file for the section (with ``{adapter}`` for several).
        overwrite: ``--overwrite``: replace existing evaluation results files, and replace the section of an
            existing model card (the rest of it kept byte for byte); else an existing file is refused.
    """

    eval_results: Path | None = None
    dataset: str | None = None
    model_card: str | None = None
    overwrite: bool = False

    def check_options(self) -> None:
        """Refuse options that do not go together.

        Raises:
            AuditInputError: ``--eval-results`` without ``--eval-results-dataset`` (or the reverse), a dataset
                that is not a Hub dataset id, or ``--overwrite`` with neither file.
        """
        if self.eval_results is not None and not self.dataset:
            raise AuditInputError("--eval-results", "needs --eval-results-dataset OWNER/NAME: the Hub dataset (a "
                                                    "registered Benchmark, one task per metric id) the entries "
                                                    "name; the probe suites are on no Hub dataset, and a standard "
                                                    "benchmark's id would put this suite's sample on its leaderboard")
        if self.dataset and self.eval_results is None:
            raise AuditInputError("--eval-results-dataset", "goes with --eval-results DIR")
        if self.dataset:
            parse_dataset(self.dataset)
        if self.overwrite and self.eval_results is None and self.model_card is None:
            raise AuditInputError("--overwrite", "goes with --eval-results or --model-card")

    @property
    def wanted(self) -> bool:
        return self.eval_results is not None or self.model_card is not None


def hub_targets(hub: HubOutputs, names: list[str], nested: bool) -> list[tuple[Path | None, Path | None]]:
    """(evaluation results folder, model card file) of each adapter, in order; ``names``: their report folder
    names; ``nested``: one folder per adapter even for one (a training run).

    Raises:
        AuditInputError: as :meth:`HubOutputs.check_options`, or ``--model-card`` without ``{adapter}`` for
            several adapters.
    """
    hub.check_options()
    several = nested or len(names) > 1
    card = hub.model_card
    if card is not None and several and ADAPTER_FIELD not in card:
        raise AuditInputError("--model-card", f"several adapters are audited: put {ADAPTER_FIELD} in the path, "
                                              f"which becomes each one's name (cards/{ADAPTER_FIELD}.md)")
    return [(None if hub.eval_results is None else hub.eval_results / name if several else hub.eval_results,
             None if card is None else Path(card.replace(ADAPTER_FIELD, name))) for name in names]


def check_hub_outputs(hub: HubOutputs, targets: list[tuple[Path | None, Path | None]], metrics: list[str]) -> None:
    """Refuse, before any audit, targets that cannot be written: ``metrics`` are the metric ids the audit may
    report (each one's file is checked; an existing one is refused without ``overwrite``).

    Raises:
        AuditInputError: naming the path at fault (:func:`check_eval_results`, :func:`check_model_card`).
    """
    for folder, card in targets:
        if folder is not None:
            check_eval_results(folder, [eval_results_file(m) for m in metrics], hub.overwrite)
        if card is not None:
            check_model_card(card, hub.overwrite)


def write_hub_outputs(result: AuditResult, target: tuple[Path | None, Path | None], hub: HubOutputs) -> list[Path]:
    """Write one adapter's evaluation results and model card section; return the paths written.

    Raises:
        AuditInputError: a file cannot be written (:func:`write_eval_results`, :func:`write_model_card`).
    """
    folder, card = target
    paths = [] if folder is None else write_eval_results(result, folder, hub.dataset or "", hub.overwrite)
    return paths + ([] if card is None else [write_model_card(result, card, hub.overwrite)])


def written_line(paths: list[Path]) -> str:
    """What :func:`write_hub_outputs` wrote, for the log: ``hub files: DIR/.eval_results (N files), CARD``
    (untrusted paths: the caller escapes the line for its terminal)."""
    yamls = [p for p in paths if p.suffix == ".yaml"]
    parts = ([f"{yamls[0].parent} ({len(yamls)} file{'s' * (len(yamls) != 1)})"] if yamls else []) + \
        [str(p) for p in paths if p not in yamls]
    return "hub files: " + (", ".join(parts) or "none (no metric was scored)")
