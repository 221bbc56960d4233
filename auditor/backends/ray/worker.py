"""``--ray``: what one Ray actor of the run holds: one engine (an hf or vllm backend, as
:data:`auditor.backends.BACKENDS` makes it) for the base and a group of the run's adapters.

The driver (:mod:`auditor.backends.ray.cluster`) wraps :class:`EngineWorker` with ``ray.remote`` and
calls it; this module never imports ray, so it loads without the ``ray`` extra. Every method returns an
envelope, ``{"ok": value}`` or ``{"error": {...}}`` (:func:`_fault`): an :class:`~auditor.errors.AuditInputError`
(a vLLM engine that did not start included) crosses the process boundary as its parts, not as a pickled
exception, and the driver raises it again with the same one line and exit code.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache.generations import GenerationCache
from ...cache.store import CacheStore
from ...errors import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, AuditInputError
from ...records import BaseModel, PromptTemplate, Request, Variant
from ..vllm.startup import EngineStartError

if TYPE_CHECKING:
    from ...options import AuditOptions


def _fault(e: BaseException) -> dict[str, Any]:
    """An exception as plain parts the driver can raise again (:func:`auditor.backends.ray.cluster.raise_fault`)."""
    if isinstance(e, AuditInputError):
        out: dict[str, Any] = {"kind": "input", "path": e.path, "fault": e.fault,
                               "exit_code": getattr(e, "exit_code", EXIT_INPUT_ERROR)}
        if isinstance(e, EngineStartError):  # --backend auto falls back to hf on it
            out |= {"kind": "engine-start", "cause": e.cause, "fix": e.fix, "user_caused": e.user_caused,
                    "log": str(e.log) if e.log else None}
        return out
    return {"kind": "internal", "fault": f"{type(e).__name__}: {' '.join(str(e).split())}"[:800],
            "exit_code": EXIT_INTERNAL_ERROR}


class EngineWorker:
    """One engine on one Ray worker: the base and the adapters of its group (``variants``), loaded lazily
    on the first generation that needs them, as the single-process backend loads.

    Args:
        backend: ``hf`` or ``vllm`` (:data:`auditor.backends.BACKENDS`).
        opts: the run's options (dtype already resolved by the driver).
        base: the base model (its folder must be at the same path on every node).
        variants: the adapters this worker serves (each under its run-wide variant name, so every cache
            key is the single-process run's), ``--baseline``'s included.
        cache_store: the generation cache's store (a local folder every worker sees, or an fsspec location such
            as ``s3://…``: ``--cache-dir``; None: ``--no-cache``), shared by every worker.
        base_digest: the base folder's content digest.
        templates: variant → its chat template (the base's and this worker's variants').
        overrides: backend attributes set after it is made, so that a group decides as the whole run
            does (hf: ``mix_variants`` false when any adapter of the run is DoRA, ``batching`` static when any
            has a resized vocabulary).
        threads: torch's intra-op threads (the CPUs Ray gave the actor), so that two actors on two cores do
            not each start one thread per core.
    """

    def __init__(self, backend: str, opts: AuditOptions, base: BaseModel, variants: Sequence[Variant],
                 cache_store: CacheStore | None, base_digest: str, templates: dict[str, PromptTemplate],
                 overrides: dict[str, Any], threads: int) -> None:
        self.failed: dict[str, Any] | None = None
        self.threads = max(1, int(threads))
        self.names = [v.name for v in variants]
        #: what makes a base-only engine on another dtype (:meth:`replay`), and that engine once made
        self._make = (backend, opts, base, cache_store, base_digest, templates)
        self._replay: Any = None
        try:
            import torch

            torch.set_num_threads(self.threads)
            os.environ["OMP_NUM_THREADS"] = str(self.threads)
            from .. import BACKENDS

            for path in (base.path, *(v.folder for v in variants)):
                if not Path(path).is_dir():
                    raise AuditInputError(path, f"not found on Ray node {self._node_ip()}: --ray needs the base and "
                                                "the adapters at the same path on every node (a shared file system)")
            self.backend = BACKENDS[backend].create(opts, base, variants, GenerationCache(cache_store), base_digest)
            self.backend.show_progress = False
            self.backend.set_templates(templates)
            for name, value in overrides.items():
                setattr(self.backend, name, value)
        except Exception as e:  # reported by the first call (where()), with the one line the driver raises
            self.failed = _fault(e)

    @staticmethod
    def _node_ip() -> str:
        import ray

        return str(ray.util.get_node_ip_address())

    def where(self) -> dict[str, Any]:
        """Where the worker runs: node ip and id, pid, torch threads, the engine's device, the auditor's version
        (the driver refuses a worker of another version)."""
        if self.failed is not None:
            return {"error": self.failed}
        import ray

        from ...util.version import __version__

        return {"ok": {"node": self._node_ip(), "node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                       "threads": self.threads, "device": self.backend.device,
                       "batch_invariant": self.backend.batch_invariant, "auditor_version": __version__}}

    def generate(self, requests: list[Request], split_small: bool, use_cache: bool,
                 batch_size: int | str) -> dict[str, Any]:
        """The engine's ``generate`` (one Generation per request, in order) and :meth:`snapshot` after it.
        ``batch_size``: the driver's, which the noise-floor replay changes for one call."""
        try:
            self.backend.batch_size = batch_size
            gens = self.backend.generate(requests, split_small=split_small, use_cache=use_cache)
            return {"ok": (gens, self.snapshot())}
        except Exception as e:
            return {"error": _fault(e)}

    def replay(self, requests: list[Request], dtype: str) -> dict[str, Any]:
        """The base's answers to ``requests`` from a second engine of the base alone in ``dtype``, made on first
        use (``--noise-floor`` on a batch-invariant engine: :func:`auditor.analysis.noise_floor.noise_floor`);
        the cache's store is shared, its counters are not the run's."""
        try:
            if self._replay is None:
                from .. import base_on_dtype

                name, opts, base, store, digest, templates = self._make
                self._replay = base_on_dtype(name, opts, base, GenerationCache(store), digest, templates, dtype)
            return {"ok": self._replay.generate(requests)}
        except Exception as e:
            return {"error": _fault(e)}

    def call(self, method: str, *args: Any) -> dict[str, Any]:
        """``render`` or ``settings`` of the engine (what the driver's :class:`Backend` answers for it)."""
        try:
            if method not in ("render", "settings"):
                raise ValueError(f"not an engine method a driver may call: {method!r}")
            return {"ok": getattr(self.backend, method)(*args)}
        except Exception as e:
            return {"error": _fault(e)}

    def snapshot(self) -> dict[str, Any]:
        """The engine's counters so far (the driver sums them over the workers): ``stats``
        (:class:`~auditor.backends.GenerationStats` as a dict), ``cache`` (hit / miss / write counters),
        ``model_loaded``, ``setup_warnings`` and ``run_info`` (variant → the backend's ``run_info``)."""
        b = self.backend
        return {"stats": asdict(b.stats), "cache": {**b.cache.stats.as_dict(), "write_error": b.cache.stats.write_error},
                "model_loaded": b.model_loaded, "setup_warnings": list(b.setup_warnings),
                "run_info": {v: b.run_info(v) for v in self.names}}
