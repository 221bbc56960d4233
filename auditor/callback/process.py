"""The audit of one checkpoint as a separate process: the ``audit run`` command line the callback's options
make, checked when the callback is built, and the process run to its end, its time limit, or its death.

The command is ``python -m auditor.cli run CHECKPOINT --out CHECKPOINT/audit ...`` with the interpreter that
runs the training (:data:`sys.executable`) and the ``auditor`` package the callback was imported from; its
stdout and stderr (the progress lines, the summary table, a one-line error) go to ``audit.log`` in the report
folder, after the command itself, so a failed audit can be read and run again by hand.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the ``audit run`` options the callback sets itself (the checkpoint, its report folder, what is printed)
RESERVED = ("adapters", "out", "quiet", "as_json", "fmt", "checkpoints", "stop_at_first_fail")
#: ``audit run``'s options for the Hub's files: one fixed target for every save would be refused from the second
#: save on (or overwritten each time); write them for the checkpoint you ship, from its saved results.json
HUB_OPTIONS = ("eval_results", "eval_results_dataset", "model_card", "overwrite")
#: the report folder's log of the audit process (the command line first, then its stdout and stderr)
LOG_NAME = "audit.log"
#: seconds a process gets to end after SIGTERM (at its time limit) before it is killed
GRACE_S = 10.0


@dataclass(frozen=True, kw_only=True)
class ProcessOutcome:
    """How one audit process ended.

    Attributes:
        returncode: the ``audit`` command's exit code (0 pass, 1 fail, 2 bad input, 3 internal error, 130
            interrupted; negative: killed by that signal), or None when it ran past its time limit and was killed.
        seconds: wall-clock seconds from its start to its end.
        error: why it gave no verdict (its last ``error:`` line, the time limit, the signal), or None for exit 0 / 1.
    """

    returncode: int | None
    seconds: float
    error: str | None


def _run_command() -> Any:
    from ..cli.run_command import run_cmd

    return run_cmd


def option_names() -> tuple[str, ...]:
    """The options the callback passes through: ``audit run``'s options under their Python names (click's),
    less :data:`RESERVED`."""
    return tuple(p.name for p in _run_command().params if p.name and p.name not in RESERVED)


def _value(value: Any) -> str:
    """A KEY=VALUE option's VALUE: a string as it is, anything else as JSON (``false``, ``3``, ``0.5``)."""
    return value if isinstance(value, str) else json.dumps(value)


def audit_args(options: Mapping[str, Any]) -> list[str]:
    """The ``audit run`` arguments (after the checkpoint) that ``options`` give, checked as the command checks them.

    ``options`` are the command's options under their Python names (:func:`option_names`: ``base``, ``policy``,
    ``suite``, ``label``, ``limit``, ``capabilities``, ``budget``, ``batch_size``, ``backend``, ``dtype``,
    ``no_cache``, ``data_dir``, ...), valued as on the command line: a flag (``no_cache``, ``noise_floor``,
    ``allow_bin``, ``verbose``) True or False; a repeatable option (``capabilities``, ``served_adapters``,
    ``vllm_args``, ``chat_template_args``) one value or several, the KEY=VALUE ones also a mapping
    (``{"enable_thinking": False}``); any other a string or a number (``budget=0``, ``limit=2``, ``base=path``);
    None leaves an option at the command's default.

    Raises:
        TypeError: an unknown name (with the closest known ones), one the callback sets itself (:data:`RESERVED`),
            or a flag that is not True / False.
        ValueError: a value the command would refuse (its message, naming the option).
    """
    params = {p.name: p for p in _run_command().params}
    known = option_names()
    args: list[str] = []
    for name, value in options.items():
        if name in RESERVED:
            raise TypeError(f"AuditCallback sets {name!r} itself (the checkpoint, its report folder and what the "
                            "audit prints)")
        if name in HUB_OPTIONS:
            raise TypeError(f"AuditCallback does not take {name!r}: the Hub's files are written for the checkpoint "
                            "you ship, from its saved audit (audit report output_dir/audits/checkpoint-N.json "
                            "--eval-results DIR ...)")
        if name not in known:
            close = difflib.get_close_matches(name, [*known, "no_cache", "budget", "max_adapter_size"], n=3)
            hint = f" (did you mean {', '.join(map(repr, dict.fromkeys(close)))}?)" if close else ""
            raise TypeError(f"unknown audit option {name!r}{hint}; the options are `audit run`'s, under their "
                            f"Python names: {', '.join(known)}")
        if value is None:
            continue
        p = params[name]
        flag = p.opts[0]
        if getattr(p, "is_flag", False):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be True or False, not {value!r}")
            args += [flag] if value else []
        elif p.multiple:
            values: Iterable[Any] = ([f"{k}={_value(v)}" for k, v in value.items()] if isinstance(value, Mapping)
                                     else [value] if isinstance(value, (str, Path)) else value)
            for v in values:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    _check(args)
    return args


def _check(args: list[str]) -> None:
    """Parse ``args`` as ``audit run`` does, and its KEY=VALUE and size options, without running it.

    Raises:
        ValueError: what the command would refuse.
    """
    import click

    from ..backends.vllm.compat import parse_engine_args
    from ..errors import AuditInputError
    from ..inspect.chat_template import parse_template_args
    from ..inspect.paths import parse_size

    try:
        ctx = _run_command().make_context("run", ["CHECKPOINT", *args])
        parse_engine_args(ctx.params["vllm_args"])
        parse_template_args(ctx.params["chat_template_args"])
        if ctx.params["max_adapter_size"] is not None:
            parse_size(ctx.params["max_adapter_size"], "--max-adapter-size")
        if ctx.params["policy"] is not None:  # a missing or broken policy is refused now, not at every save
            _check_policy(ctx.params["policy"], ctx.params["suite"])
    except click.ClickException as e:
        raise ValueError(f"AuditCallback: {e.format_message()}") from None
    except AuditInputError as e:
        raise ValueError(f"AuditCallback: {e.one_line()}") from None


def _check_policy(policy: str, suite: str | None) -> None:
    """Load ``policy`` as the audit will, against the bundled suites' metric ids (a suite of one's own may add
    metrics: with one, the policy is checked by the audit itself).

    Raises:
        AuditInputError: the policy file is missing or invalid (its one line).
    """
    from ..policy import load_policy
    from ..scorers import SCORERS
    from ..suite import preset_metric_units

    if suite is not None and Path(suite).suffix:  # a manifest file, as auditor.suite.manifest.manifest_path tells
        return
    units = preset_metric_units(SCORERS)
    load_policy(policy, sorted(units), units)


def audit_command(checkpoint: Path, out: Path, args: list[str]) -> list[str]:
    """The command line that audits ``checkpoint`` into ``out``: this interpreter running ``auditor.cli``."""
    return [sys.executable, "-m", "auditor.cli", "run", str(checkpoint), "--out", str(out), *args]


def audit_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The audit process's environment: this one's, with the folder of the ``auditor`` package the callback runs
    first on PYTHONPATH (a source checkout; an installed package's site-packages is left where it is), tqdm's
    bars off (the log is a file), and ``extra`` over it (e.g. ``{"CUDA_VISIBLE_DEVICES": "1"}``)."""
    env = dict(os.environ)
    root = Path(__file__).resolve().parents[2]
    if root.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("TQDM_DISABLE", "1")
    env.update(extra or {})
    return env


def _stop(proc: subprocess.Popen) -> None:
    """End ``proc`` and the processes it started (its session): SIGTERM, then SIGKILL after :data:`GRACE_S`."""
    if proc.poll() is not None:
        return
    group = hasattr(os, "killpg")
    for sig, wait in ((signal.SIGTERM, GRACE_S), (getattr(signal, "SIGKILL", signal.SIGTERM), None)):
        try:
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def last_error_line(log: Path) -> str:
    """The audit's own account of why it ended: its last ``error:`` / ``internal error:`` line in ``log``, else the
    last line it printed (at most 300 characters; empty when it printed nothing or the log cannot be read). The
    command lines the callback wrote (``$ ...``) are not the audit's."""
    try:
        lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
                 if line.strip() and not line.startswith("$ ")]
    except OSError:
        return ""
    errors = [line for line in lines if line.startswith(("error:", "internal error:"))]
    return (errors or lines or [""])[-1][:300]


def run_audit(command: list[str], log: Path, env: Mapping[str, str], timeout_s: float | None) -> ProcessOutcome:
    """Run ``command`` to its end (the caller waits), its stdout and stderr written to ``log`` after the command
    line itself; at ``timeout_s`` seconds its session is ended (:func:`_stop`). A KeyboardInterrupt in the caller
    ends the process too, and is raised again.

    Raises:
        OSError: the log cannot be written or the process cannot start.
    """
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as f:
        f.write(f"$ {shlex.join(command)}\n")
        f.flush()
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                env=dict(env), start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _stop(proc)
    seconds = time.monotonic() - t0
    if code is None:
        return ProcessOutcome(returncode=None, seconds=seconds, error=f"still running after {timeout_s:g} s: "
                                                                       "stopped (timeout)")
    if code in (0, 1):
        return ProcessOutcome(returncode=code, seconds=seconds, error=None)
    if code < 0:
        try:
            why = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            why = f"killed by signal {-code}"
    else:
        why = f"exit code {code}"
    line = last_error_line(log)
    return ProcessOutcome(returncode=code, seconds=seconds, error=f"{why}: {line}" if line else why)
