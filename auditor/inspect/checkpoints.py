"""A training run's folder: its ``checkpoint-N/`` adapters in step order, and ``--checkpoints``.

The layout of transformers' ``Trainer`` (and TRL's trainers, Axolotl, LLaMA-Factory): ``RUN_DIR/checkpoint-N/``
holds ``adapter_model.safetensors``, ``adapter_config.json`` and ``trainer_state.json`` (whose ``global_step``
is the step the checkpoint was saved at), beside the optimizer and scheduler states, which are never read.
A checkpoint's step is ``global_step`` when its trainer_state.json gives one, else the N of its folder name.
Nothing here loads a model; every fault is an :class:`~auditor.errors.AuditInputError` (exit 2).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import AuditInputError
from .paths import BIN_NAME, CONFIG_NAME, WEIGHTS_NAME

_CHECKPOINT = re.compile(r"checkpoint-(\d+)")
#: trainer_state.json files larger than this are not read (a long run's log history); the folder name is used
MAX_STATE_BYTES = 64 * 1024 ** 2
#: the ``--checkpoints`` forms
SELECTION_HELP = "all, last:K, every:N or steps:a,b,..."


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """One saved state of a training run.

    Attributes:
        step: the optimizer step it was saved at (``global_step``), ≥ 0.
        path: its folder (``RUN_DIR/checkpoint-N``).
        step_source: where ``step`` came from: ``trainer_state.json``'s ``global_step``, or the folder name.
    """

    step: int
    path: Path
    step_source: Literal["trainer_state", "folder name"]


@dataclass(frozen=True, kw_only=True)
class Selection:
    """What ``--checkpoints`` asks for: ``all``, the ``last`` K, ``every`` N-th (the last one always
    included), or the listed ``steps``."""

    kind: Literal["all", "last", "every", "steps"]
    k: int = 0
    steps: tuple[int, ...] = ()


def is_run_dir(path: str | Path, adapter_too: bool = False) -> bool:
    """True when ``path`` is a folder that is not itself an adapter (no adapter_config.json nor
    adapter_model.safetensors in it; ``adapter_too``: may be one, as a Trainer's output_dir is after
    ``save_model()``) and holds at least one ``checkpoint-N/`` folder."""
    p = Path(path).expanduser()
    if not p.is_dir() or (not adapter_too and ((p / CONFIG_NAME).exists() or (p / WEIGHTS_NAME).exists())):
        return False
    return any(_CHECKPOINT.fullmatch(c.name) and c.is_dir() for c in p.iterdir())


def run_note(arg: str) -> str:
    """For an adapter argument audited as one adapter that is a Trainer's output_dir (the final ``save_model()``
    adapter beside ``checkpoint-N/`` folders): how many checkpoints it also holds, that the audit judges the final
    adapter only, and the command that audits the run (:func:`expand_run`); "" for any other argument."""
    if not is_run_dir(arg, adapter_too=True):
        return ""
    names = [c.path.name for c in find_checkpoints(arg)]
    n = len(names)
    listed = f"{names[0]} … {names[-1]}" if n > 2 else ", ".join(names)
    return (f"{arg} also holds {n} checkpoint{'s' if n != 1 else ''} ({listed}); this audit judges the final "
            f"adapter only. To audit the run: audit {shlex.quote(arg)} --checkpoints all")


def checkpoint_step(folder: Path) -> Checkpoint:
    """The step of one ``checkpoint-N`` folder: trainer_state.json's ``global_step`` (a non-negative
    integer), else N from the folder name (no trainer_state.json, one that is unreadable, too large, or
    has no usable ``global_step``)."""
    m = _CHECKPOINT.fullmatch(folder.name)
    fallback = int(m.group(1)) if m else 0
    state = folder / "trainer_state.json"
    try:
        if state.is_file() and state.stat().st_size <= MAX_STATE_BYTES:
            step = json.loads(state.read_text(encoding="utf-8")).get("global_step")
            if type(step) is int and step >= 0:
                return Checkpoint(step=step, path=folder, step_source="trainer_state")
    except (OSError, ValueError, AttributeError):  # unreadable, not JSON, not an object: the folder name says it
        pass
    return Checkpoint(step=fallback, path=folder, step_source="folder name")


def find_checkpoints(run_dir: str | Path) -> list[Checkpoint]:
    """The ``checkpoint-N/`` folders of a run folder, in step order (not yet checked: :func:`check_selected`).

    Raises:
        AuditInputError: no checkpoint folder.
    """
    root = Path(run_dir).expanduser()
    folders = sorted(c for c in root.iterdir() if _CHECKPOINT.fullmatch(c.name) and c.is_dir())
    if not folders:
        raise AuditInputError(root, "no checkpoint-N folders in this run folder")
    return sorted((checkpoint_step(f) for f in folders), key=lambda c: (c.step, c.path.name))


def check_selected(picked: list[Checkpoint], found: list[Checkpoint], allow_bin: bool = False) -> list[Checkpoint]:
    """``picked`` (the checkpoints ``--checkpoints`` selected from ``found``, the run's all) when each holds adapter
    weights and is the only one of the run at its step; a fault of a checkpoint that was not selected (one still
    being written, a full-model save) does not stop the others.

    Raises:
        AuditInputError: a selected checkpoint without adapter_model.safetensors (or, with ``allow_bin``,
            adapter_model.bin), or at the same step as another
            checkpoint of the run.
    """
    for c in picked:
        if not (c.path / WEIGHTS_NAME).is_file():
            if (c.path / BIN_NAME).is_file():
                if allow_bin:  # converted to safetensors in the cache, as any --allow-bin adapter
                    continue
                raise AuditInputError(c.path, f"holds {BIN_NAME} (a pickle file, which can run code when loaded), "
                                              f"not {WEIGHTS_NAME}; audit it with --allow-bin if you trust the run")
            raise AuditInputError(c.path, f"no {WEIGHTS_NAME} in this checkpoint (a full-model checkpoint, or one "
                                          "still being written?); select the others with --checkpoints steps:...")
        twin = next((o for o in found if o.step == c.step and o.path != c.path), None)
        if twin is not None:
            raise AuditInputError(c.path, f"is at step {c.step}, as {twin.path.name} is; which one is that step? "
                                          "(select other steps with --checkpoints steps:...)")
    return picked


def parse_selection(text: str) -> Selection:
    """``--checkpoints``' value: ``all``, ``last:K``, ``every:N`` (K, N ≥ 1) or ``steps:a,b,...`` (steps ≥ 0).

    Raises:
        AuditInputError: any other value (named ``--checkpoints``).
    """
    value = text.strip()
    if value == "all":
        return Selection(kind="all")
    kind, _, arg = value.partition(":")
    try:
        if kind in ("last", "every") and re.fullmatch(r"\d+", arg) and int(arg) >= 1:
            return Selection(kind="last" if kind == "last" else "every", k=int(arg))
        if kind == "steps" and arg:
            steps = tuple(int(s) for s in arg.split(","))
            if all(s >= 0 for s in steps) and re.fullmatch(r"\d+(,\d+)*", arg.replace(" ", "")):
                return Selection(kind="steps", steps=tuple(dict.fromkeys(steps)))
    except ValueError:
        pass
    raise AuditInputError("--checkpoints", f"{text!r} is not one of {SELECTION_HELP} (K, N ≥ 1)")


def select(checkpoints: list[Checkpoint], selection: Selection) -> list[Checkpoint]:
    """The checkpoints ``selection`` names, in step order (``checkpoints`` is in step order). ``every:N`` takes
    every N-th checkpoint counted from the first, and the last one too (the run's end is always audited).

    Raises:
        AuditInputError: a step of ``steps:`` that no checkpoint is at (the message lists the run's steps).
    """
    if selection.kind == "last":
        return checkpoints[-selection.k:]
    if selection.kind == "every":
        picked = checkpoints[::selection.k]
        return picked if picked[-1] is checkpoints[-1] else [*picked, checkpoints[-1]]
    if selection.kind == "steps":
        at = {c.step: c for c in checkpoints}
        missing = [s for s in selection.steps if s not in at]
        if missing:
            raise AuditInputError("--checkpoints", f"no checkpoint at step {', '.join(map(str, missing))}; the run's "
                                                   f"steps are {', '.join(str(c.step) for c in checkpoints)}")
        return sorted((at[s] for s in selection.steps), key=lambda c: c.step)
    return list(checkpoints)


@dataclass(frozen=True, kw_only=True)
class TrainingRun:
    """A run folder as ``audit RUN_DIR`` audits it: the ``--checkpoints`` value and the checkpoints it selects
    (step order), and whether ``--stop-at-first-fail`` ends the run after the first that fails."""

    run_dir: str
    selection: str
    checkpoints: tuple[Checkpoint, ...]
    stop_at_first_fail: bool = False


def training_run(run_dir: str | Path, selection: str = "all", stop_at_first_fail: bool = False,
                 allow_bin: bool = False) -> TrainingRun:
    """The checkpoints of ``run_dir`` that ``selection`` (``--checkpoints``) names, in step order; ``allow_bin``
    (``--allow-bin``): a checkpoint saved as ``adapter_model.bin`` is taken (the pipeline converts it).

    Raises:
        AuditInputError: as :func:`find_checkpoints`, :func:`parse_selection`, :func:`select` and
            :func:`check_selected` (only the selected checkpoints are checked).
    """
    wanted = parse_selection(selection)  # a bad value is refused before the folder is read
    found = find_checkpoints(run_dir)
    picked = check_selected(select(found, wanted), found, allow_bin)
    return TrainingRun(run_dir=str(run_dir), selection=selection, checkpoints=tuple(picked),
                       stop_at_first_fail=stop_at_first_fail)


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
