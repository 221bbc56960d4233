""":class:`AuditCallback`: audit each checkpoint a transformers ``Trainer`` (or a TRL trainer) saves, while the
training waits, and log the verdict, DriftScore and every metric's Δ through the trainer's ``report_to``.

The audit runs as a separate process (:mod:`auditor.callback.process`), never in the training process: the
training's model, memory and device stay as they are, an audit that crashes, runs out of memory or hangs past
its time limit ends only its own process, and any fault of the audit is a warning and an ``audit/error`` entry
in the logs, never an exception in the training loop.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from transformers import TrainerCallback

from ..reports import REPORT_FILES
from .process import LOG_NAME, audit_args, audit_command, audit_env, run_audit

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class CheckpointAudit:
    """The audit of one saved checkpoint.

    Attributes:
        step: the optimizer step it was saved at (``state.global_step``).
        checkpoint: its folder (``output_dir/checkpoint-N``), or None when it was not found.
        verdict: ``"pass"`` or ``"fail"``; None when the audit gave none (see ``error``).
        drift_score_pts: DriftScore in points (None: no label, or no verdict).
        failing: the failing rules' names.
        results: the audit's results.json in the checkpoint (``checkpoint-N/audit/results.json``), or None.
        copy: its copy beside the checkpoints (``output_dir/audits/checkpoint-N.json``), or None (``keep_copy=False``,
            or the copy could not be written).
        error: why there is no verdict (the audit's one-line error, its exit code, the time limit), or None.
        seconds: wall-clock seconds the training waited for it.
    """

    step: int
    checkpoint: Path | None
    verdict: str | None
    drift_score_pts: float | None = None
    failing: tuple[str, ...] = ()
    results: Path | None = None
    copy: Path | None = None
    error: str | None = None
    seconds: float = 0.0


def find_checkpoint(output_dir: str | Path, step: int) -> Path:
    """The folder the Trainer saved step ``step`` into: ``output_dir/checkpoint-{step}``, else (a hyperparameter
    search's trial folder) the newest ``output_dir/*/checkpoint-{step}``.

    Raises:
        FileNotFoundError: neither exists.
    """
    root = Path(output_dir)
    folder = root / f"checkpoint-{step}"
    if folder.is_dir():
        return folder
    found = [p for p in root.glob(f"*/checkpoint-{step}") if p.is_dir()]
    if not found:
        raise FileNotFoundError(f"no checkpoint-{step} folder in {root}")
    return max(found, key=lambda p: p.stat().st_mtime)


def agree(stop: bool) -> bool:
    """Main process's ``stop``, on every process of a distributed run (a broadcast from rank 0; every rank must
    call it at the same save); ``stop`` itself outside one."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return stop
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return stop
    flag = [stop]
    dist.broadcast_object_list(flag, src=0)
    return bool(flag[0])


class AuditCallback(TrainerCallback):
    """Audit every ``every``-th checkpoint the trainer saves, in a separate process while training waits.

    ::

        trainer.add_callback(AuditCallback(trainer=trainer, every=1, budget="0", capabilities=["math"],
                                           policy="policies/release.yaml", label="math", stop_on="fail"))

    On the main process only (``state.is_world_process_zero``), after each audited save it runs ``audit run
    output_dir/checkpoint-N --out output_dir/checkpoint-N/audit`` (report.html, results.json, summary.md, ...,
    and audit.log, the command and its output), copies results.json to ``output_dir/audits/checkpoint-N.json``
    (it outlives ``save_total_limit``'s deletion of the checkpoint), and logs through ``trainer.log``, at the
    save's step: :meth:`~auditor.results.AuditResult.flat_metrics` (``audit/verdict_pass`` 1.0 / 0.0,
    ``audit/rules_fail_n``, ``audit/<metric>/delta_pts`` with ``ci_low_pts`` / ``ci_high_pts``,
    ``audit/drift_score_pts``, ...), ``audit/error`` 0.0 and ``audit/seconds``. An audit that gives no verdict
    (bad input: exit 2; an internal error: exit 3; killed; past ``timeout_s``) logs ``audit/error`` 1.0 and a
    warning, and training goes on. Nothing in the checkpoint is written but its ``audit/`` folder.

    Args:
        trainer: the Trainer, whose ``log`` reaches ``report_to`` (TensorBoard, W&B, MLflow, ...). Without it the
            entries go to ``state.log_history`` only (trainer_state.json), not to the integrations.
        every: audit every N-th save (N ≥ 1), counted from the first save of this callback.
        stop_on: ``"fail"``: a failing verdict sets ``control.should_training_stop`` (on every process of a
            distributed run); None: audits never stop training.
        timeout_s: seconds an audit may take before its process is stopped (an error); None: no limit, except in
            a distributed run, where 90% of ``args.ddp_timeout`` (the other processes wait that long at most).
        env: environment variables for the audit process, e.g. ``{"CUDA_VISIBLE_DEVICES": "1"}`` (another GPU).
        keep_copy: copy each results.json to ``output_dir/audits/`` (default True).
        prefix: the log keys' prefix (default ``"audit/"``).
        **options: ``audit run``'s options under their Python names, valued as on the command line
            (:func:`auditor.callback.process.audit_args`): ``budget="auto,10m"`` or ``0``, ``policy``, ``suite``,
            ``label``, ``limit``, ``capabilities``, ``backend``, ``dtype``, ``batch_size``, ``data_dir``,
            ``no_cache``, ...; ``base`` defaults to ``"declared"``: the base the checkpoint's adapter_config.json
            names, i.e. the model being trained (a local folder, an embedded base, or a hub id from the local hub
            cache), and an error rather than another base when it cannot be had.

    Raises:
        TypeError: an unknown option, one the callback sets itself, a flag that is not a bool.
        ValueError: ``every`` < 1, ``stop_on`` other than ``"fail"`` / None, ``timeout_s`` not a positive number,
            ``env`` not str → str, ``prefix`` not a str, a policy file that is missing or invalid, or an option value
            the ``audit`` command would refuse (a bad ``budget``, ``dtype``, ``limit``, ...).
        TypeError: an unknown option, one the callback sets itself, or one of the Hub's files (``eval_results``,
            ``model_card``: write them from the shipped checkpoint's saved audit).
    """

    def __init__(self, *, trainer: Any = None, every: int = 1, stop_on: Literal["fail"] | None = None,
                 timeout_s: float | None = None, env: Mapping[str, str] | None = None, keep_copy: bool = True,
                 prefix: str = "audit/", **options: Any) -> None:
        if type(every) is not int or every < 1:
            raise ValueError(f"every must be a whole number ≥ 1, not {every!r}")
        if stop_on not in (None, "fail"):
            raise ValueError(f"stop_on must be 'fail' or None, not {stop_on!r}")
        if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float))
                                      or not timeout_s > 0):
            raise ValueError(f"timeout_s must be positive seconds or None, not {timeout_s!r}")
        self.trainer = trainer
        self.every = every
        self.stop_on = stop_on
        self.timeout_s = timeout_s
        if env is not None and not (isinstance(env, Mapping) and all(isinstance(k, str) and isinstance(v, str)
                                                                    for k, v in env.items())):
            raise ValueError(f"env must map variable names to str values, not {env!r}")
        if not isinstance(prefix, str):
            raise ValueError(f"prefix must be a str such as 'audit/', not {prefix!r}")
        self.env = dict(env or {})
        self.keep_copy = keep_copy
        self.prefix = prefix
        # base=None is the default too: the declared base, not the command's embedded default
        self.args = audit_args({"base": "declared", **{k: v for k, v in options.items() if k != "base" or v is not None}})
        #: every audit so far, in the order of the saves
        self.audits: list[CheckpointAudit] = []
        self._saves = 0
        self._warned_no_trainer = False

    @property
    def last_passing(self) -> CheckpointAudit | None:
        """The latest audited checkpoint that passed, or None."""
        return next((a for a in reversed(self.audits) if a.verdict == "pass"), None)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """After each save: audit it when it is an ``every``-th one (main process), then stop on a fail."""
        self._saves += 1
        if self._saves % self.every:
            return control
        stop = False
        if state.is_world_process_zero:
            record = self.audit_checkpoint(args, state)
            stop = self.stop_on == "fail" and record.verdict == "fail"
        if self.stop_on is not None:
            stop = agree(stop)
        if stop:
            control.should_training_stop = True
            if state.is_world_process_zero:
                logger.warning("AuditCallback: checkpoint at step %d fails the audit: training stops (stop_on='fail')",
                               state.global_step)
        return control

    def _timeout(self, args: Any) -> float | None:
        if self.timeout_s is not None:
            return self.timeout_s
        if int(getattr(args, "world_size", 1) or 1) > 1:
            return 0.9 * float(getattr(args, "ddp_timeout", 1800) or 1800)
        return None

    def audit_checkpoint(self, args: Any, state: Any) -> CheckpointAudit:
        """Audit the checkpoint of ``state.global_step``, log the outcome and add it to :attr:`audits`; never
        raises but a KeyboardInterrupt (which stops the audit process first)."""
        step = state.global_step
        t0 = time.monotonic()
        checkpoint: Path | None = None
        try:
            checkpoint = found = find_checkpoint(args.output_dir, step)
            out = found / "audit"
            out.mkdir(exist_ok=True)
            for name in (*REPORT_FILES, LOG_NAME):  # an earlier run's audit of a checkpoint of the same name
                (out / name).unlink(missing_ok=True)
            outcome = run_audit(audit_command(checkpoint, out, self.args), out / LOG_NAME, audit_env(self.env),
                                self._timeout(args))
            if outcome.error is not None:
                raise RuntimeError(outcome.error)
            from ..reports.results_file import load_results

            result = load_results(out / "results.json")
        except Exception as e:  # an audit never takes the training run down
            why = " ".join(str(e).split()) or type(e).__name__
            record = CheckpointAudit(step=step, checkpoint=checkpoint, verdict=None, error=why,
                                     seconds=time.monotonic() - t0)
            logger.warning("AuditCallback: the audit of %s (step %d) gave no verdict: %s; training goes on",
                           checkpoint or f"checkpoint-{step}", step, why)
            self._record(state, record, {f"{self.prefix}error": 1.0, f"{self.prefix}seconds": record.seconds})
            return record
        copy = self._copy(out / "results.json", found.parent / "audits" / f"{found.name}.json")
        record = CheckpointAudit(step=step, checkpoint=found, verdict=result.verdict.verdict,
                                 drift_score_pts=result.drift.drift_score_pts,
                                 failing=tuple(r.rule for r in result.verdict.failing), results=out / "results.json",
                                 copy=copy, seconds=time.monotonic() - t0)
        drift = "" if record.drift_score_pts is None else f", DriftScore {record.drift_score_pts:+.1f} pts"
        failing = f"; failing: {'; '.join(record.failing)}" if record.failing else ""
        (logger.warning if record.verdict == "fail" else logger.info)(
            "AuditCallback: %s (step %d): %s%s%s (%.0f s; report %s)", found.name, step, record.verdict, drift,
            failing, record.seconds, out / "report.html")
        metrics = {**result.flat_metrics(self.prefix), f"{self.prefix}error": 0.0,
                   f"{self.prefix}seconds": record.seconds}
        self._record(state, record, metrics)
        return record

    def _copy(self, results: Path, copy: Path) -> Path | None:
        """``results`` copied to ``copy`` (with :attr:`keep_copy`; None without); a copy that cannot be written is
        a warning (the audit's verdict stands: its results.json is in the checkpoint)."""
        if not self.keep_copy:
            return None
        try:
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(results, copy)
            return copy
        except OSError as e:
            logger.warning("AuditCallback: %s could not be copied to %s: %s", results, copy, e)
            return None

    def _record(self, state: Any, record: CheckpointAudit, metrics: dict[str, float]) -> None:
        """Add ``record`` to :attr:`audits` and log ``metrics`` at the save's step: through ``trainer.log`` (every
        ``report_to`` integration sees them), else into ``state.log_history``. A logging fault is a warning."""
        self.audits.append(record)
        try:
            if self.trainer is not None:
                self.trainer.log(metrics)
                return
            if not self._warned_no_trainer:
                self._warned_no_trainer = True
                logger.warning("AuditCallback: no trainer given (AuditCallback(trainer=trainer, ...)): the audit's "
                               "figures go to the trainer state's log_history only, not to report_to")
            state.log_history.append({**metrics, "step": state.global_step})
        except Exception as e:  # a logging integration's fault does not end the run either
            logger.warning("AuditCallback: logging the audit of step %d failed: %s: %s", state.global_step,
                           type(e).__name__, e)
