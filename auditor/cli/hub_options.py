"""The options of ``audit run`` and ``audit report`` that ask for the Hub files
(:class:`~auditor.reports.hub_files.HubOutputs`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def hub_click_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The ``audit run`` and ``audit report`` options that ask for these files (:class:`~auditor.reports.hub_files.HubOutputs`' fields:
    ``eval_results``, ``eval_results_dataset``, ``model_card``, ``overwrite``)."""
    for option in reversed([
        click.option("--eval-results", "eval_results", type=click.Path(path_type=Path), default=None, metavar="DIR",
                     help="Also write the Hub's evaluation results: DIR/.eval_results/<metric id>.yaml, the "
                          "adapter's score per metric (the base's and the delta with its interval in notes); several "
                          "adapters or a run: DIR/<adapter>/.eval_results/. Upload with: hf upload OWNER/ADAPTER DIR ."),
        click.option("--eval-results-dataset", "eval_results_dataset", default=None, metavar="OWNER/NAME[@REV]",
                     help="--eval-results: the Hub dataset (registered as a Benchmark, one task per metric id) "
                          "the entries name."),
        click.option("--model-card", "model_card", default=None, metavar="FILE",
                     help="Also write an 'Audit against the base' section (verdict, deltas with 95% intervals, "
                          "DriftScore, suite, policy) to FILE, a new file; an existing model card only with "
                          "--overwrite. Several adapters: {adapter} in FILE becomes each one's name."),
        click.option("--overwrite", is_flag=True,
                     help="Replace existing --eval-results files, and the adapter-auditor section of an existing "
                          "--model-card (between its <!-- adapter-auditor:begin/end --> lines; appended when it has "
                          "none), keeping the rest of the card byte for byte."),
    ]):
        command = option(command)
    return command
