"""The calling thread's OpenMP workers, released before another thread runs the model.

torch's CPU kernels run on OpenMP (GNU libgomp in the Linux wheels), which keeps one team of worker
threads for each thread that has run a parallel region. transformers' continuous batching decodes in a
thread of its own (``ContinuousBatchingManager.start``), so once the calling thread has run the model
(loading it, the manager's warm-up) two teams share the cores. With more OpenMP threads than CPUs
libgomp spins about 100 times instead of 300,000 before a waiting worker sleeps (the libgomp manual,
``GOMP_SPINCOUNT``), and every one of a decoding step's hundreds of small kernels then waits for its
workers to wake: the same stream ran at about half the tokens per second in the library's thread.

:func:`release_thread_pool` ends the calling thread's team through ``omp_pause_resource_all``, the
OpenMP 5.0 call for exactly this (OpenMP API 5.0, §3.2.43), so the library's thread has the cores to
itself; the calling thread gets a new team the next time it runs a parallel region.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

#: ``omp_pause_soft`` (OpenMP 5.0): the runtime's threads end; its state stays, so later parallel regions
#: start a new team
OMP_PAUSE_SOFT = 1


@functools.cache
def _runtime() -> Any:
    """The OpenMP runtime loaded in this process (the one torch uses), or None."""
    try:
        import torch  # noqa: F401  (loads its OpenMP runtime)

        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = [ln.split()[-1] for ln in f if ln.rstrip().endswith((".so", ".so.1", ".so.5"))]
    except OSError:
        return None
    for path in dict.fromkeys(paths):
        name = path.rsplit("/", 1)[-1]
        if name.startswith(("libgomp", "libomp", "libiomp5")):
            try:
                lib = ctypes.CDLL(path)
                fn = lib.omp_pause_resource_all
            except (OSError, AttributeError):
                continue
            fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
            return fn
    return None


def release_thread_pool() -> bool:
    """End the calling thread's OpenMP worker threads (``omp_pause_resource_all(omp_pause_soft)``).

    Returns:
        True where the runtime released them, False where none was found or it declined (it may, by the
        standard); either way nothing else changes.
    """
    fn = _runtime()
    return fn is not None and fn(OMP_PAUSE_SOFT) == 0
