"""What the hardware does natively, and the dtype an audit runs in because of it (``--dtype auto``).

bf16 halves the bytes every decoding step reads (decoding is bound by reading the weights) and runs
on native instructions where the hardware has them: every CUDA GPU the engines support, and x86 CPUs
with AVX512-BF16 or AMX-BF16 (``/proc/cpuinfo`` flags ``avx512_bf16``, ``amx_bf16``). Elsewhere bf16
is emulated and slower than fp32, so fp32 stays. ``--dtype`` still wins; the choice and its reason are
recorded (results.json ``run.dtype``, ``run.dtype_reason``) and the dtype keys every cached answer.

bf16 greedy answers differ from fp32's on part of the items (kernels round differently) and, unlike
fp32, depend on what else is in the batch: benchmarks/RESULTS.md gives the shares measured here.
"""

from __future__ import annotations

import functools
from pathlib import Path

#: the CPU flags of native bf16 arithmetic (Linux /proc/cpuinfo names)
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.cache
def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags (empty where /proc/cpuinfo is not readable: another OS)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags") and ":" in line:
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def choose_dtype(requested: str, backend: str, gpu: bool, flags: frozenset[str] | None = None) -> tuple[str, str]:
    """The dtype of a run and why.

    Args:
        requested: ``--dtype``: ``auto``, ``float32``, ``bfloat16`` or ``float16``.
        backend: the run's backend (``hf``, ``vllm``, ``openai``).
        gpu: the backend runs on a GPU.
        flags: the CPU's flags (default: this machine's, :func:`cpu_flags`).

    Returns:
        ``(dtype, reason)``: a torch dtype name, and the reason in words (results.json ``run.dtype_reason``).
    """
    if requested != "auto":
        return requested, f"--dtype {requested}"
    if backend == "openai":
        return "float32", "auto: the server chooses its own dtype (recorded as float32, the request's)"
    if gpu:
        return "bfloat16", "auto: a GPU (native bf16)"
    native = sorted(set(BF16_CPU_FLAGS) & (cpu_flags() if flags is None else flags))
    if native:
        return "bfloat16", f"auto: the CPU has native bf16 ({', '.join(native)})"
    return "float32", "auto: the CPU has no native bf16 (no avx512_bf16 / amx_bf16), float32"
